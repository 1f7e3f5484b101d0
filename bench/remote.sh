#!/usr/bin/env bash
# Reading only what the question needs (issue: bags in object storage): requests and bytes per
# command against the object's size, a 1 s cut and `echo --limit 1` on a bag and on one ten
# times longer (their cost must not grow with the bag), a remote full scan against a plain
# parallel ranged download of the same object from the same server, and locally the windowed
# reads against a full `clocks` scan.
#
#   bench/remote.sh [MESSAGES]      (default 300000: a 100 s bag and one of 10x that; RUNS=3)
#
#   info --fast requests                          target <= 4
#   1 s cut, echo --limit 1: time 10x bag / 1x     target ~ 1 (independent of the bag's length)
#   clocks (remote) / parallel ranged download    target <= 1.3
#     on loopback (the CPU limits both: on 2 cores the server, the client's HTTP and the
#     decode share them) and on a link of LINK_MBPS MB/s (default 250, about 2 Gbit/s: the
#     network limits the download, and the scan's decode must hide behind it)
#   local 1 s cut, local echo --limit 1 / clocks  target <= 0.05
#
# Requests and bytes are counted against a real S3 API (moto's server, target/s3-venv, which
# .ci/run makes); times are taken against bench/range_server.py, a threaded static file server
# with byte ranges (moto reads the whole object for every range request, so its times grow with
# the object whatever is asked). The download floor is bench/ranged_download.py (8 ranged GETs
# in flight, 16 MiB each) from that same server. All on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}
RUNS=${RUNS:-3}
work=${BENCH_DIR:-target/remote-bench}
tgt=${CARGO_TARGET_DIR:-target}
mkdir -p "$work"
[ -n "${BIN:-}" ] || cargo build --release -q -p bagscope-cli
bin=${BIN:-$tgt/release/bagscope}
moto=${BAGSCOPE_MOTO_SERVER:-target/s3-venv/bin/moto_server}
[ -x "$moto" ] || { echo "needs $moto (python3 -m venv target/s3-venv && target/s3-venv/bin/pip install -r tests/interop/requirements-s3.txt)"; exit 1; }

for n in "$N" "$((N * 10))"; do
  [ -f "$work/perf_$n/perf/perf.mcap" ] || "$bin" synth perf -o "$work/perf_$n" --messages "$n" >/dev/null
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$moto" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto_pid=$!
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/www"
for n in "$N" "$((N * 10))"; do ln -sf "$(realpath "$work/perf_$n/perf/perf.mcap")" "$work/www/perf_$n.mcap"; done
python3 bench/range_server.py "$work/www" "$hport" &
http_pid=$!
LINK_MBPS=${LINK_MBPS:-250}
lport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 bench/range_server.py "$work/www" "$lport" "$LINK_MBPS" &
link_pid=$!
trap 'kill $moto_pid $http_pid $link_pid 2>/dev/null' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$hport) 2>/dev/null && break; sleep 0.1; done
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$lport) 2>/dev/null && break; sleep 0.1; done
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
auth="Authorization: AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
curl -s -H "$auth" -X PUT "http://127.0.0.1:$port/bench" >/dev/null
for n in "$N" "$((N * 10))"; do
  curl -s -H "$auth" -H "Content-Type: application/octet-stream" -H "Expect:" -X PUT \
    --data-binary @"$work/perf_$n/perf/perf.mcap" "http://127.0.0.1:$port/bench/perf_$n.mcap" >/dev/null
done
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true

# median wall seconds of RUNS runs of "$@" (stdout dropped)
median() {
  local ts=()
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s.%N)
    ts+=("$(echo "$t1 - $t0" | bc -l)")
  done
  printf '%s\n' "${ts[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# "requests bytes" of one run ("$@" with -v: bagscope prints its object-storage counters)
io() { "$@" -v 2>&1 >/dev/null | awk '/^object storage:/ {print $3, $5}' | tail -1; }

echo "# bench/remote.sh $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| bag | object bytes | command | S3 requests | bytes read | share of the object | median s (HTTP) |"
echo "|---|---|---|---|---|---|---|"
declare -A T
for n in "$N" "$((N * 10))"; do
  url="s3://bench/perf_$n.mcap"
  hurl="http://127.0.0.1:$hport/perf_$n.mcap"
  size=$(stat -c %s "$work/perf_$n/perf/perf.mcap")
  rm -f "$work/cut.mcap"
  cmds=(
    "info --fast|info URL --fast --json"
    "info|info URL --json"
    "echo --start +50 --limit 1|echo URL --topic /imu --start +50 --limit 1 --json"
    "convert 1 s|convert URL $work/cut.mcap --start +50 --end +51 --force"
    "clocks|clocks URL --json"
  )
  for c in "${cmds[@]}"; do
    name=${c%%|*}; args=${c#*|}
    # shellcheck disable=SC2086
    read -r req bytes < <(io "$bin" ${args/URL/$url})
    rm -f "$work/cut.mcap"
    # shellcheck disable=SC2086
    t=$(median "$bin" ${args/URL/$hurl})
    T["$n|$name"]=$t
    share=$(echo "scale=4; $bytes / $size" | bc -l)
    echo "| perf_$n | $size | $name | $req | $bytes | $share | $t |"
  done
  T["$n|download"]=$(median python3 bench/ranged_download.py "$hport" "perf_$n.mcap")
  echo "| perf_$n | $size | plain parallel ranged download | - | $size | 1 | ${T["$n|download"]} |"
  T["$n|link clocks"]=$(median "$bin" clocks "http://127.0.0.1:$lport/perf_$n.mcap" --json)
  T["$n|link download"]=$(median python3 bench/ranged_download.py "$lport" "perf_$n.mcap")
  echo "| perf_$n | $size | clocks, $LINK_MBPS MB/s link | - | - | - | ${T["$n|link clocks"]} |"
  echo "| perf_$n | $size | plain parallel ranged download, $LINK_MBPS MB/s link | - | $size | 1 | ${T["$n|link download"]} |"
done
big=$((N * 10))
echo
echo "ratios:"
for name in "echo --start +50 --limit 1" "convert 1 s"; do
  echo "  $name: bag of $big / bag of $N = $(echo "scale=3; ${T["$big|$name"]} / ${T["$N|$name"]}" | bc -l)   (target ~ 1)"
done
for n in "$N" "$big"; do
  echo "  clocks remote / ranged download (perf_$n), loopback = $(echo "scale=3; ${T["$n|clocks"]} / ${T["$n|download"]}" | bc -l), $LINK_MBPS MB/s link = $(echo "scale=3; ${T["$n|link clocks"]} / ${T["$n|link download"]}" | bc -l)   (target <= 1.3)"
done

# Locally: the same windowed reads against a full clocks scan of the mapped file.
f="$work/perf_$big/perf/perf.mcap"
tc=$(median "$bin" clocks "$f" --json)
tcut=$(median "$bin" convert "$f" "$work/cut_local.mcap" --start +500 --end +501 --force)
tech=$(median "$bin" echo "$f" --topic /imu --start +500 --limit 1 --json)
rm -f "$work/cut_local.mcap"
echo "  local (perf_$big): clocks $tc s (remote over loopback / local = $(echo "scale=3; ${T["$big|clocks"]} / $tc" | bc -l)); 1 s cut / clocks = $(echo "scale=4; $tcut / $tc" | bc -l), echo --limit 1 / clocks = $(echo "scale=4; $tech / $tc" | bc -l)   (target <= 0.05)"
