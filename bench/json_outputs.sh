#!/usr/bin/env bash
# Writes the --json output of every analysis command on every bag of bags/, ../shared/bags and
# ../shared/corpus/ros2{,-more} into OUT_DIR (one file per bag and command), so that two builds can be
# compared with `diff -r`: a refactor or a speed-up must leave every output byte-identical.
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
  rm -rf "$OUT/.report" && "$BIN" report "$b" -o "$OUT/.report" >/dev/null 2>&1
  key=$(echo "$b" | sed 's#^\.\./##; s#[/ ]#_#g')
  if [ -f "$OUT/.report/report.json" ]; then cp "$OUT/.report/report.json" "$OUT/$key.report.json"; fi
  rm -rf "$OUT/.report"
done
echo "$(ls "$OUT" | wc -l) outputs in $OUT"
