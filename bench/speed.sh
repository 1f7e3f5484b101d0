#!/usr/bin/env bash
# The main job against one scan: each command's time as a ratio of what bounds it,
# measured back-to-back on the same bag, with the targets beside them.
#
#   bench/speed.sh [MESSAGES]        (default 3000000; RUNS=5 repetitions, medians reported)
#   BIN=old/bagscope FEATURES=none bench/speed.sh     (another build's clocks/check/report)
#
#   report          / clocks                  target <= 1.5
#   check           / clocks                  target <= 1.3
#   export /joint_states / typed decode of every /joint_states message on all cores
#                                             target <= 2.5
#   batch of 500 small bags / info of each in one process
#                                             target <= 1.5
#   report peak RSS / clocks peak RSS         target <= 1.3
#
# Wall-time ratios are the targets; CPU-time ratios (user + system) are printed too, since on a
# machine shared with other work they move less.
#
# The commands of each comparison run alternately (a, b, a, b, ...), so that load from other
# processes falls on both; the machine's load average is printed with the results.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-5}
work=${BENCH_DIR:-target/speed}
tgt=${CARGO_TARGET_DIR:-target}
mkdir -p "$work"

# FEATURES=none: a build without polars (export and batch are then left out); BIN=PATH: that
# binary, nothing built.
if [ -n "${BIN:-}" ]; then
  :
elif [ "${FEATURES:-default}" = none ]; then
  cargo build --release -q -p bagscope-cli --no-default-features
else
  cargo build --release -q -p bagscope-cli
  cargo build --release -q -p bagscope --example decode_topic --example info_each
fi
bin=${BIN:-$tgt/release/bagscope}
with_export=1
"$bin" export --help >/dev/null 2>&1 || with_export=0
decode=$tgt/release/examples/decode_topic
info_each=$tgt/release/examples/info_each
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)"; exit 1; }

bag="$work/perf_$N/perf"
if [ ! -f "$bag/perf.mcap" ]; then
  "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null
fi
mcapf="$bag/perf.mcap"

# 500 small bags: the shipped bags, copied round-robin into their own folders.
small="$work/small500"
if [ ! -f "$small/.done" ]; then
  rm -rf "$small" && mkdir -p "$small"
  mapfile -t shipped < <(find bags -mindepth 1 -maxdepth 1 -type d | sort)
  for i in $(seq 0 499); do
    src=${shipped[$((i % ${#shipped[@]}))]}
    cp -r "$src" "$small/$(printf '%03d' "$i")_$(basename "$src")"
  done
  touch "$small/.done"
fi
find "$small" -mindepth 1 -maxdepth 1 -type d | sort >"$work/small500.list"

# one NAME CMD...: one timed run; appends "seconds peak_kb" to $work/NAME.txt
one() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -o "$work/time.txt" -f '%M %U %S' "$@" >/dev/null 2>/dev/null || true
  t1=$(date +%s%N)
  # wall seconds, peak KB, CPU seconds (user + system)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }') $(tail -n 1 "$work/time.txt" | awk '{printf "%d %.2f", $1, $2 + $3}')" >>"$work/$name.txt"
}
med() { sort -g -k1,1 "$work/$1.txt" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu() { sort -g -k3,3 "$work/$1.txt" | awk '{a[NR]=$3} END {print a[int((NR+1)/2)]}'; }
peak() { sort -g -k2,2 "$work/$1.txt" | tail -n 1 | awk '{print $2}'; }

names=(clocks check report decode export info_each batch)
for n in "${names[@]}"; do : >"$work/$n.txt"; done
echo "messages: $N, runs: $RUNS, cores: $(nproc), $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Warm the page cache once.
cat "$mcapf" >/dev/null
for _ in $(seq "$RUNS"); do
  one clocks "$bin" clocks "$mcapf" --json
  one check "$bin" check "$mcapf" --json
  rm -rf "$work/report" && one report "$bin" report "$mcapf" -o "$work/report"
  if [ "$with_export" = 1 ]; then
    one decode "$decode" "$mcapf" /joint_states
    one export "$bin" export "$mcapf" --topics /joint_states -o "$work/js.parquet"
    one info_each "$info_each" "@$work/small500.list"
    rm -rf "$work/batch" && one batch "$bin" batch "$small" -o "$work/batch" --force
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
[ "$with_export" = 1 ] || names=(clocks check report)
for n in "${names[@]}"; do
  printf '  %-10s %8.3f s wall  %7.2f s CPU  %8d KB peak\n' "$n" "$(med "$n")" "$(cpu "$n")" "$(peak "$n")"
done
echo
ratio() { # label a b target
  awk -v l="$1" -v a="$2" -v b="$3" -v t="$4" 'BEGIN {
    r = a / b; printf "  %-44s %5.2fx  (target <= %.1fx) %s\n", l, r, t, (r <= t ? "met" : "NOT met") }'
}
ratio "report / clocks" "$(med report)" "$(med clocks)" 1.5
ratio "check / clocks" "$(med check)" "$(med clocks)" 1.3
ratio "report / clocks, CPU time" "$(cpu report)" "$(cpu clocks)" 1.5
ratio "check / clocks, CPU time" "$(cpu check)" "$(cpu clocks)" 1.3
if [ "$with_export" = 1 ]; then
  ratio "export /joint_states / typed decode" "$(med export)" "$(med decode)" 2.5
  ratio "batch 500 bags / info of each" "$(med batch)" "$(med info_each)" 1.5
fi
ratio "report peak RSS / clocks peak RSS" "$(peak report)" "$(peak clocks)" 1.3
