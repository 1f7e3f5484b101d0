"""Shared fixtures: the repository, the CLI binary the dicts are compared with, the bags."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[3]


def cli() -> Path:
    """The `bagscope` binary: $BAGSCOPE_BIN, else the debug build of the workspace."""
    env = os.environ.get("BAGSCOPE_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "bagscope"


def shared() -> Optional[Path]:
    """`../shared` beside the repository (the test corpus); None, or a failure under CI."""
    p = ROOT.parent / "shared"
    if (p / "bags").is_dir():
        return p
    if os.environ.get("CI"):
        raise RuntimeError(f"CI is set but {p / 'bags'} is missing")
    return None


def all_bags() -> List[Path]:
    """Every bag of the repository's bags/, and of ../shared/bags when it is there."""
    out = sorted(p for p in (ROOT / "bags").iterdir() if p.is_dir())
    s = shared()
    if s is not None:
        for p in sorted((s / "bags").iterdir()):
            if p.is_dir() or p.suffix == ".mcap":
                out.append(p)
    return out


def run_cli(*args: str, check_codes: Tuple[int, ...] = (0, 3)) -> subprocess.CompletedProcess:
    b = cli()
    if not b.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"CI is set but the CLI {b} is missing")
        pytest.skip(f"no CLI binary at {b} (build it, or set BAGSCOPE_BIN)")
    r = subprocess.run([str(b), *args], capture_output=True, text=True)
    assert r.returncode in check_codes, (args, r.returncode, r.stderr)
    return r


def cli_json(*args: str) -> dict:
    r = run_cli(*args, "--json")
    return json.loads(r.stdout)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def cli_bin() -> Path:
    b = cli()
    if not b.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"CI is set but the CLI {b} is missing")
        pytest.skip(f"no CLI binary at {b} (build it, or set BAGSCOPE_BIN)")
    return b


def copy_bag(src: Path, dst: Path) -> Path:
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    return dst


@pytest.fixture(scope="session")
def fleet(tmp_path_factory, cli_bin):
    """(every bag, the single-file bags, `batch`'s summary rows, `batch`'s status by name) of
    the engine tests' 120+ bags (fleet.py), made once per session."""
    from fleet import batch_rows, build

    base = tmp_path_factory.mktemp("fleet")
    bags, files = build(base / "bags")
    rows, status = batch_rows(bags, base / "batch")
    return bags, files, rows, status
