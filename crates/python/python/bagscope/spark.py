"""bagscope on Spark: a ``DataFrame.mapInArrow`` step from bags to the per-topic rows of
``bagscope batch``'s ``summary.parquet`` (plus ``path`` and ``error``).

The input DataFrame has a ``path`` column (bag paths reachable from the executors), or is
``spark.read.format("binaryFile").load(...)`` (``path`` and ``content``: single-file ``.mcap``
/ ``.db3`` bags read from their bytes)::

    import bagscope.spark
    paths = spark.createDataFrame([(p,) for p in bag_paths], "path string")
    rows = paths.mapInArrow(bagscope.spark.map_summary, bagscope.spark.summary_schema())

A bag that cannot be read becomes one row whose ``error`` says why.
"""

from __future__ import annotations

from typing import Any, Iterator

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
    "map_summary",
    "map_timing",
    "map_findings",
    "summary_schema",
    "timing_schema",
    "findings_schema",
    "SUMMARY_DDL",
    "SUMMARY_SCHEMA_ARROW",
    "TIMING_DDL",
    "FINDINGS_DDL",
]


def _ddl_type(t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_list(t):
        return f"array<{_ddl_type(t.value_type)}>"
    raise TypeError(f"no Spark type for {t}")


def _ddl(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name}` {_ddl_type(f.type)}" for f in schema)


#: The Arrow schema of :func:`map_summary`'s rows (``bagscope.ray.SUMMARY_SCHEMA``).
SUMMARY_SCHEMA_ARROW: pa.Schema = SUMMARY_SCHEMA
#: The Spark schema (DDL) of :func:`map_summary`'s rows.
SUMMARY_DDL: str = _ddl(SUMMARY_SCHEMA)
#: The Spark schema (DDL) of :func:`map_timing`'s rows.
TIMING_DDL: str = _ddl(TIMING_SCHEMA)
#: The Spark schema (DDL) of :func:`map_findings`'s rows.
FINDINGS_DDL: str = _ddl(FINDINGS_SCHEMA)


def _schema(ddl: str) -> Any:
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)


def summary_schema() -> Any:
    """The ``pyspark.sql.types.StructType`` of :func:`map_summary`'s rows."""
    return _schema(SUMMARY_DDL)


def timing_schema() -> Any:
    """The ``StructType`` of :func:`map_timing`'s rows."""
    return _schema(TIMING_DDL)


def findings_schema() -> Any:
    """The ``StructType`` of :func:`map_findings`'s rows."""
    return _schema(FINDINGS_DDL)


def _each(batches: Iterator[pa.RecordBatch], fn: Any, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for b in batches:
        yield from map_batch(fn, schema, b).to_batches()


def map_summary(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``mapInArrow(map_summary, summary_schema())``: bags in, per-topic summary rows out."""
    return _each(batches, summary_rows, SUMMARY_SCHEMA)


def map_timing(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``mapInArrow(map_timing, timing_schema())``: bags in, one row per message out."""
    return _each(batches, timing_rows, TIMING_SCHEMA)


def map_findings(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``mapInArrow(map_findings, findings_schema())``: bags in, findings rows out."""
    return _each(batches, findings_rows, FINDINGS_SCHEMA)
