#!/usr/bin/env bash
# Writes the --json output of every analysis command on every bag of bags/, ../shared/bags and
# ../shared/corpus/ros2{,-more} into OUT_DIR (one file per bag and command), so that two builds can be
# compared with `diff -r`: a refactor or a speed-up must leave every output byte-identical.
# `export` is included: every topic's table as Parquet (default and `--explode`) and as CSV;
# the Parquet files are read back and written as JSON rows (by pyarrow, from $PYTHON, default
# python3; skipped with a note when pyarrow is missing), so data is compared, not file bytes.
#
#   bench/json_outputs.sh [--bin PATH] OUT_DIR
#   diff -r before/ after/ && echo identical
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/bagscope
if [ "${1:-}" = "--bin" ]; then BIN=$2; shift 2; fi
OUT=${1:?usage: bench/json_outputs.sh [--bin PATH] OUT_DIR}
mkdir -p "$OUT"
# Bag roots: folders with a metadata.yaml, and .mcap / .db3 files outside such folders (bags
# above 200 MB are left out to keep the run short).
mapfile -t bags < <(python3 - <<'PY'
import os
roots = []
for top in ["bags", "../shared/bags", "../shared/corpus/ros2", "../shared/corpus/ros2-more"]:
    if not os.path.isdir(top):
        continue
    for d, dirs, files in os.walk(top):
        dirs.sort()
        if "metadata.yaml" in files:
            size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
            if size <= 200e6:
                roots.append(d)
            dirs[:] = []
            continue
        for f in sorted(files):
            p = os.path.join(d, f)
            if f.endswith((".mcap", ".db3")) and os.path.getsize(p) <= 200e6:
                roots.append(p)
for r in roots:
    print(r)
PY
)
run() { # name bag args...
  local name=$1 bag=$2; shift 2
  local key
  key=$(echo "$bag" | sed 's#^\.\./##; s#[/ ]#_#g')
  "$BIN" "$@" --json >"$OUT/$key.$name.json" 2>/dev/null
  echo "exit $?" >>"$OUT/$key.$name.json"
}
PYTHON=${PYTHON:-python3}
have_pyarrow=1
"$PYTHON" -c 'import pyarrow.parquet' 2>/dev/null || {
  have_pyarrow=0
  echo "note: no pyarrow in $PYTHON: export tables are compared as CSV only"
}
# Parquet files read back as one JSON line per row (NaN and infinities as strings).
dump_parquet() { # FILE... -> FILE.rows.json beside each
  "$PYTHON" - "$@" <<'PY'
import json, math, sys
import pyarrow.parquet as pq
def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
for f in sys.argv[1:]:
    t = pq.read_table(f)
    with open(f + ".rows.json", "w") as out:
        out.write(json.dumps([str(x) for x in t.schema]) + "\n")
        for row in t.to_pylist():
            out.write(json.dumps({k: clean(v) for k, v in row.items()}) + "\n")
PY
}
# export of every topic: --json (output folder replaced by OUT), then the tables as data.
export_tables() { # bag
  local bag=$1 key tmp variant
  key=$(echo "$bag" | sed 's#^\.\./##; s#[/ ]#_#g')
  tmp="$OUT/.export"
  for variant in parquet explode csv; do
    rm -rf "$tmp"
    case $variant in
      parquet) "$BIN" export "$bag" -o "$tmp" --json ;;
      explode) "$BIN" export "$bag" -o "$tmp" --explode --json ;;
      csv) "$BIN" export "$bag" -o "$tmp" --format csv --json ;;
    esac 2>/dev/null | sed "s#$tmp#OUT#g" >"$OUT/$key.export-$variant.json"
    echo "exit ${PIPESTATUS[0]}" >>"$OUT/$key.export-$variant.json"
    [ -d "$tmp" ] || continue
    if [ "$variant" = csv ]; then
      for f in "$tmp"/*.csv; do [ -f "$f" ] && cp "$f" "$OUT/$key.export-csv.$(basename "$f")"; done
    elif [ "$have_pyarrow" = 1 ]; then
      mapfile -t files < <(find "$tmp" -name '*.parquet' | sort)
      if [ "${#files[@]}" -gt 0 ]; then
        dump_parquet "${files[@]}"
        for f in "${files[@]}"; do cp "$f.rows.json" "$OUT/$key.export-$variant.$(basename "$f").json"; done
      fi
    fi
  done
  rm -rf "$tmp"
}
for b in "${bags[@]}"; do
  run info "$b" info "$b"
  run info-fast "$b" info "$b" --fast
  run clocks "$b" clocks "$b"
  run check "$b" check "$b"
  truth="$b.truth.json"
  [ -f "${b%.mcap}.truth.json" ] && truth="${b%.mcap}.truth.json"
  if [ -f "$truth" ]; then
    read -r cmd resp pair < <(python3 - "$truth" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
pair = t.get("approx_pair") or t.get("exact_pair") or []
print(t.get("command_topic", "-"), t.get("response_topic", "-"), ",".join(pair) or "-")
PY
)
    if [ "$cmd" != "-" ]; then run match "$b" match "$b" --command "$cmd" --response "$resp"; fi
    if [ "$pair" != "-" ]; then
      run sync-approx "$b" sync "$b" --topics "$pair" --policy approx --queue 10
      run sync-recommend "$b" sync "$b" --topics "$pair" --recommend
    fi
  fi
  # Topics for the commands that take them: the first two stamped topics (clocks' order), the
  # first topic of all, and a TF frame when the bag has /tf.
  read -r first two tfframe < <("$BIN" clocks "$b" --json 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)
except Exception:
    print("- - -"); sys.exit()
ts = [t["topic"] for t in r.get("topics", [])]
st = [t["topic"] for t in r.get("topics", []) if t.get("source") == "header_stamp"]
edges = r.get("tf_edges") or []
frame = edges[0]["parent"] if edges else "-"
print(ts[0] if ts else "-", ",".join(st[:2]) if len(st) >= 2 else "-", frame or "-")
')
  if [ "$first" != "-" ]; then run echo "$b" echo "$b" --topic "$first" --limit 3; fi
  if [ "$two" != "-" ]; then
    run hist "$b" hist "$b" --topics "$two"
    run sync-exact "$b" sync "$b" --topics "$two" --policy exact
    run sync-approx-py "$b" sync "$b" --topics "$two"
    run sync-approx-py-30 "$b" sync "$b" --topics "$two" --slop 30
    if [ "$tfframe" != "-" ]; then
      run tf "$b" tf "$b" --target-frame "$tfframe" --topics "${two%%,*}"
    fi
  fi
  export_tables "$b"
  rm -rf "$OUT/.report" && "$BIN" report "$b" -o "$OUT/.report" >/dev/null 2>&1
  key=$(echo "$b" | sed 's#^\.\./##; s#[/ ]#_#g')
  if [ -f "$OUT/.report/report.json" ]; then cp "$OUT/.report/report.json" "$OUT/$key.report.json"; fi
  rm -rf "$OUT/.report"
done
echo "$(ls "$OUT" | wc -l) outputs in $OUT"
