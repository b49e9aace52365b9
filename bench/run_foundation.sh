#!/usr/bin/env bash
# Foundation benchmark: single-doc PUT at c=1 and c=32 and GET at c=32 against one settee node with
# fsync on, each run RUNS times; prints every run and the median. Bounded: RUNS x SECONDS per workload.
#   bash bench/run_foundation.sh            (RUNS=5 SECONDS=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-5}
BIN=${SETTEE_BIN:-build/settee}
LOADGEN=${LOADGEN:-build/settee_loadgen}
PORT=${PORT:-25984}
DATA=$(mktemp -d /tmp/settee-bench-XXXXXX)
SETTEE_ADMIN=bench:bench "$BIN" --data-dir "$DATA" --port "$PORT" > "$DATA.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$DATA.log"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/_up" >/dev/null && break; sleep 0.05; done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() {  # name, loadgen args...
  local name=$1; shift
  local rates=()
  for i in $(seq "$RUNS"); do
    line=$("$LOADGEN" --url "http://127.0.0.1:$PORT" --auth bench:bench --seconds "$SECS" "$@" --db "b-$name-$i")
    echo "  $name run $i: $line" >&2
    rates+=("$(echo "$line" | sed -E 's/.*rate=([0-9]+).*/\1/')")
  done
  local m
  m=$(printf '%s\n' "${rates[@]}" | median)
  printf '%-8s median %6s req/s   runs: %s\n' "$name" "$m" "${rates[*]}"
}
echo "settee foundation benchmark: $(nproc) cores, $RUNS runs x ${SECS}s, fsync on, generator on the same machine"
run put_c1 --workload put --concurrency 1
run put_c32 --workload put --concurrency 32
run get_c32 --workload get --concurrency 32 --docs 10000
