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


def batches_equal_timing(bag: Path, rows_per_batch: int, topics=None) -> int:
    """`timing_batches` read to its end equals `timing()`, row for row (string columns
    compared as strings: each batch carries the frame names given so far); returns the rows."""
    b = bagscope.open(bag)
    whole = plain(pa.table(b.timing(topics=topics)))
    stream = b.timing_batches(rows_per_batch=rows_per_batch, topics=topics)
    reader = pa.RecordBatchReader.from_stream(stream)
    batches = list(reader)
    assert all(x.num_rows == rows_per_batch for x in batches[:-1]), bag
    assert all(0 < x.num_rows <= rows_per_batch for x in batches), bag
    got = plain(pa.Table.from_batches(batches, schema=reader.schema))
    assert got.column_names == whole.column_names == stream.column_names, bag
    assert got.equals(whole), bag
    t = b.timing(topics=topics)
    assert stream.report["warnings"] == t.report["warnings"], bag
    assert stream.report["tables"][0]["rows"] == t.num_rows, bag
    assert stream.data_loss == t.data_loss, bag
    return got.num_rows


def test_timing_batches_equal_timing_on_every_kind_of_bag(tmp: Path) -> None:
    """The stream of batches against the whole table: every shipped bag (and the shared bags
    when present), TF with several transforms per message, the benchmark bag's mix, overlapping
    chunks of two files recorded at once, a truncated file, a .db3 file; batch sizes that cut
    TF messages' rows apart."""
    bags = [p for p in sorted((ROOT / "bags").iterdir()) if p.is_dir()]
    for sc in ["arm_tf", "sensors_tf"]:
        run_cli("synth", sc, "-o", str(tmp / "synth"), "--duration", "6")
        bags.append(tmp / "synth" / sc)
    run_cli("synth", "perf", "-o", str(tmp / "perf"), "--messages", "30000")
    bags.append(tmp / "perf" / "perf" / "perf.mcap")
    two = tmp / "two"
    two.mkdir()
    for sc in ["arm_wall", "sensors"]:
        (two / f"{sc}.mcap").write_bytes((ROOT / "bags" / sc / f"{sc}.mcap").read_bytes())
    bags.append(two)
    whole = (ROOT / "bags" / "arm_wall" / "arm_wall.mcap").read_bytes()
    (tmp / "cut.mcap").write_bytes(whole[: len(whole) // 2])
    bags.append(tmp / "cut.mcap")
    bags.append(make_db3(tmp / "talk.db3"))
    s = shared()
    if s is not None:
        bags += sorted(p for p in (s / "bags").iterdir() if p.suffix == ".mcap" or p.is_dir())
    for bag in bags:
        for n in [65_536, 997, 3]:
            if n == 3 and bag.stat().st_size > 2e6 and not bag.is_dir():
                continue
            assert batches_equal_timing(bag, n) > 0, bag
    assert batches_equal_timing(SENSORS, 100, topics=["/imu/data", "/lidar/points"]) == 2200


def test_timing_batches_are_read_by_polars_and_duckdb_and_stop_when_dropped() -> None:
    b = bagscope.open(SENSORS)
    stream = b.timing_batches(rows_per_batch=500)
    assert pl.DataFrame(stream).height == 3000
    assert duckdb.sql("select count(*) from stream").fetchall()[0][0] == 3000
    # Read again: each stream reads the bag anew.
    reader = pa.RecordBatchReader.from_stream(stream)
    first = reader.read_next_batch()
    assert first.num_rows == 500
    del reader
    with pytest.raises(bagscope.InvalidParameter):
        b.timing_batches(rows_per_batch=0)
    assert b.timing_batches().rows_per_batch == 65_536


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
