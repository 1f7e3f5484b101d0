"""bagscope.spark with PySpark in local mode: mapInArrow over the same bags, rows equal to
`bagscope batch`'s."""

from __future__ import annotations

import duckdb
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bagscope

pyspark = pytest.importorskip("pyspark")
import bagscope.spark  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # The Python workers run this interpreter (the venv with bagscope installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    s = (
        SparkSession.builder.master("local[2]")
        .appName("bagscope-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    yield s
    s.stop()


def rows_of(df) -> tuple:
    t = pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=bagscope.spark.SUMMARY_SCHEMA_ARROW)
    ok = t.filter(pc.is_null(t.column("error"))).select(bagscope.summary_columns())
    bad = {r["bag"]: r["error"] for r in t.to_pylist() if r["error"] is not None}
    return duckdb.sql("select * from ok order by bag, topic, type").fetchall(), bad


def test_paths_equal_batch(spark, fleet) -> None:
    bags, files, want, status = fleet
    df = spark.createDataFrame([(str(p),) for p in bags], "path string").repartition(4)
    got, bad = rows_of(df.mapInArrow(bagscope.spark.map_summary, bagscope.spark.summary_schema()))
    assert got == want
    assert set(bad) == {"junk"}


def test_binary_files_equal_batch(spark, fleet) -> None:
    bags, files, want, status = fleet
    df = spark.read.format("binaryFile").load([str(p) for p in files])
    got, bad = rows_of(df.mapInArrow(bagscope.spark.map_summary, bagscope.spark.summary_schema()))
    names = {bagscope.batch_name(str(p)) for p in files}
    assert got == [r for r in want if r[0] in names]
    assert set(bad) == {"junk"}
