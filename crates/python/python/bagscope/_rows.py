"""Rows of many bags, the same on every engine: one bag (a path, or a path and its bytes) in,
an Arrow table with a fixed schema out. A bag that fails becomes one row with ``error`` set
(its other columns null), never an exception. :mod:`bagscope.ray` and :mod:`bagscope.spark`
map these over their batches.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, List, Optional, Tuple

import pyarrow as pa

from . import _bagscope
from ._errors import BagError

#: Columns of ``bagscope batch``'s ``summary.parquet``, in order.
SUMMARY_COLUMNS: List[str] = list(_bagscope.summary_columns())


def _plain(t: pa.DataType) -> pa.DataType:
    """Arrow's view and large string types as plain ``string`` (what Spark and most writers
    take); dictionaries as their values."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if t in (pa.string_view(), pa.large_string()):
        return pa.string()
    return t


_summary_types = {f.name: _plain(f.type) for f in pa.table(_bagscope.empty_summary()).schema}

#: Schema of the summary rows: ``summary.parquet``'s columns, then ``path`` (the input as given)
#: and ``error`` (why the bag could not be read; null for rows of bags that were read).
SUMMARY_SCHEMA = pa.schema(
    [pa.field(c, _summary_types[c]) for c in SUMMARY_COLUMNS]
    + [pa.field("path", pa.string()), pa.field("error", pa.string())]
)

#: Schema of the timing rows: one per message, the columns of ``export --timing-only`` (with
#: ``bag``) plus ``lag_ns`` (log time − header stamp), ``path`` and ``error``.
TIMING_SCHEMA = pa.schema(
    [
        ("bag", pa.string()),
        ("topic", pa.string()),
        ("type", pa.string()),
        ("log_time_ns", pa.int64()),
        ("publish_time_ns", pa.int64()),
        ("header_stamp_ns", pa.int64()),
        ("clock_axis", pa.string()),
        ("size_bytes", pa.int64()),
        ("lag_ns", pa.int64()),
        ("path", pa.string()),
        ("error", pa.string()),
    ]
)

#: Schema of the findings rows: one per finding of ``clocks`` and of ``check`` (``source``),
#: as in their ``verdicts.findings``; a bag without findings has no row, one that fails has
#: one with ``error``.
FINDINGS_SCHEMA = pa.schema(
    [
        ("bag", pa.string()),
        ("source", pa.string()),
        ("code", pa.string()),
        ("severity", pa.string()),
        ("topics", pa.list_(pa.string())),
        ("count", pa.int64()),
        ("message", pa.string()),
        ("data_loss", pa.bool_()),
        ("path", pa.string()),
        ("error", pa.string()),
    ]
)


