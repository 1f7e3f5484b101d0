#!/usr/bin/env bash
# The Python package against the CLI and against rosbags, on the same bags.
#
#   bench/python.sh [MESSAGES]      (default 3000000; RUNS=3 rounds, medians reported)
#
# 1. builds the CLI and the extension in one release build (`cargo build --release -p
#    bagscope-cli -p bagscope-python`: polars compiled once, with the CLI's features; a
#    `maturin develop --release` resolves features for the extension alone and compiles polars
#    again) and puts the extension with the package's modules in $work/pkg (PYTHONPATH), as
#    tests/python.rs does;
# 2. writes the benchmark bag (`bagscope synth perf`, as bench/peers.sh);
# 3. times `pa.table(bag.timing())` against `bagscope clocks` and `bagscope export
#    --timing-only`, the commands alternated in each round: wall time, CPU time (user + sys) and
#    peak memory (max RSS) of each; then rosbags' stamp extraction (bench/rosbags_stamps.py, in
#    a venv of its own) once;
# 4. times Ray (`bagscope.ray.read_bags`, 2 CPUs, workers started before the clock runs)
#    against `bagscope batch --jobs 2` over BAGS small bags (default 200; `bagscope synth`
#    variants), alternated FLEET_RUNS times (default 2), in bags per second per core.
#
# The Python is BAGSCOPE_PYTHON (default target/py-venv/bin/python: pyarrow and Ray).
# PACKAGE=installed uses the bagscope package installed in it (`pip install ./crates/python`,
# a release build) instead of building the extension.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
RUNS=${RUNS:-3}
BAGS=${BAGS:-200}
FLEET_RUNS=${FLEET_RUNS:-2}
target=${CARGO_TARGET_DIR:-target}
work=${BENCH_DIR:-$target/bench-python}
py=${BAGSCOPE_PYTHON:-target/py-venv/bin/python}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)"; exit 1; }

if [ "${PACKAGE:-}" = installed ]; then
  # The package as `pip install ./crates/python` put it into BAGSCOPE_PYTHON's environment.
  cargo build --release -q -p bagscope-cli
