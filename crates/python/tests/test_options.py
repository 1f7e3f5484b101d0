"""One options surface: the stub states the library's own defaults and positional parameters,
and every parameter the CLI refuses or warns about, Python refuses or warns about too (the
same cases through both)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Dict, List

import pytest

import bagscope
from bagscope import _bagscope
from conftest import ROOT, run_cli

STUB = ROOT / "crates" / "python" / "python" / "bagscope" / "_bagscope.pyi"
METHODS = ["info", "clocks", "check", "sync", "recommend", "match", "tf", "hist"]


def stub_methods() -> Dict[str, ast.FunctionDef]:
    tree = ast.parse(STUB.read_text())
    bag = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Bag")
    return {f.name: f for f in bag.body if isinstance(f, ast.FunctionDef)}


@pytest.mark.parametrize("method", METHODS)
def test_stub_states_the_librarys_defaults(method: str) -> None:
    f = stub_methods()[method]
    positional = [a.arg for a in f.args.args[1:]]
    assert positional == _bagscope._positional(method)
    defaults = dict(zip(positional[len(positional) - len(f.args.defaults) :], f.args.defaults))
    defaults.update({a.arg: d for a, d in zip(f.args.kwonlyargs, f.args.kw_defaults) if d})
    assert defaults, method
    for name, node in defaults.items():
        value = ast.literal_eval(node)
        if isinstance(value, tuple):
            value = list(value)
        assert _bagscope._default_matches(method, name, value), (method, name, value)


def test_a_wrong_default_or_an_unknown_parameter_is_caught() -> None:
    assert not _bagscope._default_matches("sync", "queue", 11)
    assert not _bagscope._default_matches("match", "search", "0..400ms")
    assert not _bagscope._default_matches("sync", "slop", "30ms")
    with pytest.raises(bagscope.InvalidParameter, match="no such parameter"):
        _bagscope._default_matches("sync", "slopp", None)


SENSORS = str(ROOT / "bags" / "sensors")
ARM = str(ROOT / "bags" / "arm_wall")
PAIR = ["/camera/image_raw", "/lidar/points"]

# (method, args, kwargs, bag, CLI arguments, the parameter named): a parameter that does not
# apply, or is malformed, in both surfaces.
REFUSED = [
    ("sync", [PAIR], {"policy": "exact", "slop": "30ms"}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--policy", "exact", "--slop", "30ms"], "slop"),
    ("sync", [PAIR], {"policy": "approx", "rate_config": ["0.9,0.3,10"]}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--policy", "approx", "--rate-config", "0.9,0.3,10"],
     "rate_config"),
    ("sync", [PAIR], {"policy": "exact", "queue_offsets": {PAIR[0]: "5ms"}}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--policy", "exact", "--queue-offset",
      f"{PAIR[0]}=5ms"], "queue_offsets"),
    ("sync", [PAIR], {"policy": "approx", "lower_bounds": {"/nope": "5ms"}}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--policy", "approx", "--lower-bound", "/nope=5ms"],
     "lower_bounds"),
    ("sync", [PAIR], {"slop": "30ms", "speed": 1.0}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--slop", "30ms", "--speed", "1"], "speed"),
    ("sync", [PAIR], {"slop": "30ms", "anchor": PAIR[0]}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--slop", "30ms", "--anchor", PAIR[0]], "anchor"),
    ("sync", [PAIR], {"slop": "30ms", "tf_buffer": "5s"}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--slop", "30ms", "--tf-buffer", "5s"], "tf_buffer"),
    ("sync", [[PAIR[0]]], {}, SENSORS, ["sync", "--topics", PAIR[0]], "topics"),
    ("sync", [PAIR], {"slop": "30 parsecs"}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--slop", "30 parsecs"], "slop"),
    ("recommend", [PAIR], {"slop": "30ms"}, SENSORS,
     ["sync", "--topics", ",".join(PAIR), "--recommend", "--slop", "30ms"], "slop"),
    ("match", ["/arm_cmd", "/joint_states"], {"align": "relative", "clock_topic": "/clock"}, ARM,
     ["match", "--command", "/arm_cmd", "--response", "/joint_states", "--align", "relative",
      "--clock-topic", "/clock"], "clock_topic"),
    ("match", ["/arm_cmd", "/joint_states"], {"window": "1s..5s", "keep_still": True}, ARM,
     ["match", "--command", "/arm_cmd", "--response", "/joint_states", "--window", "1s..5s",
      "--keep-still"], "keep_still"),
    ("match", ["/arm_cmd", "/joint_states"], {"align": "sideways"}, ARM,
     ["match", "--command", "/arm_cmd", "--response", "/joint_states", "--align", "sideways"],
     "align"),
    ("tf", ["", ["/joint_states"]], {}, ARM,
     ["tf", "--target-frame", "", "--topics", "/joint_states"], "target_frame"),
    ("clocks", [], {"gap_factor": "wide"}, SENSORS, ["clocks", "--gap-factor", "wide"],
     "gap_factor"),
]


@pytest.mark.parametrize("case", REFUSED, ids=[f"{c[0]}-{c[5]}" for c in REFUSED])
def test_what_the_cli_refuses_python_refuses(case) -> None:
    method, args, kwargs, bag, cli, name = case
    with pytest.raises(bagscope.InvalidParameter) as e:
        getattr(bagscope.open(bag), method)(*args, **kwargs)
    assert name in str(e.value), str(e.value)
    p = run_cli(cli[0], bag, *cli[1:], check_codes=(2,))
    assert "--" + name.replace("_", "-").replace("lower-bounds", "lower-bound").replace(
        "queue-offsets", "queue-offset"
    ) in p.stderr, p.stderr


def test_a_unitless_slop_is_warned_about_in_python_too() -> None:
    # 30 (seconds, no unit) is far above the topics' periods: `slop_unit_suspect`, from the
    # CLI's `--slop 30` and from Python's slop=30 or slop="30" alike.
    want = json.loads(
        run_cli("sync", SENSORS, "--topics", ",".join(PAIR), "--slop", "30", "--json").stdout
    )
    assert any(w["code"] == "slop_unit_suspect" for w in want["warnings"])
    bag = bagscope.open(SENSORS)
    for slop in (30, "30", 30.0):
        assert bag.sync(PAIR, slop=slop) == want, slop
    with_unit = bag.sync(PAIR, slop="30s")
    assert not any(w["code"] == "slop_unit_suspect" for w in with_unit["warnings"])


def test_positional_and_keyword_arguments_fill_the_same_options() -> None:
    bag = bagscope.open(SENSORS)
    assert bag.sync(PAIR, "approx-py", 5, "30ms") == bag.sync(
        topics=PAIR, policy="approx-py", queue=5, slop="30ms"
    )
    with pytest.raises(bagscope.InvalidParameter, match="several values"):
        bag.sync(PAIR, topics=PAIR)
    with pytest.raises(bagscope.InvalidParameter, match="unknown field `slopp`"):
        bag.sync(PAIR, slopp="30ms")


def test_tf_and_hist_equal_the_cli() -> None:
    bag = bagscope.open(ARM)
    assert bag.tf("map", ["/joint_states"]) == json.loads(
        run_cli("tf", ARM, "--target-frame", "map", "--topics", "/joint_states", "--json").stdout
    )
    assert bagscope.open(SENSORS).hist(PAIR, bins=20) == json.loads(
        run_cli("hist", SENSORS, "--topics", ",".join(PAIR), "--bins", "20", "--json").stdout
    )


def test_report_data_is_the_report_page_s_json(tmp: Path) -> None:
    for name in ["arm_split", "sensors"]:
        bag = ROOT / "bags" / name
        run_cli("report", str(bag), "-o", str(tmp / name))
        page = json.loads((tmp / name / "report.json").read_text())
        for k in ["sections", "plots", "unplotted_topics"]:
            del page[k]
        assert bagscope.open(bag).report_data() == page, name
    with pytest.raises(bagscope.InvalidParameter, match="pairs"):
        bagscope.open(ROOT / "bags" / "arm_wall").report_data(pairs=[("/nope", "/joint_states")])
