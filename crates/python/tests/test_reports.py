"""Bag methods return exactly the CLI's `--json` (keys and values), on every bag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bagscope
from conftest import ROOT, all_bags, cli_json

BAGS = all_bags()
IDS = [p.name for p in BAGS]


@pytest.mark.parametrize("path", BAGS, ids=IDS)
def test_info_clocks_check_equal_cli(path: Path) -> None:
    bag = bagscope.open(path)
    assert bag.info() == cli_json("info", str(path))
    assert bag.info(fast=True) == cli_json("info", "--fast", str(path))
    assert bag.clocks() == cli_json("clocks", str(path))
    assert bag.check() == cli_json("check", str(path))


SYNC = [
    ("sensors", ["/camera/image_raw", "/lidar/points"], {}),
    ("sensors", ["/camera/image_raw", "/camera/camera_info"], {"policy": "exact"}),
    ("sensors_bimodal", ["/camera/image_raw", "/lidar/points"], {"policy": "approx", "queue": 5}),
    ("sensors", ["/camera/image_raw", "/lidar/points"], {"slop": 0.05}),
    ("sensors", ["/camera/image_raw", "/lidar/points"], {"slop": "20ms"}),
]


def _sync_args(kw: dict) -> list:
    a = []
    if "policy" in kw:
        a += ["--policy", kw["policy"]]
    if "queue" in kw:
        a += ["--queue", str(kw["queue"])]
    if "slop" in kw:
        a += ["--slop", str(kw["slop"])]
    return a


@pytest.mark.parametrize("name,topics,kw", SYNC)
def test_sync_equal_cli(name: str, topics: list, kw: dict) -> None:
    path = ROOT / "bags" / name
    got = bagscope.open(path).sync(topics, **kw)
    want = cli_json("sync", str(path), "--topics", ",".join(topics), *_sync_args(kw))
    assert got == want


def test_recommend_equal_cli() -> None:
    path = ROOT / "bags" / "sensors"
    topics = ["/camera/image_raw", "/lidar/points"]
    got = bagscope.open(path).recommend(topics)
    want = cli_json("sync", str(path), "--topics", ",".join(topics), "--recommend")
    assert got == want


@pytest.mark.parametrize("name", ["arm_wall", "arm_sim", "arm_split", "arm_ack"])
def test_match_equal_cli(name: str) -> None:
    path = ROOT / "bags" / name
    got = bagscope.open(path).match("/arm_cmd", "/joint_states")
    want = cli_json("match", str(path), "--command", "/arm_cmd", "--response", "/joint_states")
    assert got == want


def test_match_options_equal_cli() -> None:
    path = ROOT / "bags" / "arm_wall"
    got = bagscope.open(path).match(
        "/arm_cmd", "/joint_states", search="0..200ms", one_to_one=True, max_pair_distance="20ms"
    )
    want = cli_json(
        "match", str(path), "--command", "/arm_cmd", "--response", "/joint_states",
        "--search", "0..200ms", "--one-to-one", "--max-pair-distance", "20ms",
    )
    assert got == want


def test_results_are_plain_json_values() -> None:
    r = bagscope.open(ROOT / "bags" / "arm_split").clocks()
    assert json.loads(json.dumps(r)) == r
    assert r["split"] is True
    assert isinstance(r["verdicts"]["findings"], list)