else
  cargo build --release -q -p bagscope-cli -p bagscope-python
  pkg="$work/pkg"
  rm -rf "$pkg" && mkdir -p "$pkg/bagscope"
  cp crates/python/python/bagscope/*.py crates/python/python/bagscope/*.pyi \
    crates/python/python/bagscope/py.typed "$pkg/bagscope/"
  cp "$target/release/lib_bagscope.so" "$pkg/bagscope/_bagscope.abi3.so"
  export PYTHONPATH="$PWD/$pkg"
fi
bin=$target/release/bagscope

rvenv="$work/rosbags-venv"
if [ ! -x "$rvenv/bin/python" ]; then
  python3 -m venv "$rvenv"
  "$rvenv/bin/pip" install -q --only-binary=:all: rosbags==0.11.9
fi

bag="$work/perf_$N/perf"
[ -f "$bag/perf.mcap" ] || "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null
mcapf="$bag/perf.mcap"

cat > "$work/timing.py" <<'PY'
import sys, pyarrow as pa, bagscope
t = pa.table(bagscope.open(sys.argv[1]).timing())
assert t.num_rows > 0
PY

# measure NAME CMD...: one run; appends "NAME wall cpu peak_kb" to $work/runs.txt.
measure() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -o "$work/time.txt" -f '%U %S %M' "$@" >/dev/null 2>"$work/stderr.txt" \
    || { echo "$name failed:"; cat "$work/stderr.txt"; exit 1; }
  t1=$(date +%s%N)
  read -r u s m < <(tail -n 1 "$work/time.txt")
  awk -v n="$name" -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v m="$m" \
    'BEGIN { printf "%s|%.3f|%.2f|%d\n", n, (b - a) / 1e9, u + s, m }' >> "$work/runs.txt"
}

# Medians of wall and CPU, the largest peak, per name, in first-seen order.
summary() {
  awk -F'|' '
    !($1 in seen) { seen[$1] = 1; order[++k] = $1 }
    { n[$1]++; w[$1, n[$1]] = $2; c[$1, n[$1]] = $3; if ($4 > m[$1]) m[$1] = $4 }
    function med(name, arr,   i, j, t, v, cnt) {
      cnt = n[name]
      for (i = 1; i <= cnt; i++) v[i] = arr[name, i]
      for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      return v[int((cnt + 1) / 2)]
    }
    END {
      printf "| %-34s | %9s | %9s | %9s | %4s |\n", "command", "wall s", "CPU s", "peak MB", "runs"
      printf "|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---:"
      for (i = 1; i <= k; i++) {
        x = order[i]
        printf "| %-34s | %9.3f | %9.2f | %9.0f | %4d |\n", x, med(x, w), med(x, c), m[x] / 1024, n[x]
      }
    }' "$work/runs.txt"
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ), cores: $(nproc), messages: $N, rounds: $RUNS"
echo "bag: $(du -h "$mcapf" | cut -f1) ($mcapf)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$work/runs.txt"
measure "import bagscope, pyarrow" "$py" -c "import bagscope, pyarrow"
for _ in $(seq "$RUNS"); do
  measure "bagscope clocks --json" "$bin" clocks "$mcapf" --json
  measure "python: pa.table(bag.timing())" "$py" "$work/timing.py" "$mcapf"
  measure "bagscope export --timing-only" "$bin" export "$mcapf" --timing-only -o "$work/t.parquet"
done
measure "rosbags stamp extraction" "$rvenv/bin/python" bench/rosbags_stamps.py "$bag"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
summary

# The call itself, in one process, against `clocks` (alternated): the process times above also
# hold Python's start, the imports (bagscope, pyarrow) and pyarrow's first `pa.table` call,
# which imports pandas (about 0.5 s here) to check whether its argument is a DataFrame.
cat > "$work/timing_call.py" <<'PY'
import sys, time, pyarrow as pa, bagscope
bag = bagscope.open(sys.argv[1])
t0 = time.monotonic()
t = bag.timing()
t1 = time.monotonic()
n = pa.RecordBatchReader.from_stream(t).read_all().num_rows
t2 = time.monotonic()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {n}")
PY
calls=()
for _ in $(seq "$RUNS"); do
  t0=$(date +%s%N); "$bin" clocks "$mcapf" --json >/dev/null; t1=$(date +%s%N)
  read -r call imp rows < <("$py" "$work/timing_call.py" "$mcapf")
  calls+=("$(awk -v a="$t0" -v b="$t1" -v c="$call" -v i="$imp" \
    'BEGIN { printf "%.3f %.3f %.3f %.2f", (b - a) / 1e9, c, i, c / ((b - a) / 1e9) }')")
done
echo "clocks wall s | bag.timing() call s | Arrow import s | call / clocks  (rows: $rows)"
printf '%s\n' "${calls[@]}" | sort -t' ' -k4 -n

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
import glob, os, sys, time, ray, bagscope.ray
runs = int(sys.argv[2])
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
paths = sorted(glob.glob(sys.argv[1] + "/*.mcap"))
bagscope.ray.read_bags(paths[:64]).materialize()  # both workers started and imported
for _ in range(runs):
    # Alternated with `bagscope batch` by the shell: it runs between these (see below).
    t0 = time.monotonic()
    n = bagscope.ray.read_bags(paths).count()
    dt = time.monotonic() - t0
    print(f"ray: {len(paths)} bags, {n} rows, {dt:.2f} s, {len(paths) / dt / 2:.2f} bags/s/core", flush=True)
    if _ + 1 < runs:
        os.system(sys.argv[3])
PY
batch_cmd="t0=\$(date +%s%N); '$bin' batch '$fleet' -o '$work/batch_out' --jobs 2 --force >/dev/null 2>&1; \
t1=\$(date +%s%N); awk -v a=\$t0 -v b=\$t1 -v n=$BAGS 'BEGIN { d = (b - a) / 1e9; printf \"batch: %d bags, %.2f s, %.2f bags/s/core\\n\", n, d, n / d / 2 }'"
echo "fleet: $BAGS bags ($(du -sh "$fleet" | cut -f1)), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bash -c "$batch_cmd"
"$py" "$work/ray_fleet.py" "$fleet" "$FLEET_RUNS" "$batch_cmd"
bash -c "$batch_cmd"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
