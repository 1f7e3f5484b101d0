"""The exceptions bagscope raises: one class per kind of failure, all under :class:`BagError`.

Each carries ``path``, the bag the call was about (``None`` when the failure is about an
argument alone), and its message names the file.
"""

from __future__ import annotations

from typing import Optional


class BagError(Exception):
    """Base class of every bagscope error; ``path`` is the bag concerned, if any."""

    path: Optional[str] = None


class BagNotFound(BagError, FileNotFoundError):
    """The path does not exist, or holds no bag file (a folder without ``.mcap``/``.db3``)."""


class CorruptBag(BagError):
    """The file is not a bag or is too damaged to open (bad magic, empty, cut inside the
    header, invalid ``metadata.yaml``, unreadable sqlite3). Damage found *while reading* a bag
    that opened is not an exception: it is a warning in the result, with ``data_loss``."""


class UnsupportedBag(BagError):
    """A storage plugin bagscope does not read, or a path that is not a regular file."""


class UsageError(BagError, ValueError):
    """The request cannot be answered as asked (options, topic names); the message says what
    to change. The CLI exits 2 on these."""


class InvalidParameter(UsageError):
    """A parameter that does not apply, is missing, or is out of range."""


class UnknownTopic(UsageError):
    """A topic the bag does not have; the message lists the topics it has."""


class AnalysisError(BagError):
    """The bag holds nothing the analysis can work on (no messages on a topic, no pairs to
    match); the message says what is missing."""


class RemoteError(BagError):
    """A bag in object storage could not be read: the store kept failing after its retries,
    the object was replaced while it was read, or it is too large to fetch whole. The message
    names the URL, never a credential."""


class AccessDenied(RemoteError, PermissionError):
    """The object store refused the credentials (the message names the environment variables
    that were set, never their values)."""


__all__ = [
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
]
