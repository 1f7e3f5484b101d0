#!/usr/bin/env bash
# Side-by-side timing of bagscope and the tools users have today, on the same generated bag.
#
#   bench/peers.sh [MESSAGES]        (default 3000000; RUNS=3 repetitions, medians reported)
#
# 1. builds bagscope (release) and the decompression-only baseline,
# 2. writes a bag of MESSAGES JointState / Imu / TF messages in zstd chunks with
#    `bagscope synth perf` (deterministic),
# 3. installs the Python peers in a virtual environment (rosbags, mcap, mcap-ros2-support),
# 4. runs each peer and each bagscope command RUNS times and prints medians, peak memory, and
#    ratios against bagscope's stamp scan and against the decompression-only floor.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-3}
work=${BENCH_DIR:-target/peers}
mkdir -p "$work"

cargo build --release -q -p bagscope-cli
cargo build --release -q -p bagscope --example decompress_only
bin=target/release/bagscope
base=target/release/examples/decompress_only

bag="$work/perf_$N/perf"
if [ ! -f "$bag/perf.mcap" ]; then
  "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null
fi
mcapf="$bag/perf.mcap"
du -h "$mcapf"

if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q rosbags mcap mcap-ros2-support rosbags-dataframe pyarrow
fi
py="$work/venv/bin/python"

cat > "$work/mcap_raw.py" <<'PY'
import sys
from mcap.reader import make_reader
n = 0
with open(sys.argv[1], 'rb') as f:
    for schema, channel, message in make_reader(f).iter_messages():
        n += len(message.data)
print(n)
PY
cat > "$work/mcap_ros2_decode.py" <<'PY'
import sys
from mcap_ros2.reader import read_ros2_messages
n = 0
for m in read_ros2_messages(sys.argv[1]):
    n += 1
print(n)
PY

cat > "$work/rosbags_df.py" <<'PY'
import sys
from pathlib import Path
from rosbags.highlevel import AnyReader
from rosbags.dataframe import get_dataframe
bag, topic, out = sys.argv[1:4]
with AnyReader([Path(bag)]) as r:
    conn = next(c for c in r.connections if c.topic == topic)
    fields = [name for name, _ in r.typestore.fielddefs[conn.msgtype][1]]
    df = get_dataframe(r, topic, fields)
# Lists and nested values as strings: pyarrow cannot store every object column as is.
df = df.reset_index().astype({c: str for c in df.columns if df[c].dtype == object})
df.to_parquet(out)
PY

# run NAME CMD...: RUNS timings; prints "NAME median_seconds peak_kb"
results=()
run() {
  local name=$1; shift
  local times=() mem=0
  for _ in $(seq "$RUNS"); do
    local out
    # -o: time's own report goes to a file, so the command's stderr can be discarded.
    # Wall time from nanosecond clock readings (time's %e has 10 ms steps: info --fast takes
    # a few ms); peak memory from time.
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -o "$work/time.txt" -f '%e %M' "$@" >/dev/null 2>/dev/null || true
    t1=$(date +%s%N)
    out=$(tail -n 1 "$work/time.txt")
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')")
    local m=${out#* }
    [ "$m" -gt "$mem" ] && mem=$m
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  results+=("$name $med $mem")
  printf '  %-32s %8.4f s  %8d KB\n' "$name" "$med" "$mem"
}

command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)"; exit 1; }
echo "runs: $RUNS, messages: $N, cores: $(nproc), $(date -u +%Y-%m-%d)"
run "decompress only (all cores)" "$base" "$mcapf"
run "bagscope info" "$bin" info "$mcapf" --json
run "bagscope info --fast" "$bin" info "$mcapf" --fast --json
run "bagscope clocks (stamp scan)" "$bin" clocks "$mcapf" --json
run "bagscope sync approx-py" "$bin" sync "$mcapf" --topics /joint_states,/imu --policy approx-py --slop 1ms --queue 5 --json
run "python mcap raw iteration" "$py" "$work/mcap_raw.py" "$mcapf"
run "rosbags stamp extraction" "$py" bench/rosbags_stamps.py "$bag"
run "mcap-ros2-support decode" "$py" "$work/mcap_ros2_decode.py" "$mcapf"
run "bagscope export /joint_states" "$bin" export "$mcapf" --topics /joint_states -o "$work/js_bagscope.parquet"
run "rosbags-dataframe /joint_states" "$py" "$work/rosbags_df.py" "$bag" /joint_states "$work/js_rosbags.parquet"

echo
echo "ratios (median time / bagscope clocks; and bagscope clocks / decompress only):"
clocks=$(printf '%s\n' "${results[@]}" | awk '/^bagscope clocks/ {print $(NF-1)}')
floor=$(printf '%s\n' "${results[@]}" | awk '/^decompress only/ {print $(NF-1)}')
printf '%s\n' "${results[@]}" | while read -r line; do
  t=$(echo "$line" | awk '{print $(NF-1)}')
  name=$(echo "$line" | awk '{$NF=""; $(NF-1)=""; print}')
  awk -v n="$name" -v t="$t" -v c="$clocks" 'BEGIN {printf "  %-34s %7.1fx bagscope clocks\n", n, t/c}'
done
awk -v c="$clocks" -v f="$floor" 'BEGIN {printf "  bagscope clocks is %.2fx the decompression-only floor\n", c/f}'
line() { printf '%s\n' "${results[@]}" | grep "^$1"; }
be=$(line "bagscope export"); re=$(line "rosbags-dataframe")
awk -v b="$be" -v r="$re" 'BEGIN {
  nb = split(b, x, " "); nr = split(r, y, " ");
  printf "  export /joint_states: bagscope %.1fx faster than rosbags-dataframe, %.1fx less peak memory\n",
    y[nr-1] / x[nb-1], y[nr] / x[nb] }'
