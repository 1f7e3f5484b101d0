"""Reads a dataset `bagscope observe --layout lerobot` wrote, independently of bagscope.

    python lerobot_layout.py DIR schema     pyarrow + pandas + numpy, against LeRobot's
                                            documented v3.0 layout
    python lerobot_layout.py DIR lerobot    the published `lerobot` package (LeRobotDataset)

Prints one JSON object with what it read (frames, fps, the task, the first frames' state and
action, ...) for the Rust test to compare with the generator's truth; exits non-zero with the
reason when the layout is not what the reader expects.
"""

import json
import sys
from pathlib import Path


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def schema(root: Path):
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    info = json.loads((root / "meta/info.json").read_text())
    for key in (
        "codebase_version", "robot_type", "total_episodes", "total_frames", "total_tasks",
        "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "fps", "splits",
        "data_path", "video_path", "features",
    ):
        if key not in info:
            fail(f"info.json has no {key}")
    if info["codebase_version"] != "v3.0":
        fail(f"codebase_version {info['codebase_version']}")
    features = info["features"]
    for name in features:
        if "/" in name:
            fail(f"feature name with '/': {name}")

    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    if len(episodes) != info["total_episodes"]:
        fail(f"{len(episodes)} episodes, info says {info['total_episodes']}")
    frames = 0
    data = []
    for ep in episodes:
        for key in ("episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
                    "dataset_from_index", "dataset_to_index", "meta/episodes/chunk_index",
                    "meta/episodes/file_index"):
            if key not in ep:
                fail(f"episode row has no {key}")
        path = root / info["data_path"].format(
            chunk_index=ep["data/chunk_index"], file_index=ep["data/file_index"])
        rows = pq.read_table(path).to_pylist()
        mine = [r for r in rows if r["episode_index"] == ep["episode_index"]]
        if len(mine) != ep["length"] or ep["dataset_to_index"] - ep["dataset_from_index"] != ep["length"]:
            fail(f"episode {ep['episode_index']}: {len(mine)} rows, length {ep['length']}, "
                 f"index range {ep['dataset_from_index']}..{ep['dataset_to_index']}")
        frames += len(mine)
        data.extend(mine)
    if frames != info["total_frames"]:
        fail(f"{frames} frames, info says {info['total_frames']}")

    columns = set(data[0]) if data else set()
    if columns != set(features):
        fail(f"data columns {sorted(columns)} are not the features {sorted(features)}")
    numeric = {}
    for name, ft in features.items():
        shape = ft["shape"]
        for r in data:
            v = r[name]
            if ft["dtype"] == "string":
                ok = isinstance(v, str)
            elif shape == [1]:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            else:
                ok = isinstance(v, list) and len(v) == shape[0]
            if not ok:
                fail(f"{name}: {v!r} does not fit dtype {ft['dtype']} shape {shape}")
        if isinstance(ft.get("names"), list) and len(ft["names"]) != shape[0]:
            fail(f"{name}: {len(ft['names'])} names for shape {shape}")
        if ft["dtype"] != "string":
            numeric[name] = np.array([r[name] for r in data], dtype=np.float64).reshape(len(data), -1)

    # Statistics as LeRobot defines them, recomputed with numpy from the data file.
    stats = json.loads((root / "meta/stats.json").read_text())
    for name, x in numeric.items():
        st = stats.get(name) or fail(f"stats.json has no {name}")
        want = {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0),
                "count": np.array([len(x)])}
        for key, q in (("q01", 0.01), ("q10", 0.10), ("q50", 0.50), ("q90", 0.90), ("q99", 0.99)):
            want[key] = np.quantile(x, q, axis=0)
        for key, w in want.items():
            got = np.asarray(st.get(key, []), dtype=np.float64)
            if got.shape != w.shape or not np.allclose(got, w, rtol=1e-12, atol=1e-12):
                fail(f"stats.json {name}.{key}: {got} vs numpy {w}")
            col = episodes[0].get(f"stats/{name}/{key}")
            if len(episodes) == 1 and (col is None or not np.allclose(col, w, rtol=1e-12, atol=1e-12)):
                fail(f"episode stats/{name}/{key}: {col} vs numpy {w}")

    tasks = pd.read_parquet(root / "meta/tasks.parquet")
    if list(tasks.columns) != ["task_index"]:
        fail(f"tasks.parquet columns {list(tasks.columns)}")
    task_of = {int(i): str(t) for t, i in zip(tasks.index, tasks["task_index"])}
    return {
        "frames": frames,
        "fps": info["fps"],
        "task": task_of[data[0]["task_index"]],
        "episode_tasks": episodes[0]["tasks"],
        "state": [r["observation.state"] for r in data],
        "action": [r["action"] for r in data],
        "timestamp": [r["timestamp"] for r in data],
        "state_names": features["observation.state"]["names"],
    }


def lerobot(root: Path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("bagscope/observe", root=root)
    fps = ds.fps
    # A delta-timestamp query (the previous and the next frame's action), as policies ask.
    dd = LeRobotDataset("bagscope/observe", root=root,
                        delta_timestamps={"action": [-1 / fps, 0.0, 1 / fps]})
    mid = len(dd) // 2
    window = dd[mid]["action"].tolist()
    items = [ds[k] for k in range(len(ds))]
    return {
        "frames": len(ds),
        "episodes": ds.num_episodes,
        "fps": fps,
        "task": items[0]["task"],
        "state": [it["observation.state"].tolist() for it in items],
        "action": [it["action"].tolist() for it in items],
        "timestamp": [float(it["timestamp"]) for it in items],
        "state_names": ds.features["observation.state"]["names"],
        "stats_keys": sorted(ds.meta.stats["observation.state"]),
        "action_window_mid": mid,
        "action_window": window,
    }


if __name__ == "__main__":
    root, how = Path(sys.argv[1]), sys.argv[2]
    print(json.dumps({"schema": schema, "lerobot": lerobot}[how](root)))
