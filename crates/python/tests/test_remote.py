"""Bags in object storage from Python: ``bagscope.open("s3://…")``, and ``bagscope.ray`` /
``bagscope.spark`` over ``s3://`` paths (each task reads its own byte ranges), against a real
S3 API: ``moto_server`` (target/s3-venv, made by .ci/run) on 127.0.0.1. Every answer equals
the one for the local copy."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import bagscope
from conftest import ROOT

BAGS = sorted(p for p in (ROOT / "bags").iterdir() if p.is_dir())
SECRET = "bagscope-test-secret-value-0123456789"
# moto accepts any signature but refuses anonymous overwrites: the uploads carry one.
AUTH = "AWS4-HMAC-SHA256 Credential=bagscope-test-key/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"


def moto_server() -> Path:
    p = Path(os.environ.get("BAGSCOPE_MOTO_SERVER", ROOT / "target" / "s3-venv" / "bin" / "moto_server"))
    if not p.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"CI is set but {p} is missing (.ci/run installs moto[server])")
        pytest.skip(f"{p} not found: the object-storage tests need moto[server] (.ci/run installs it)")
    return p


def put(port: int, key: str, data: bytes) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{key}",
        data=data,
        method="PUT",
        headers={"Authorization": AUTH, "Content-Type": "application/octet-stream"},
    )
    with urllib.request.urlopen(req) as r:
        assert r.status == 200


@pytest.fixture(scope="module")
def s3():
    program = moto_server()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(program), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t0 = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.time() - t0 < 60, "moto_server did not start"
            time.sleep(0.1)
    env = {
        "AWS_ACCESS_KEY_ID": "bagscope-test-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    put(port, "fleet", b"")
    for bag in BAGS:
        for f in sorted(bag.iterdir()):
            put(port, f"fleet/bags/{bag.name}/{f.name}", f.read_bytes())
    db3 = ROOT / "tests" / "data" / "db3" / "arm_real"
    for f in sorted(db3.iterdir()):
        if f.is_file():
            put(port, f"fleet/db3/arm_real/{f.name}", f.read_bytes())
    yield port
    proc.kill()
    proc.wait()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def same(local_value, remote_value, local: Path, url: str) -> None:
    """Equal once the bag's names are one (`BAG`); warnings that only say an object was
    fetched whole are left out."""

    def norm(v, names):
        s = json.dumps(v, sort_keys=True)
        for n in names:
            s = s.replace(json.dumps(n), json.dumps("BAG"))
        for n in names:
            s = s.replace(n.rstrip("/"), "BAG")
        d = json.loads(s)

        def strip(x):
            if isinstance(x, list):
                return [strip(y) for y in x if not (isinstance(y, dict) and y.get("code") == "remote_fetched_whole")]
            if isinstance(x, dict):
                return {k: strip(y) for k, y in x.items()}
            return x

        return strip(d)

    names = [url, str(local)]
    assert norm(local_value, names) == norm(remote_value, names)


def timing(bag) -> pa.Table:
    t = pa.table(bag.timing())
    return t.drop_columns([c for c in ("bag", "path") if c in t.column_names])


@pytest.mark.parametrize("bag", BAGS, ids=[b.name for b in BAGS])
def test_open_s3_equals_local(s3, bag: Path) -> None:
    local = bagscope.open(bag)
    for url in (f"s3://fleet/bags/{bag.name}/", f"s3://fleet/bags/{bag.name}/{bag.name}.mcap"):
        remote = bagscope.open(url)
        here = bag if url.endswith("/") else bag / f"{bag.name}.mcap"
        loc = local if url.endswith("/") else bagscope.open(here)
        same(loc.info(), remote.info(), here, url)
        same(loc.clocks(), remote.clocks(), here, url)
        same(loc.check(), remote.check(), here, url)
        assert timing(loc).equals(timing(remote))


def test_db3_and_errors(s3) -> None:
    db3 = ROOT / "tests" / "data" / "db3" / "arm_real"
    remote = bagscope.open("s3://fleet/db3/arm_real/").clocks()
    same(bagscope.open(db3).clocks(), remote, db3, "s3://fleet/db3/arm_real/")
    assert any(w["code"] == "remote_fetched_whole" for w in remote["warnings"])
    with pytest.raises(bagscope.BagNotFound) as e:
        bagscope.open("s3://fleet/no/such.mcap")
    assert "s3://fleet/no/such.mcap" in str(e.value) and SECRET not in str(e.value)
    with pytest.raises(bagscope.BagNotFound) as e:
        bagscope.open("s3://no-such-bucket/x.mcap")
    assert "no-such-bucket" in str(e.value)
    with pytest.raises(bagscope.InvalidParameter):
        bagscope.open("s3://user:pw@fleet/x.mcap")


def test_ray_over_s3_equals_local(s3) -> None:
    ray = pytest.importorskip("ray")
    import bagscope.ray  # noqa: F401

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=300 << 20,
        runtime_env={"env_vars": {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}},
    )
    try:
        def rows(paths):
            ds = bagscope.ray.read_bags(paths)
            t = pa.concat_tables([ray.get(r) for r in ds.to_arrow_refs()])
            assert t.filter(pc.invert(pc.is_null(t.column("error")))).num_rows == 0, t.column("error")
            return sorted(t.drop_columns(["path"]).to_pylist(), key=lambda r: (r["bag"], r["topic"] or "", r["type"] or ""))

        local = rows([str(b) for b in BAGS])
        remote = rows([f"s3://fleet/bags/{b.name}/" for b in BAGS])
        assert local == remote
    finally:
        ray.shutdown()


def test_spark_over_s3_equals_local(s3) -> None:
    pytest.importorskip("pyspark")
    import bagscope.spark
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bagscope-test-s3")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    # The Python workers' environment (a JVM started earlier in this process keeps its own).
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        spark = spark.config(f"spark.executorEnv.{k}", os.environ[k])
    spark = spark.getOrCreate()
    try:
        def rows(paths):
            df = spark.createDataFrame([(p,) for p in paths], "path string").repartition(2)
            out = df.mapInArrow(bagscope.spark.map_summary, bagscope.spark.summary_schema())
            t = pa.Table.from_pylist([r.asDict() for r in out.collect()], schema=bagscope.spark.SUMMARY_SCHEMA_ARROW)
            assert all(e is None for e in t.column("error").to_pylist())
            return sorted(t.drop_columns(["path"]).to_pylist(), key=lambda r: (r["bag"], r["topic"] or "", r["type"] or ""))

        assert rows([str(b) for b in BAGS]) == rows([f"s3://fleet/bags/{b.name}/" for b in BAGS])
    finally:
        spark.stop()
