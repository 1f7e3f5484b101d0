"""Tables over the Arrow PyCapsule stream interface, read by pyarrow, polars and DuckDB
without copying, equal to what `export` and `batch` write."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bagscope
from bagscope._rows import _plain
from conftest import ROOT, cli_json, run_cli, shared
from test_bytes_threads import make_db3

SENSORS = ROOT / "bags" / "sensors"


def plain(t: pa.Table) -> pa.Table:
    """View and dictionary string columns as plain strings, for comparing values."""
    return t.cast(pa.schema([pa.field(f.name, _plain(f.type)) for f in t.schema]))


def test_timing_is_the_timing_export_plus_lag(tmp: Path) -> None:
    t = bagscope.open(SENSORS).timing()
    assert isinstance(t, bagscope.Table)
    got = pa.table(t)
    assert got.num_rows == t.num_rows == len(t) == 400 + 400 + 2000 + 200
    assert got.column_names == t.column_names
    assert got.column_names[-1] == "lag_ns"
    out = tmp / "timing.parquet"
    run_cli("export", str(SENSORS), "--timing-only", "-o", str(out))
    want = pq.read_table(out)
    assert plain(got.drop_columns(["lag_ns"])).equals(plain(want))
    lag = got.column("lag_ns").to_pylist()
    log = got.column("log_time_ns").to_pylist()
    stamp = got.column("header_stamp_ns").to_pylist()
    assert lag == [None if s is None else l - s for l, s in zip(log, stamp)]
    assert t.report["tables"][0]["rows"] == got.num_rows
    assert t.data_loss is False


def test_timing_equals_the_export_on_every_kind_of_bag(tmp: Path) -> None:
    """The table and its report against `export --timing-only` (Parquet and --json): shipped
    bags, TF with several transforms per message, the benchmark bag's mix, a truncated file, a
    .db3 file, and the shared bags when present."""
    bags = [p for p in sorted((ROOT / "bags").iterdir()) if p.is_dir()]
    for sc in ["arm_tf", "sensors_tf"]:
        run_cli("synth", sc, "-o", str(tmp / "synth"), "--duration", "6")
        bags.append(tmp / "synth" / sc)
    run_cli("synth", "perf", "-o", str(tmp / "perf"), "--messages", "30000")
    bags.append(tmp / "perf" / "perf" / "perf.mcap")
    whole = (ROOT / "bags" / "arm_wall" / "arm_wall.mcap").read_bytes()
    (tmp / "cut.mcap").write_bytes(whole[: len(whole) // 2])
    bags.append(tmp / "cut.mcap")
    bags.append(make_db3(tmp / "talk.db3"))
    s = shared()
    if s is not None:
        bags += sorted(p for p in (s / "bags").iterdir() if p.suffix == ".mcap")
    tf_rows = 0
    for i, bag in enumerate(bags):
        t = bagscope.open(bag).timing()
        got = pa.table(t)
        out = tmp / f"timing{i}.parquet"
        report = cli_json("export", str(bag), "--timing-only", "-o", str(out))
        want = pq.read_table(out)
        assert plain(got.drop_columns(["lag_ns"])).equals(plain(want)), bag
        assert t.report["warnings"] == report["warnings"], bag
        for k in ["topics", "rows", "columns"]:
            assert t.report["tables"][0][k] == report["tables"][0][k], (bag, k)
        assert t.data_loss == any(w["data_loss"] for w in report["warnings"])
        tf_rows += sum(1 for x in got.column("transform_index").to_pylist() if x is not None and x > 0)
    # Messages with several transforms were among them (one row each).
    assert tf_rows > 0


def test_timing_of_some_topics() -> None:
    t = pa.table(bagscope.open(SENSORS).timing(topics=["/imu/data"]))
    assert set(t.column("topic").to_pylist()) == {"/imu/data"}
    assert t.num_rows == 2000


def test_tables_are_not_copied() -> None:
    t = bagscope.open(SENSORS).timing()
    a = pa.table(t).column("log_time_ns").chunks[0].buffers()[1].address
    b = pa.table(t).column("log_time_ns").chunks[0].buffers()[1].address
    # Two imports see the same buffer: the table's own memory, not a copy per consumer.
    assert a == b
    p = pl.from_arrow(pa.table(t))
    assert p.height == t.num_rows


def test_polars_reads_tables() -> None:
    bag = bagscope.open(SENSORS)
    t = bag.timing()
    df = pl.DataFrame(t)
    assert df.height == t.num_rows
    assert df.columns == t.column_names
    q = (
        df.group_by("topic")
        .agg(pl.col("lag_ns").quantile(0.5).alias("p50"))
        .sort("topic")
    )
    assert q.height == 4
    assert pl.from_arrow(pa.table(t)).equals(df)


def test_duckdb_reads_tables() -> None:
    t = bagscope.open(SENSORS).timing()
    rows = duckdb.sql("select topic, count(*) as n from t group by topic order by topic").fetchall()
    assert sum(n for _, n in rows) == t.num_rows
    assert dict(rows)["/imu/data"] == 2000


def test_messages_equal_the_export(tmp: Path) -> None:
    path = ROOT / "bags" / "arm_wall"
    bag = bagscope.open(path)
    t = bag.messages("/joint_states")
    out = tmp / "js"
    run_cli("export", str(path), "--topics", "/joint_states", "-o", str(out))
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 1
    assert plain(pa.table(t)).equals(plain(pq.read_table(files[0])))
    some = pa.table(bag.messages("/joint_states", fields=["name", "position"]))
    assert "position" in some.column_names and "velocity" not in some.column_names
    with pytest.raises(bagscope.UnknownTopic):
        bag.messages("/nope")


def test_summary_equals_batch(tmp: Path) -> None:
    out = tmp / "batch"
    bags = [p for p in sorted((ROOT / "bags").iterdir()) if p.is_dir()]
    # Each bag given itself: batch names it by its folder name, as Bag.summary() does.
    run_cli("batch", *map(str, bags), "-o", str(out))
    want = duckdb.sql(
        f"select * from read_parquet('{out / 'summary.parquet'}') order by bag, topic, type"
    ).fetchall()
    tables = [pa.table(bagscope.open(p).summary()) for p in bags]
    got = pa.concat_tables([plain(t) for t in tables])
    assert got.column_names == bagscope.summary_columns()
    rows = duckdb.sql("select * from got order by bag, topic, type").fetchall()
    assert rows == want
    assert len(rows) > 20


def test_empty_tables() -> None:
    e = pa.table(bagscope.empty_summary())
    assert e.num_rows == 0 and e.column_names == bagscope.summary_columns()
