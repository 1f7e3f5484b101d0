"""bagscope.ray on a local Ray cluster: over 100 bags through paths and through
read_binary_files, rows equal to what `bagscope batch` writes (read back with DuckDB)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bagscope
from bagscope import _rows
from conftest import ROOT, cli_json

ray = pytest.importorskip("ray")
import bagscope.ray  # noqa: E402  (after the skip: needs ray)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=300 << 20)
    yield
    ray.shutdown()


def collect(ds) -> pa.Table:
    return pa.concat_tables([ray.get(r) for r in ds.to_arrow_refs()])


def summary_rows(tbl: pa.Table) -> list:
    ok = tbl.filter(pc.is_null(tbl.column("error"))).select(bagscope.summary_columns())
    return duckdb.sql("select * from ok order by bag, topic, type").fetchall()


def errors(tbl: pa.Table) -> dict:
    bad = tbl.filter(pc.invert(pc.is_null(tbl.column("error"))))
    return {r["bag"]: r["error"] for r in bad.to_pylist()}


def test_paths_equal_batch(cluster, fleet) -> None:
    bags, files, want, status = fleet
    assert len(bags) >= 100
    tbl = collect(bagscope.ray.summaries(ray.data.from_items([{"path": str(p)} for p in bags])))
    assert tbl.schema == _rows.SUMMARY_SCHEMA
    got = summary_rows(tbl)
    assert got == want
    failed = {n for n, s in status.items() if s == "failed"}
    errs = errors(tbl)
    assert set(errs) == failed == {"junk"}
    assert "CorruptBag" in errs["junk"] and "junk.mcap" in errs["junk"]
    names = {r[0] for r in got}
    assert {"cut_arm_wall", "talk.db3", "arm_wall", "s15_sim_reset"} <= names
    assert any(r[-1] for r in got if r[0] == "cut_arm_wall"), "the truncated bag lost data"


def test_binary_files_equal_batch(cluster, fleet) -> None:
    bags, files, want, status = fleet
    assert len(files) >= 100
    ds = ray.data.read_binary_files([str(p) for p in files], include_paths=True)
    tbl = collect(bagscope.ray.summaries(ds))
    names = {bagscope.batch_name(str(p)) for p in files}
    assert summary_rows(tbl) == [r for r in want if r[0] in names]
    assert set(errors(tbl)) == {"junk"}


def test_read_bags_timing_and_findings(cluster, fleet) -> None:
    bags, files, want, status = fleet
    some = [ROOT / "bags" / "arm_split", ROOT / "bags" / "sensors", files[0]]
    t = collect(bagscope.ray.read_bags(some, what="timing"))
    assert t.schema == _rows.TIMING_SCHEMA
    counts = dict(duckdb.sql("select bag, count(*) from t group by bag").fetchall())
    assert len(counts) == 3
    for p in some:
        assert counts[bagscope.batch_name(str(p))] == cli_json("info", str(p))["message_count"]
    f = collect(bagscope.ray.read_bags([ROOT / "bags" / "arm_split"], what="findings"))
    want_codes = [x["code"] for x in cli_json("clocks", str(ROOT / "bags" / "arm_split"))["verdicts"]["findings"]]
    assert [r["code"] for r in f.to_pylist() if r["source"] == "clocks"] == want_codes
    b = collect(bagscope.ray.read_bags([files[0]], binary=True))
    assert b.num_rows > 0 and b.schema == _rows.SUMMARY_SCHEMA
