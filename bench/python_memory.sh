#!/usr/bin/env bash
# memory (peak anonymous memory, RssAnon sampled every 2 ms) and time of the
# Python timing table against `bagscope clocks`, on the benchmark bag (`bagscope synth perf`).
#
#   bench/python_memory.sh [MESSAGES]     (default 3000000; RUNS=3 rounds alternated, medians)
#
# Per round, alternated: `bagscope clocks --json` (its peak RssAnon and wall time, sampled
# from outside by bench/memtime.py); `bag.timing()` in a Python process holding pyarrow and
# the opened bag (peak RssAnon during the call and `pa.RecordBatchReader.from_stream(t)
# .read_all()`, which takes the buffers without a copy and without `pa.table`'s import of
# pandas, 32 MB of its own; against the table's Arrow
# buffer bytes + the RssAnon after `import bagscope, pyarrow` and `bagscope.open`); and
# `bag.timing_batches()` read to its end batch by batch by `pa.RecordBatchReader` (the
# process's peak RssAnon and the time of the call and the reading). Prints the ratios the
# issue sets:
#   timing():         peak anon <= 1.1 x (Arrow bytes + anon after import and open)
#   timing_batches(): peak anon <= 1.2 x clocks' peak anon; time <= 2 x clocks' wall time
# and the anonymous memory `bagscope.open` adds (it reads the file's layout, nothing per
# message).
#
# BIN / PKG: a CLI binary and a folder holding the package (bagscope/ with _bagscope.abi3.so),
# nothing built; else the release build of the CLI and the extension (as bench/python.sh).
# PYTHON: default target/py-venv/bin/python (pyarrow).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}
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
bag="$work/perf_$N/perf/perf.mcap"
[ -f "$bag" ] || "$bin" synth perf -o "$work/perf_$N" --messages "$N" >/dev/null

cat > "$work/timing_memory.py" <<'PY'
import gc, json, os, sys, time
sys.path.insert(0, sys.argv[3])
from memtime import anon_sampler, status
import pyarrow as pa
import bagscope
before_open = status(os.getpid())["RssAnon"]
bag = bagscope.open(sys.argv[1])
base = status(os.getpid())["RssAnon"]
out = {"open_anon_mb": (base - before_open) / 2**20, "base_anon_mb": base / 2**20}
if sys.argv[2] == "timing":
    with anon_sampler() as s:
        t = bag.timing()
        # The table's own buffers, not copied (pa.table(t) would also import pandas, 32 MB
        # of its own, to ask whether t is a DataFrame).
        table = pa.RecordBatchReader.from_stream(t).read_all()
    out["arrow_mb"] = table.get_total_buffer_size() / 2**20
    out["rows"] = table.num_rows
else:
    with anon_sampler() as s:
        stream = bag.timing_batches()
        rows = 0
        for b in pa.RecordBatchReader.from_stream(stream):
            rows += b.num_rows
    out["rows"] = rows
out["peak_anon_mb"] = s.peak / 2**20
out["seconds"] = s.seconds
print(json.dumps(out))
PY

echo "date: $(date -u +%Y-%m-%dT%H:%MZ), cores: $(nproc), messages: $N, rounds: $RUNS"
echo "bag: $(du -h "$bag" | cut -f1) ($bag), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$bag" >/dev/null
runs="$work/python_memory_runs.jsonl"
: >"$runs"
for _ in $(seq "$RUNS"); do
  bench/memtime.py --label clocks -- "$bin" clocks "$bag" --json >>"$runs"
  "$py" "$work/timing_memory.py" "$bag" timing bench | sed 's/^{/{"label": "timing", /' >>"$runs"
  "$py" "$work/timing_memory.py" "$bag" batches bench | sed 's/^{/{"label": "batches", /' >>"$runs"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(label, key):
    return statistics.median(r[key] for r in rows if r["label"] == label)
c_anon, c_wall = med("clocks", "peak_anon_mb"), med("clocks", "wall_s")
t_peak, t_arrow, t_base = med("timing", "peak_anon_mb"), med("timing", "arrow_mb"), med("timing", "base_anon_mb")
b_peak, b_time = med("batches", "peak_anon_mb"), med("batches", "seconds")
opened = med("timing", "open_anon_mb")
print(f"| job | median | target |")
print(f"|---|---:|---|")
print(f"| `bagscope clocks` peak anon / wall | {c_anon:.0f} MB / {c_wall:.3f} s | |")
print(f"| anon added by `bagscope.open` | {opened:.1f} MB | nothing per message |")
r = t_peak / (t_arrow + t_base)
print(f"| `timing()` peak anon / (Arrow {t_arrow:.0f} MB + base {t_base:.0f} MB) | {t_peak:.0f} MB: {r:.2f}x | <= 1.1x {'met' if r <= 1.1 else 'NOT met'} |")
r = b_peak / c_anon
print(f"| `timing_batches()` peak anon / clocks' | {b_peak:.0f} MB: {r:.2f}x | <= 1.2x {'met' if r <= 1.2 else 'NOT met'} |")
r = b_time / c_wall
print(f"| `timing_batches()` read to the end / clocks' wall | {b_time:.3f} s: {r:.2f}x | <= 2x {'met' if r <= 2 else 'NOT met'} |")
print(f"rows: timing {med('timing', 'rows'):.0f}, batches {med('batches', 'rows'):.0f}")
PY
