#!/usr/bin/env bash
# The Python package against the CLI, on the same bags.
#
#   bench/python.sh [MESSAGES]      (default 3000000; RUNS=3 repetitions, medians reported)
#
# 1. builds the CLI and the extension (release; the extension into target/py-venv, see
#    .ci/run for the venv),
# 2. writes the benchmark bag (`bagscope synth perf`, as bench/peers.sh),
# 3. times `bag.timing()` (pyarrow table of every message) against `bagscope clocks` and
#    `bagscope export --timing-only`, with wall time and peak memory,
# 4. times Ray (`bagscope.ray.read_bags`, 2 CPUs) against `bagscope batch --jobs 2` over BAGS
#    small bags (default 200; `bagscope synth` variants), in bags per second per core.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-3}
BAGS=${BAGS:-200}
work=${BENCH_DIR:-target/bench-python}
py=${BAGSCOPE_PYTHON:-target/py-venv/bin/python}
mkdir -p "$work"

cargo build --release -q -p bagscope-cli
VIRTUAL_ENV="$PWD/target/py-venv" PATH="$PWD/target/py-venv/bin:$PATH" \
  maturin develop --release -q -m crates/python/Cargo.toml
bin=target/release/bagscope

bag="$work/perf_$N/perf"
[ -f "$bag/perf.mcap" ] || "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null
mcapf="$bag/perf.mcap"
du -h "$mcapf"

cat > "$work/timing.py" <<'PY'
import sys, pyarrow as pa, bagscope
t = pa.table(bagscope.open(sys.argv[1]).timing())
assert t.num_rows > 0
PY

results=()
run() {
  local name=$1; shift
  local times=() mem=0
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -o "$work/time.txt" -f '%e %M' "$@" >/dev/null 2>/dev/null || true
    t1=$(date +%s%N)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')")
    local m; m=$(tail -n 1 "$work/time.txt"); m=${m#* }
    [ "$m" -gt "$mem" ] && mem=$m
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  results+=("$name|$med|$mem")
  printf '  %-40s %8.4f s  %8d KB\n' "$name" "$med" "$mem"
}

command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)"; exit 1; }
echo "runs: $RUNS, messages: $N, cores: $(nproc), $(date -u +%Y-%m-%d)"
run "bagscope clocks" "$bin" clocks "$mcapf" --json
run "bagscope export --timing-only" "$bin" export "$mcapf" --timing-only -o "$work/t.parquet"
run "python: pa.table(bag.timing())" "$py" "$work/timing.py" "$mcapf"
run "python: import bagscope, pyarrow" "$py" -c "import bagscope, pyarrow"

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
cat > "$work/ray_fleet.py" <<'PY'
import glob, sys, time, ray, bagscope.ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
paths = sorted(glob.glob(sys.argv[1] + "/*.mcap"))
bagscope.ray.read_bags(paths[:4]).materialize()  # workers started and imported
t0 = time.monotonic()
n = bagscope.ray.read_bags(paths).count()
dt = time.monotonic() - t0
print(f"ray: {len(paths)} bags, {n} rows, {dt:.2f} s, {len(paths) / dt / 2:.1f} bags/s/core")
PY
t0=$(date +%s%N)
"$bin" batch "$fleet" -o "$work/batch_out" --jobs 2 --force >/dev/null 2>&1 || true
t1=$(date +%s%N)
awk -v a="$t0" -v b="$t1" -v n="$BAGS" 'BEGIN { d = (b - a) / 1e9; printf "batch: %d bags, %.2f s, %.1f bags/s/core\n", n, d, n / d / 2 }'
"$py" "$work/ray_fleet.py" "$fleet"
