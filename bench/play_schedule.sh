#!/usr/bin/env bash
# Scheduling accuracy of `bagscope play` on this machine: 10^5 JointState messages at 1 kHz
# (100 s) paced in real time into a null sink (`--dry-run`: no DDS), then the distribution of
# hand-off time minus target time, and the same without the time the host kept the player off
# its CPU (steal; Linux only). The machine and its load (CPUs, load average, the host's steal
# share over the run) are printed with the numbers: quote them together. With no DDS there is
# no wire time; when a message leaves the host is measured by `play` itself while publishing
# to a subscriber (`wire_timing_error`, docs/replay.md).
#
#   bench/play_schedule.sh [MESSAGES]      (default 100000 at 1 kHz)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
work=${BENCH_DIR:-target/play-bench}
mkdir -p "$work"
cargo build --release -q -p bagscope-cli
bin=target/release/bagscope
# The perf bag has three 1 kHz topics; /joint_states alone is the 1 kHz stream.
"$bin" synth perf -o "$work/sched_$N" --messages $((3 * N)) >/dev/null
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r s0 t0 < <(steal)
"$bin" play "$work/sched_$N/perf/perf.mcap" --topics /joint_states --dry-run --json \
  > "$work/sched_$N.json"
read -r s1 t1 < <(steal)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); \
load average after the run: $(cut -d' ' -f1-3 /proc/loadavg); host steal during the run: \
$(awk -v a=$((s1 - s0)) -v b=$((t1 - t0)) 'BEGIN{printf "%.1f%%", b ? 100 * a / b : 0}')"
python3 - "$work/sched_$N.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["timing_error"]
print(f"bagscope play --dry-run: {e['count']} messages at 1 kHz over {r['wall_duration_ns']/1e9:.1f} s")
o = r.get("timing_error_without_steal")
print(f"  {'':>4}  {'error':>9}    {'without host steal' if o else ''}")
for k in ("min", "p50", "p95", "p99", "max", "mean"):
    print(f"  {k:>4}: {e[k]/1e3:9.1f} us" + (f"  {o[k]/1e3:9.1f} us" if o else ""))
if o:
    print(f"  made late (>= 0.1 ms) by host steal: {r['late_by_steal']} messages")
PY
