"""bagscope on Ray Data: per-topic summary rows, per-message timing rows and findings rows of
many bags, as ``map_batches`` steps with Arrow batches.

The input is a Dataset with a ``path`` column: bag paths (``ray.data.from_items([{"path": p},
...])``, folders, split sets and ``.db3`` included), or the rows of
``ray.data.read_binary_files(paths, include_paths=True)`` (``bytes`` and ``path``: single-file
``.mcap`` / ``.db3`` bags, read from the bytes without a local copy of the source). A bag that
cannot be read becomes a row whose ``error`` says why; the job goes on.

>>> import ray, bagscope.ray
>>> ds = bagscope.ray.read_bags(["bags/arm_wall", "bags/sensors"])
>>> ds.filter(lambda r: r["lag_p99_ns"] is not None).to_pandas()  # doctest: +SKIP

The summary rows equal ``bagscope batch``'s ``summary.parquet`` (plus ``path`` and ``error``).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Union

import pyarrow as pa

from ._rows import (
    FINDINGS_SCHEMA,
    SUMMARY_SCHEMA,
    TIMING_SCHEMA,
    findings_rows,
    map_batch,
    summary_rows,
    timing_rows,
)

__all__ = [
    "SUMMARY_SCHEMA",
    "TIMING_SCHEMA",
    "FINDINGS_SCHEMA",
    "summary_batch",
    "timing_batch",
    "findings_batch",
    "summaries",
    "timings",
    "findings",
    "read_bags",
]


def summary_batch(batch: Union[pa.Table, pa.RecordBatch]) -> pa.Table:
    """``map_batches`` function (``batch_format="pyarrow"``): each row's bag (``path``, and
    ``bytes`` when present) → its per-topic summary rows (:data:`SUMMARY_SCHEMA`)."""
    return map_batch(summary_rows, SUMMARY_SCHEMA, batch)


def timing_batch(batch: Union[pa.Table, pa.RecordBatch]) -> pa.Table:
    """``map_batches`` function: each row's bag → one row per message (:data:`TIMING_SCHEMA`)."""
    return map_batch(timing_rows, TIMING_SCHEMA, batch)


def findings_batch(batch: Union[pa.Table, pa.RecordBatch]) -> pa.Table:
    """``map_batches`` function: each row's bag → its ``clocks`` and ``check`` findings
    (:data:`FINDINGS_SCHEMA`)."""
    return map_batch(findings_rows, FINDINGS_SCHEMA, batch)


def _map(ds: Any, fn: Any, batch_size: int) -> Any:
    # One bag per task by default: bags differ in size by orders of magnitude, so small
    # batches keep the workers evenly loaded; each bag's own scan is parallel too.
    return ds.map_batches(fn, batch_format="pyarrow", batch_size=batch_size, zero_copy_batch=True)


def summaries(ds: Any, *, batch_size: int = 1) -> Any:
    """The Dataset of per-topic summary rows of the bags in ``ds`` (see the module docs)."""
    return _map(ds, summary_batch, batch_size)


def timings(ds: Any, *, batch_size: int = 1) -> Any:
    """The Dataset of per-message timing rows of the bags in ``ds``."""
    return _map(ds, timing_batch, batch_size)


def findings(ds: Any, *, batch_size: int = 1) -> Any:
    """The Dataset of findings rows of the bags in ``ds``."""
    return _map(ds, findings_batch, batch_size)


def read_bags(
    paths: Iterable[Union[str, "os.PathLike[str]"]],
    *,
    what: str = "summary",
    binary: bool = False,
    batch_size: int = 1,
    bags_per_block: int = 16,
) -> Any:
    """A Dataset of the bags at ``paths``: ``what`` is ``"summary"``, ``"timing"`` or
    ``"findings"``. With ``binary``, the files are read by ``ray.data.read_binary_files``
    (single-file bags) and analysed from their bytes; else each worker opens its paths.

    The paths go into blocks of about ``bags_per_block`` bags: a Ray task per block, so the
    task overhead (tens of milliseconds) is shared by the block's bags; Ray's default, a block
    per item, made small bags several times slower than ``bagscope batch``."""
    import ray.data

    fn = {"summary": summaries, "timing": timings, "findings": findings}.get(what)
    if fn is None:
        raise ValueError(f"what must be 'summary', 'timing' or 'findings', got {what!r}")
    if bags_per_block < 1:
        raise ValueError(f"bags_per_block must be at least 1, got {bags_per_block}")
    ps = [os.fspath(p) for p in paths]
    blocks = max(1, -(-len(ps) // bags_per_block))
    if binary:
        ds = ray.data.read_binary_files(ps, include_paths=True, override_num_blocks=blocks)
    else:
        ds = ray.data.from_items([{"path": p} for p in ps], override_num_blocks=blocks)
    return fn(ds, batch_size=batch_size)