def local_path(path: str) -> str:
    """A local path from a URI engines give (``file:/a/b``, ``file:///a/b``); other strings
    unchanged."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


def open_bag(path: str, content: Optional[Any] = None) -> "_bagscope.Bag":
    """The bag at ``path``, or held in ``content`` (bytes of one ``.mcap`` / ``.db3`` file named
    like ``path``'s last component)."""
    p = local_path(path)
    if content is not None:
        return _bagscope.Bag.from_bytes(content, name=os.path.basename(p.rstrip("/")) or "bag.mcap")
    return _bagscope.Bag(p)


def _error_row(schema: pa.Schema, bag: str, path: str, error: str) -> pa.Table:
    cols = {f.name: pa.nulls(1, f.type) for f in schema}
    cols["bag"] = pa.array([bag], pa.string())
    cols["path"] = pa.array([path], pa.string())
    cols["error"] = pa.array([error], pa.string())
    return pa.table([cols[f.name] for f in schema], schema=schema)


def _describe(e: BaseException) -> str:
    if isinstance(e, BagError):
        return f"{type(e).__name__}: {e}"
    return f"{type(e).__name__}: {e}"


def _with(table: pa.Table, schema: pa.Schema, path: str) -> pa.Table:
    n = table.num_rows
    cols = []
    for f in schema:
        if f.name == "path":
            cols.append(pa.array([path] * n, pa.string()))
        elif f.name == "error":
            cols.append(pa.nulls(n, pa.string()))
        else:
            cols.append(table.column(f.name).cast(f.type))
    return pa.table(cols, schema=schema)


def summary_rows(path: str, content: Optional[Any] = None, name: Optional[str] = None) -> pa.Table:
    """The bag's rows of ``summary.parquet`` (:data:`SUMMARY_SCHEMA`); ``name`` fills ``bag``
    (default: the name ``batch`` gives it, :func:`bagscope.batch_name`)."""
    bag_name = name or _bagscope.batch_name(local_path(path))
    try:
        bag = open_bag(path, content)
        t = pa.table(bag.summary(name=bag_name))
        return _with(t, SUMMARY_SCHEMA, path)
    except Exception as e:  # a failed bag is a row, never a failed job
        return _error_row(SUMMARY_SCHEMA, bag_name, path, _describe(e))


def timing_rows(path: str, content: Optional[Any] = None, name: Optional[str] = None) -> pa.Table:
    """One row per message of the bag (:data:`TIMING_SCHEMA`)."""
    bag_name = name or _bagscope.batch_name(local_path(path))
    try:
        bag = open_bag(path, content)
        t = pa.table(bag.timing())
        t = t.set_column(t.schema.get_field_index("bag"), "bag", pa.array([bag_name] * t.num_rows, pa.string()))
        return _with(t, TIMING_SCHEMA, path)
    except Exception as e:
        return _error_row(TIMING_SCHEMA, bag_name, path, _describe(e))


def findings_rows(path: str, content: Optional[Any] = None, name: Optional[str] = None) -> pa.Table:
    """The bag's findings of ``clocks`` and ``check`` (:data:`FINDINGS_SCHEMA`)."""
    bag_name = name or _bagscope.batch_name(local_path(path))
    try:
        bag = open_bag(path, content)
        rows = []
        for source, report in (("clocks", bag.clocks()), ("check", bag.check())):
            v = report["verdicts"]
            for f in v["findings"]:
                rows.append(
                    {
                        "bag": bag_name,
                        "source": source,
                        "code": f["code"],
                        "severity": f["severity"],
                        "topics": list(f["topics"]),
                        "count": f["count"],
                        "message": f["message"],
                        "data_loss": v["data_loss"],
                        "path": path,
                        "error": None,
                    }
                )
        return pa.Table.from_pylist(rows, schema=FINDINGS_SCHEMA)
    except Exception as e:
        return _error_row(FINDINGS_SCHEMA, bag_name, path, _describe(e))


def _inputs(batch: Any) -> Iterable[Tuple[str, Optional[Any]]]:
    """(path, content) of each row of an Arrow batch with a ``path`` column and optionally the
    file's bytes in ``bytes`` (Ray's ``read_binary_files``) or ``content`` (Spark's
    ``binaryFile``)."""
    names = batch.schema.names
    if "path" not in names:
        raise ValueError(f"a column 'path' is needed (the batch has {names})")
    paths = batch.column(names.index("path")).to_pylist()
    data_col = next((c for c in ("bytes", "content") if c in names), None)
    if data_col is None:
        return [(p, None) for p in paths]
    col = batch.column(names.index(data_col))
    # Each value as a buffer over the batch's own memory (no copy into Python bytes).
    return [(p, _buffer(col, i)) for i, p in enumerate(paths)]


def _buffer(col: Any, i: int) -> Any:
    v = col[i]
    if not v.is_valid:
        return None
    try:
        return v.as_buffer()
    except AttributeError:
        return v.as_py()


def map_batch(fn: Callable[..., pa.Table], schema: pa.Schema, batch: Any) -> pa.Table:
    """``fn`` over every row of ``batch``, the tables concatenated (:data:`SUMMARY_SCHEMA` and
    the others)."""
    if isinstance(batch, pa.RecordBatch):
        batch = pa.Table.from_batches([batch])
    tables = [fn(p, c) for p, c in _inputs(batch)]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)
