#!/usr/bin/env bash
# observe against one scan: observations for a 30 Hz anchor with 3 camera members
# and 500 Hz joint states over a 3 M-message bag (synth perf_observe: IMU and TF at 1 kHz are
# the rest of the traffic) take no more than 2x `bagscope clocks` on the same bag.
#
#   bench/observe.sh [MESSAGES]      (default 3000000; RUNS=5 repetitions, medians reported)
#   BIN=other/bagscope bench/observe.sh     (that binary, nothing built)
#
# observe and clocks run alternately (observe, clocks, observe, ...) so that load from other
# processes falls on both; wall time is the target, CPU time (user + system) and peak RSS are
# printed beside it, with the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-5}
work=${BENCH_DIR:-target/speed}
tgt=${CARGO_TARGET_DIR:-target}
mkdir -p "$work"
[ -n "${BIN:-}" ] || cargo build --release -q -p bagscope-cli
bin=${BIN:-$tgt/release/bagscope}
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)"; exit 1; }

dir="$work/perf_observe_$N"
mcapf="$dir/perf_observe/perf_observe.mcap"
[ -f "$mcapf" ] || "$bin" synth perf_observe -o "$dir" --messages "$N" >/dev/null
contract="$work/observe-contract.yaml"
cat >"$contract" <<'YAML'
anchor: /camera/head/image_raw
members:
  - name: cameras
    policy: approx-py
    topics: [/camera/left/image_raw, /camera/right/image_raw, /camera/wrist/image_raw]
    queue: 5
    slop: 15ms
state:
  - topic: /joint_states
    mode: interpolate
    max_gap: 10ms
freshness: {max_age: 100ms}
YAML

# timed LABEL CMD...: appends "wall_s peak_kb cpu_s" to $work/observe-LABEL.txt
timed() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -o "$work/observe-time.txt" -f '%M %U %S' "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'NR == FNR { m = $1; c = $2 + $3 } END { printf "%.4f %d %.2f\n", (b - a) / 1e9, m, c }' \
    "$work/observe-time.txt" "$work/observe-time.txt" >>"$work/observe-$label.txt"
}
# median FILE COLUMN
median() { sort -g -k"$2,$2" "$1" | awk -v k="$2" '{v[NR] = $k} END {print v[int((NR + 1) / 2)]}'; }

: >"$work/observe-observe.txt"
: >"$work/observe-clocks.txt"
echo "messages: $N, runs: $RUNS, cores: $(nproc), $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$mcapf" >/dev/null
for _ in $(seq "$RUNS"); do
  rm -rf "$work/observe-out"
  timed observe "$bin" observe "$mcapf" --contract "$contract" -o "$work/observe-out" --json
  timed clocks "$bin" clocks "$mcapf" --json
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for l in observe clocks; do
  f="$work/observe-$l.txt"
  printf '  %-8s %8.3f s wall  %7.2f s CPU  %8d KB peak\n' "$l" "$(median "$f" 1)" "$(median "$f" 3)" "$(median "$f" 2)"
done
awk -v o="$(median "$work/observe-observe.txt" 1)" -v c="$(median "$work/observe-clocks.txt" 1)" \
  -v oc="$(median "$work/observe-observe.txt" 3)" -v cc="$(median "$work/observe-clocks.txt" 3)" 'BEGIN {
  r = o / c; printf "  observe / clocks             %5.2fx  (target <= 2.0x) %s\n", r, (r <= 2 ? "met" : "NOT met")
  printf "  observe / clocks, CPU time   %5.2fx\n", oc / cc }'
