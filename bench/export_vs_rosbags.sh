#!/usr/bin/env bash
# Export throughput: `bagscope export` against rosbags-dataframe (Python, pip) on the same bag,
# written by `bagscope synth`. Prints messages/s of each and the ratio.
#
#   bench/export_vs_rosbags.sh [SCENARIO [TOPIC [REPEATS]]]     (default: arm_split /joint_states 5)
#
# bagscope is timed as a whole process (start-up, clocks pass, decode, Parquet write);
# rosbags-dataframe inside Python, after its imports (open, get_dataframe, to_parquet): the
# comparison favours rosbags. Best of REPEATS runs each. Needs a Rust toolchain, python3 and
# pip access (rosbags-dataframe and pyarrow go into a venv under the work directory).
set -euo pipefail

SCENARIO=${1:-arm_split}
TOPIC=${2:-/joint_states}
REPEATS=${3:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${BENCH_DIR:-$(mktemp -d)}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

# BAGSCOPE=path/to/bagscope skips the build (e.g. to check the script with a debug binary).
if [ -z "${BAGSCOPE:-}" ]; then
    echo "building bagscope (release)…" >&2
    (cd "$ROOT" && cargo build --release -q -p bagscope-cli)
    BAGSCOPE=$TARGET/release/bagscope
fi

"$BAGSCOPE" synth "$SCENARIO" -o "$WORK/bags" >/dev/null
BAG=$WORK/bags/$SCENARIO

if [ ! -x "$WORK/venv/bin/python" ]; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install --quiet --disable-pip-version-check rosbags-dataframe pyarrow
fi
PY=$WORK/venv/bin/python

COUNT=$("$BAGSCOPE" info "$BAG" --json | "$PY" -c "import json,sys; r=json.load(sys.stdin); print(next(t['count'] for t in r['topics'] if t['topic']=='$TOPIC'))")
FIELDS=$("$PY" - "$BAG" "$TOPIC" <<'PYEOF'
import sys
from pathlib import Path
from rosbags.highlevel import AnyReader
with AnyReader([Path(sys.argv[1])]) as r:
    conn = next(c for c in r.connections if c.topic == sys.argv[2])
    fields = r.typestore.fielddefs[conn.msgtype][1]
    print(",".join(name for name, _ in fields))
PYEOF
)

best() { sort -g | head -1; }

bagscope_times=$(for _ in $(seq "$REPEATS"); do
    s=$(date +%s.%N)
    "$BAGSCOPE" export "$BAG" --topics "$TOPIC" -o "$WORK/bagscope.parquet" >/dev/null || [ $? -eq 3 ]
    e=$(date +%s.%N)
    echo "$e - $s" | bc -l
done | best)

rosbags_times=$(for _ in $(seq "$REPEATS"); do
    "$PY" - "$BAG" "$TOPIC" "$FIELDS" "$WORK/rosbags.parquet" <<'PYEOF'
import sys, time
from pathlib import Path
from rosbags.highlevel import AnyReader
from rosbags.dataframe import get_dataframe
bag, topic, fields, out = sys.argv[1:5]
t0 = time.perf_counter()
with AnyReader([Path(bag)]) as r:
    df = get_dataframe(r, topic, fields.split(","))
# Lists and nested values as strings: pyarrow cannot store every object column as is.
df = df.reset_index().astype({c: str for c in df.columns if df[c].dtype == object})
df.to_parquet(out)
print(time.perf_counter() - t0)
PYEOF
done | best)

"$PY" - "$COUNT" "$bagscope_times" "$rosbags_times" "$SCENARIO" "$TOPIC" <<'PYEOF'
import sys
n, b, r = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"bag {sys.argv[4]}, topic {sys.argv[5]}: {n} messages")
print(f"bagscope export:    {b*1e3:8.1f} ms  {n/b:12.0f} msg/s  (whole process)")
print(f"rosbags-dataframe:  {r*1e3:8.1f} ms  {n/r:12.0f} msg/s  (after imports)")
print(f"ratio (bagscope / rosbags throughput): {r/b:.1f}x")
PYEOF
