"""Failures are exceptions of one class per kind, under BagError, naming the file; damage met
while reading is a result with data_loss, as the CLI's exit 3."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import bagscope
from conftest import ROOT, cli_json, run_cli


def test_missing_path_is_bag_not_found(tmp: Path) -> None:
    p = tmp / "nope.mcap"
    with pytest.raises(bagscope.BagNotFound) as e:
        bagscope.open(p)
    assert isinstance(e.value, bagscope.BagError)
    assert isinstance(e.value, FileNotFoundError)
    assert str(p) in str(e.value)
    assert e.value.path == str(p)


def test_folder_without_bag_files_is_bag_not_found(tmp: Path) -> None:
    (tmp / "empty").mkdir()
    with pytest.raises(bagscope.BagNotFound, match="no bag files"):
        bagscope.open(tmp / "empty")


def test_not_an_mcap_is_corrupt(tmp: Path) -> None:
    p = tmp / "junk.mcap"
    p.write_bytes(b"this is not an mcap file at all, just text" * 10)
    with pytest.raises(bagscope.CorruptBag) as e:
        bagscope.open(p)
    assert str(p) in str(e.value)
    assert "magic" in str(e.value)


def test_empty_file_is_corrupt(tmp: Path) -> None:
    p = tmp / "empty.mcap"
    p.write_bytes(b"")
    with pytest.raises(bagscope.CorruptBag, match="empty file"):
        bagscope.open(p)


def test_usage_errors() -> None:
    bag = bagscope.open(ROOT / "bags" / "sensors")
    with pytest.raises(bagscope.InvalidParameter) as e:
        bag.sync(["/camera/image_raw"])
    assert isinstance(e.value, bagscope.UsageError)
    assert isinstance(e.value, ValueError)
    with pytest.raises(bagscope.InvalidParameter, match="policy"):
        bag.sync(["/camera/image_raw", "/lidar/points"], policy="nonsense")
    with pytest.raises(bagscope.InvalidParameter, match="slop"):
        bag.sync(["/camera/image_raw", "/lidar/points"], slop="soon")
    with pytest.raises(bagscope.UnknownTopic) as e:
        bag.sync(["/camera/image_raw", "/nope"])
    assert "/nope" in str(e.value) and "/lidar/points" in str(e.value)
    assert isinstance(e.value, bagscope.UsageError)
    with pytest.raises(bagscope.UnknownTopic):
        bag.clocks(clock_topic="/no_clock")
    with pytest.raises(bagscope.InvalidParameter, match="align"):
        bag.match("/a", "/b", align="sideways")


def test_exception_names_the_bag_even_when_the_message_does_not() -> None:
    path = ROOT / "bags" / "sensors"
    with pytest.raises(bagscope.AnalysisError) as e:
        bagscope.open(path).match("/lidar/points", "/camera/image_raw")
    assert str(path) in str(e.value)
    assert e.value.path == str(path)


def test_truncated_bag_reports_data_loss_like_the_cli(tmp: Path) -> None:
    src = ROOT / "bags" / "arm_wall" / "arm_wall.mcap"
    p = tmp / "cut.mcap"
    data = src.read_bytes()
    p.write_bytes(data[: len(data) * 6 // 10])
    bag = bagscope.open(p)
    clocks = bag.clocks()
    assert clocks["verdicts"]["data_loss"] is True
    assert any(w["data_loss"] for w in clocks["warnings"])
    assert run_cli("clocks", str(p)).returncode == 3
    assert clocks == cli_json("clocks", str(p))
    assert bag.info() == cli_json("info", str(p))
    t = bag.timing()
    assert t.data_loss is True
    assert t.num_rows > 0
