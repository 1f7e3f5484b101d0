"""A fleet of bags for the engine tests: the shipped bags, `bagscope synth` variants as
single .mcap files, a truncated copy and a .db3 file; and what `bagscope batch` makes of it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import List, Tuple

import duckdb

from conftest import ROOT, cli, shared
from test_bytes_threads import make_db3

SCENARIOS = ["arm_wall", "arm_sim", "arm_split", "arm_ack", "sensors", "sensors_bimodal", "sim_reset"]


def build(dest: Path, seeds: int = 15) -> Tuple[List[Path], List[Path]]:
    """(every bag, the single-file ones) under `dest`, made once."""
    dest.mkdir(parents=True, exist_ok=True)
    synth = dest / "_synth"
    for seed in range(1, seeds + 1):
        for sc in SCENARIOS:
            name = f"s{seed:02d}_{sc}"
            # Short recordings (sim_reset keeps its own length: its reset is at 9.5 s).
            length = [] if sc == "sim_reset" else ["--duration", "6"]
            subprocess.run(
                [str(cli()), "synth", sc, "-o", str(synth), "--seed", str(seed), "--name", name, *length],
                check=True,
                capture_output=True,
            )
            shutil.copy(synth / name / f"{name}.mcap", dest / f"{name}.mcap")
    shutil.rmtree(synth)
    whole = (dest / "s01_arm_wall.mcap").read_bytes()
    (dest / "cut_arm_wall.mcap").write_bytes(whole[: len(whole) // 2])
    make_db3(dest / "talk.db3")
    (dest / "junk.mcap").write_bytes(b"not a bag" * 100)
    files = sorted(p for p in dest.iterdir() if p.is_file())
    folders = [p for p in sorted((ROOT / "bags").iterdir()) if p.is_dir()]
    s = shared()
    if s is not None:
        # The shared bags the repository does not ship too (batch names are unique per run).
        have = {p.name for p in folders}
        extra = [
            p
            for p in sorted((s / "bags").iterdir())
            if (p.is_dir() or p.suffix == ".mcap") and p.name not in have
        ]
        folders += [p for p in extra if p.is_dir()]
        files += [p for p in extra if p.is_file()]
    return folders + files, files


def batch_rows(bags: List[Path], out: Path) -> Tuple[list, dict]:
    """`bagscope batch` over the bags: summary.parquet's rows (DuckDB, sorted) and each bag's
    status by name."""
    subprocess.run(
        [str(cli()), "batch", *map(str, bags), "-o", str(out), "--json"],
        check=False,
        capture_output=True,
    )
    rows = duckdb.sql(
        f"select * from read_parquet('{out / 'summary.parquet'}') order by bag, topic, type"
    ).fetchall()
    import json

    status = {b["name"]: b["status"] for b in json.loads((out / "batch.json").read_text())["bags"]}
    return rows, status
