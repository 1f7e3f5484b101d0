#!/usr/bin/env bash
# observe's outputs from two builds compared (observations streamed in row
# groups must leave the outputs as they were): every file under OUT (observations.parquet,
# rejections.parquet, the LeRobot dataset) byte for byte, and where the bytes differ the
# rows read back by pyarrow (a table of more than 65 536 rows is now written in row groups of
# that many rows, so its bytes differ from a table written whole while its rows do not);
# `--json`'s report with the output folder's name masked.
#
#   bench/observe_outputs.sh OLD_BIN NEW_BIN [WORK_DIR]
#
# Cases: observe's benchmark bag (synth perf_observe: 4 cameras, 500 Hz state; with and
# without --with-fields), the issue's benchmark contract on synth perf (a 1 kHz anchor and an
# interpolated 1 kHz IMU, with a LeRobot dataset: more than one row group), sim-stamped
# commands mapped through /clock (arm_sim), a simulator reset (sim_reset), a TF gate
# (arm_tf, sensors_tf with a LeRobot dataset), ../shared/bags/arm_real and its .db3 form. PYTHON (default
# target/py-venv/bin/python) reads the Parquet files. PERF_N and OBS_N size the two
# benchmark bags (defaults 600000 and 300000 messages).
set -uo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/observe_outputs.sh OLD_BIN NEW_BIN [WORK_DIR]}
new=${2:?usage: bench/observe_outputs.sh OLD_BIN NEW_BIN [WORK_DIR]}
work=${3:-target/observe-outputs}
py=${PYTHON:-target/py-venv/bin/python}
PERF_N=${PERF_N:-600000}
OBS_N=${OBS_N:-300000}
mkdir -p "$work/bags" "$work/contracts"

[ -f "$work/bags/perf_observe/perf_observe/perf_observe.mcap" ] ||
  "$new" synth perf_observe -o "$work/bags/perf_observe" --messages "$OBS_N" >/dev/null
[ -f "$work/bags/perf/perf/perf.mcap" ] ||
  "$new" synth perf -o "$work/bags/perf" --messages "$PERF_N" >/dev/null
for s in arm_sim sim_reset arm_tf sensors_tf; do
  [ -d "$work/bags/$s" ] || "$new" synth "$s" -o "$work/bags" >/dev/null
done

c=$work/contracts
cat >"$c/cameras.yaml" <<'YAML'
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
  - topic: /imu
    mode: hold
    max_gap: 5ms
freshness: {max_age: 100ms}
YAML
cat >"$c/perf.yaml" <<'YAML'
anchor: /joint_states
state:
  - topic: /imu
    mode: interpolate
    max_gap: 50ms
YAML
cat >"$c/arm_sim.yaml" <<'YAML'
anchor: /arm_cmd
state:
  - topic: /joint_states
    mode: interpolate
    max_gap: 50ms
freshness: {max_age: 30ms}
YAML
cat >"$c/sim_reset.yaml" <<'YAML'
anchor: /joint_states
freshness: {max_age: 50ms}
YAML
cat >"$c/arm_tf.yaml" <<'YAML'
anchor: /arm_cmd
members:
  - name: state
    policy: approx-py
    topics: [/joint_states]
    queue: 5
    slop: 20ms
tf: {target_frame: odom}
YAML
cat >"$c/sensors_tf.yaml" <<'YAML'
anchor: /camera/image_raw
members:
  - name: lidar
    policy: approx
    topics: [/lidar/points]
    queue: 10
state:
  - topic: /imu/data
    mode: nearest
    max_gap: 20ms
tf: {target_frame: odom}
YAML
cat >"$c/arm_real.yaml" <<'YAML'
anchor: /arm_cmd
state:
  - topic: /joint_states
    mode: interpolate
    max_gap: 50ms
YAML

b=$work/bags
cases=(
  "perf_observe|$b/perf_observe/perf_observe/perf_observe.mcap|cameras.yaml|"
  "perf_observe_fields|$b/perf_observe/perf_observe/perf_observe.mcap|cameras.yaml|--with-fields"
  "perf|$b/perf/perf/perf.mcap|perf.yaml|--layout lerobot --action /imu --task hold"
  "arm_sim|$b/arm_sim|arm_sim.yaml|"
  "sim_reset|$b/sim_reset|sim_reset.yaml|"
  "arm_tf|$b/arm_tf|arm_tf.yaml|"
  "sensors_tf|$b/sensors_tf|sensors_tf.yaml|--layout lerobot --action /imu/data --task look"
  "arm_real|../shared/bags/arm_real|arm_real.yaml|"
  "arm_real_db3|tests/data/db3/arm_real|arm_real.yaml|"
)

same=0
differ=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name bag contract extra <<<"$entry"
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    out="$work/out/$side/$name"
    rm -rf "$out"
    mkdir -p "$(dirname "$out")"
    # shellcheck disable=SC2086
    "$bin" observe "$bag" --contract "$c/$contract" -o "$out" $extra --json \
      >"$work/out/$side/$name.json" 2>"$work/out/$side/$name.err"
    echo "exit $?" >>"$work/out/$side/$name.json"
    sed -i "s#$work/out/$side/##g" "$work/out/$side/$name.json"
  done
  "$py" - "$work/out/old/$name" "$work/out/new/$name" "$work/out/old/$name.json" \
    "$work/out/new/$name.json" "$name" <<'PY'
import filecmp, os, sys
import pyarrow.parquet as pq
a, b, ja, jb, name = sys.argv[1:]
def files(root):
    out = []
    for d, _, fs in os.walk(root):
        out += [os.path.relpath(os.path.join(d, f), root) for f in fs]
    return sorted(out)
bad = []
notes = []
if open(ja).read() != open(jb).read():
    bad.append("--json report")
fa, fb = files(a), files(b)
if fa != fb:
    bad.append(f"files {fa} vs {fb}")
for f in fa:
    if f not in fb:
        continue
    pa_, pb_ = os.path.join(a, f), os.path.join(b, f)
    if filecmp.cmp(pa_, pb_, shallow=False):
        continue
    if f.endswith(".parquet"):
        ta, tb = pq.read_table(pa_), pq.read_table(pb_)
        if ta.schema == tb.schema and ta.to_pylist() == tb.to_pylist():
            ga, gb = pq.ParquetFile(pa_).num_row_groups, pq.ParquetFile(pb_).num_row_groups
            notes.append(f"{f}: same {ta.num_rows} rows, {ga} vs {gb} row groups")
            continue
    bad.append(f)
rows = ""
obs = os.path.join(b, "observations.parquet")
if os.path.exists(obs):
    rows = f" ({pq.ParquetFile(obs).metadata.num_rows} observations)"
if bad:
    print(f"{name}{rows}: DIFFERENT: {', '.join(bad)}")
    sys.exit(1)
print(f"{name}{rows}: identical" + (f" ({'; '.join(notes)})" if notes else " bytes"))
PY
  if [ $? -eq 0 ]; then same=$((same + 1)); else differ=$((differ + 1)); fi
done
echo "cases: $((same + differ)), same outputs: $same, different: $differ"
[ "$differ" -eq 0 ]
