"""bagscope from Python: timing answers for ROS 2 bags (rosbag2 folders, split sets, ``.mcap``,
``.db3``) without a ROS install.

>>> import bagscope
>>> bag = bagscope.open("bags/arm_split")
>>> bag.clocks()["split"]
True

* :func:`open` / :meth:`Bag.from_bytes` give a :class:`Bag`; its methods ``info``, ``clocks``,
  ``check``, ``sync``, ``recommend`` and ``match`` return the dicts the CLI prints with
  ``--json`` (same keys, same values), warnings and findings included.
* ``timing``, ``messages`` and ``summary`` return a :class:`Table`, read without copying by
  ``pyarrow.table(t)``, ``polars.from_arrow(t)`` or ``duckdb.sql("... from t")``;
  ``timing_batches`` the timing table as a stream of record batches (:class:`TimingBatches`).
* Failures are exceptions under :class:`BagError`; damage met while reading is a warning with
  ``data_loss`` in the result.
* :mod:`bagscope.ray` and :mod:`bagscope.spark` run the same over many bags on a cluster.
"""

from __future__ import annotations

import os
from typing import Union

from ._bagscope import (
    Bag,
    Table,
    TimingBatches,
    __version__,
    batch_name,
    empty_summary,
    summary_columns,
)
from ._errors import (
    AccessDenied,
    AnalysisError,
    BagError,
    BagNotFound,
    CorruptBag,
    InvalidParameter,
    RemoteError,
    UnknownTopic,
    UnsupportedBag,
    UsageError,
)


def open(path: Union[str, "os.PathLike[str]"]) -> Bag:  # noqa: A001 (mirrors builtins.open)
    """Opens the bag at ``path``: a rosbag2 folder (mcap or sqlite3 storage, split files), a
    ``.mcap`` or ``.db3`` file, or a file-compressed ``.mcap.zstd`` / ``.db3.zstd``; or the same
    in object storage, ``s3://bucket/key``, ``gs://…``, ``az://container/key``, ``https://…``
    (credentials from the standard environment variables; only the bytes each call needs
    are read).

    Raises :class:`BagNotFound`, :class:`CorruptBag`, :class:`UnsupportedBag` (all
    :class:`BagError`) naming the file.
    """
    return Bag(os.fspath(path))


__all__ = [
    "open",
    "Bag",
    "Table",
    "TimingBatches",
    "batch_name",
    "summary_columns",
    "empty_summary",
    "BagError",
    "BagNotFound",
    "CorruptBag",
    "UnsupportedBag",
    "UsageError",
    "InvalidParameter",
    "UnknownTopic",
    "AnalysisError",
    "RemoteError",
    "AccessDenied",
    "__version__",
]
