#!/usr/bin/env bash
# `bagscope batch` over 500 small bags against a Python loop, in one process, of
# `b = bagscope.open(p); b.info(); b.clocks(); b.timing()` over the same bags, and `batch
# --jobs 2` against `--jobs 1`. Alternated rounds (RUNS, default 3), medians; wall time of the
# batch process, and of the loop inside its Python process (after the imports).
#   batch --jobs 1 / Python loop            target <= 1.5x
#   bags/s with --jobs 2 / with --jobs 1    target >= 1.8x
#
#   bench/batch.sh [BAGS]        (default 500: `bagscope synth` variants of 6 s, 6 scenarios)
#   BIN=... PKG=... bench/batch.sh     (a CLI and a package folder, nothing built)
set -euo pipefail
cd "$(dirname "$0")/.."
BAGS=${1:-500}
RUNS=${RUNS:-3}
target=${CARGO_TARGET_DIR:-target}
work=${BENCH_DIR:-$target/bench-python}
py=${PYTHON:-target/py-venv/bin/python}
mkdir -p "$work"
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p bagscope-cli -p bagscope-python
  PKG="$work/pkg"
  rm -rf "$PKG" && mkdir -p "$PKG/bagscope"
  cp crates/python/python/bagscope/*.py crates/python/python/bagscope/*.pyi \
    crates/python/python/bagscope/py.typed "$PKG/bagscope/"
  cp "$target/release/lib_bagscope.so" "$PKG/bagscope/_bagscope.abi3.so"
fi
bin=${BIN:-$target/release/bagscope}
export PYTHONPATH="$PWD/${PKG:?set PKG with BIN}"
fleet="$work/fleet_$BAGS"
if [ ! -d "$fleet" ]; then
  mkdir -p "$fleet"
  seeds=$(( (BAGS + 5) / 6 ))
  for s in $(seq "$seeds"); do
    for sc in arm_wall arm_sim arm_split arm_ack sensors sensors_bimodal; do
      "$bin" synth "$sc" -o "$work/synth" --seed "$s" --duration 6 --name "s${s}_$sc" >/dev/null
      cp "$work/synth/s${s}_$sc/s${s}_$sc.mcap" "$fleet/"
    done
  done
  rm -rf "$work/synth"
  ls "$fleet" | sort | tail -n +"$((BAGS + 1))" | while read -r f; do rm "$fleet/$f"; done
fi
cat > "$work/loop.py" <<'PY'
import glob, json, sys, time
import bagscope
paths = sorted(glob.glob(sys.argv[1] + "/*.mcap"))
t0 = time.monotonic()
rows = 0
for p in paths:
    b = bagscope.open(p)
    b.info()
    b.clocks()
    rows += b.timing().num_rows
print(json.dumps({"label": "python loop", "wall_s": time.monotonic() - t0, "bags": len(paths), "rows": rows}))
PY
echo "date: $(date -u +%Y-%m-%dT%H:%MZ), cores: $(nproc), bags: $BAGS ($(du -sh "$fleet" | cut -f1)), rounds: $RUNS"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$fleet"/* >/dev/null
runs="$work/batch_runs.jsonl"
: >"$runs"
for _ in $(seq "$RUNS"); do
  "$py" "$work/loop.py" "$fleet" >>"$runs"
  for j in 1 2; do
    bench/memtime.py --label "batch --jobs $j" -- "$bin" batch "$fleet" -o "$work/batch_out" --jobs "$j" --force >>"$runs"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$runs" "$BAGS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
def med(label, key="wall_s"):
    return statistics.median(r[key] for r in rows if r["label"] == label)
loop, j1, j2 = med("python loop"), med("batch --jobs 1"), med("batch --jobs 2")
print("| job | wall s (median) | bags/s |")
print("|---|---:|---:|")
for name, w in [("Python loop: open, info, clocks, timing", loop), ("batch --jobs 1", j1), ("batch --jobs 2", j2)]:
    print(f"| {name} | {w:.2f} | {n / w:.1f} |")
r = j1 / loop
print(f"batch --jobs 1 / Python loop: {r:.2f}x (target <= 1.5x: {'met' if r <= 1.5 else 'NOT met'})")
s = j1 / j2
print(f"bags/s --jobs 2 / --jobs 1: {s:.2f}x (target >= 1.8x: {'met' if s >= 1.8 else 'NOT met'})")
PY
