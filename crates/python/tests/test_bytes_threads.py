"""Bag.from_bytes over any buffer, Bags shared by threads, scans that release the GIL and
stop on a signal."""

from __future__ import annotations

import mmap
import signal
import sqlite3
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import bagscope
from conftest import ROOT, cli_json

MCAP = ROOT / "bags" / "arm_wall" / "arm_wall.mcap"


def _strip_path(r: dict) -> dict:
    r = dict(r)
    r.pop("bag", None)
    r.pop("path", None)
    r.pop("files", None)
    return r


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "mmap"])
def test_from_bytes_equals_the_file(kind: str) -> None:
    data = MCAP.read_bytes()
    if kind == "bytes":
        buf = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "memoryview":
        buf = memoryview(data)[0:]
    else:
        f = open(MCAP, "rb")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    bag = bagscope.Bag.from_bytes(buf, name="arm_wall.mcap")
    assert bag.path.endswith("/arm_wall.mcap")
    want = bagscope.open(MCAP)
    assert _strip_path(bag.clocks()) == _strip_path(want.clocks())
    assert _strip_path(bag.info()) == _strip_path(want.info())
    assert bag.timing().num_rows == want.timing().num_rows


def test_from_bytes_file_is_removed_with_the_bag() -> None:
    bag = bagscope.Bag.from_bytes(MCAP.read_bytes())
    p = Path(bag.path)
    assert p.exists() and p.name == "bag.mcap"
    del bag
    import gc

    gc.collect()
    assert not p.exists()
    assert not p.parent.exists()


def test_from_bytes_damaged_is_corrupt() -> None:
    with pytest.raises(bagscope.CorruptBag):
        bagscope.Bag.from_bytes(b"\x89MCAX0\r\n" + b"\0" * 100, name="x.mcap")


def make_db3(path: Path, n: int = 50) -> Path:
    """A rosbag2 sqlite3 file with one std_msgs/String topic (CDR payloads)."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
            serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
        CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
            timestamp INTEGER NOT NULL, data BLOB NOT NULL);
        """
    )
    con.execute("INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', '')")
    t0 = 1_700_000_000_000_000_000
    for i in range(n):
        s = f"hello {i}".encode() + b"\0"
        data = b"\x00\x01\x00\x00" + struct.pack("<I", len(s)) + s
        con.execute("INSERT INTO messages VALUES (?, 1, ?, ?)", (i + 1, t0 + i * 100_000_000, data))
    con.commit()
    con.close()
    return path


def test_db3_from_path_and_bytes(tmp: Path) -> None:
    p = make_db3(tmp / "talk.db3")
    bag = bagscope.open(p)
    info = bag.info()
    assert info == cli_json("info", str(p))
    assert info["storage"] == "sqlite3"
    assert [t["count"] for t in info["topics"]] == [50]
    b = bagscope.Bag.from_bytes(p.read_bytes(), name="talk.db3")
    assert _strip_path(b.clocks()) == _strip_path(bag.clocks())


def test_one_bag_from_many_threads() -> None:
    bag = bagscope.open(ROOT / "bags" / "sensors")
    want = bag.clocks()
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda _: bag.clocks(), range(8)))
        tables = list(ex.map(lambda _: bag.timing().num_rows, range(4)))
    assert all(g == want for g in got)
    assert len(set(tables)) == 1


def test_scans_release_the_gil() -> None:
    bag = bagscope.open(ROOT / "bags" / "sensors")
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < 1.0:
        bag.timing()
        n += 1
    stop.set()
    t.join()
    # The spinning thread ran while the scans did (with the GIL held it would barely tick);
    # a loaded machine wakes a 1 ms sleep late, so the bound is well below 1 000 ticks.
    assert ticks > 30, (ticks, n)


class Alarm(Exception):
    pass


def test_a_signal_stops_a_long_call(tmp: Path, cli_bin: Path) -> None:
    import subprocess

    subprocess.run(
        [str(cli_bin), "synth", "perf", "-o", str(tmp), "--messages", "800000"],
        check=True,
        capture_output=True,
    )
    bag = bagscope.open(tmp / "perf")
    t0 = time.monotonic()
    bag.check()
    one = time.monotonic() - t0
    assert one > 0.5, f"check() took {one:.2f} s: too short to interrupt"

    def handler(signum, frame):  # noqa: ANN001
        raise Alarm()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        t0 = time.monotonic()
        with pytest.raises(Alarm):
            bag.check()
        waited = time.monotonic() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    # The handler's exception arrives within a signal check (every 50 ms) of the signal, not
    # when the scan it interrupted ends (a loaded machine may add some wake-up time); the Bag
    # stays usable.
    assert waited < 1.0 and waited < one / 2, (waited, one)
    assert bag.info()["message_count"] > 90_000
