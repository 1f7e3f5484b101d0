#!/usr/bin/env bash
# `observe -o` in bounded memory. On the benchmark bag (`bagscope synth perf`)
# and on a bag twice as long, `observe` with a contract (anchor /joint_states, the
# IMU interpolated with max_gap 50ms) against `bagscope clocks` on the same bag, alternated
# (RUNS rounds, medians): peak anonymous memory (RssAnon sampled every 2 ms by
# bench/memtime.py), wall and CPU time. Prints:
#   observe / clocks, peak anon        target <= 1.5x
#   observe / clocks, wall time        target <= 3x
#   observe on the doubled bag / on the bag, peak anon   (independent of the length: ~1x)
# and the same for the LeRobot layout (`--layout lerobot --action /imu`).
#
#   bench/observe_memory.sh [MESSAGES]     (default 3000000: the doubled bag has 6000000)
#   BIN=path/to/bagscope bench/observe_memory.sh    (that binary, nothing built)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-3}
target=${CARGO_TARGET_DIR:-target}
work=${BENCH_DIR:-$target/speed}
mkdir -p "$work"
[ -n "${BIN:-}" ] || cargo build --release -q -p bagscope-cli
bin=${BIN:-$target/release/bagscope}
one="$work/perf_$N/perf/perf.mcap"
two="$work/perf_$((2 * N))/perf/perf.mcap"
[ -f "$one" ] || "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null
[ -f "$two" ] || "$bin" synth perf -o "$work/perf_$((2 * N))" --messages "$((2 * N))" >/dev/null
contract="$work/observe-imu.yaml"
cat >"$contract" <<'YAML'
anchor: /joint_states
state:
  - topic: /imu
    mode: interpolate
    max_gap: 50ms
YAML
echo "date: $(date -u +%Y-%m-%dT%H:%MZ), cores: $(nproc), messages: $N and $((2 * N)), rounds: $RUNS"
echo "bags: $(du -h "$one" | cut -f1), $(du -h "$two" | cut -f1); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
runs="$work/observe_memory_runs.jsonl"
: >"$runs"
for _ in $(seq "$RUNS"); do
  for size in one two; do
    b=$one
    [ "$size" = two ] && b=$two
    cat "$b" >/dev/null
    rm -rf "$work/observe-out-$size"
    bench/memtime.py --label "observe $size" -- "$bin" observe "$b" --contract "$contract" \
      -o "$work/observe-out-$size" --json >>"$runs"
    bench/memtime.py --label "clocks $size" -- "$bin" clocks "$b" --json >>"$runs"
    rm -rf "$work/observe-out-$size"
    bench/memtime.py --label "lerobot $size" -- "$bin" observe "$b" --contract "$contract" \
      -o "$work/observe-out-$size" --layout lerobot --action /imu --task t --json >>"$runs"
  done
done
rm -rf "$work"/observe-out-*
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(label, key):
    return statistics.median(r[key] for r in rows if r["label"] == label)
print("| command | bag | wall s | CPU s | peak anon MB | VmHWM MB |")
print("|---|---|---:|---:|---:|---:|")
for l in ["clocks", "observe", "lerobot"]:
    for s, name in [("one", "N"), ("two", "2N")]:
        k = f"{l} {s}"
        print(f"| {l} | {name} | {med(k, 'wall_s'):.3f} | {med(k, 'cpu_s'):.2f} | {med(k, 'peak_anon_mb'):.0f} | {med(k, 'hwm_mb'):.0f} |")
for l in ["observe", "lerobot"]:
    a = med(f"{l} one", "peak_anon_mb") / med("clocks one", "peak_anon_mb")
    w = med(f"{l} one", "wall_s") / med("clocks one", "wall_s")
    d = med(f"{l} two", "peak_anon_mb") / med(f"{l} one", "peak_anon_mb")
    print(f"{l} / clocks, peak anon: {a:.2f}x (target <= 1.5x: {'met' if a <= 1.5 else 'NOT met'}); "
          f"wall: {w:.2f}x (target <= 3x: {'met' if w <= 3 else 'NOT met'}); "
          f"doubled bag / bag, peak anon: {d:.2f}x")
PY
