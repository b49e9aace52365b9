#!/usr/bin/env bash
# What time-seq costs, three ways, each side by side in one run (bounded: RUNS x workloads):
#  1. commits below HTTP: settee_commit_cost (fsynced one-document commits, 60 full bins vs none);
#  2. writes over HTTP: the same binary twice, [time_seq] enabled = true vs false, put c=1 and c=32
#     alternating, RUNS x SECONDS_PER_RUN each;
#  3. reads: _changes since=<time> vs since=<seq> on a 200k-doc db (bench/since_latency.py).
#   bash bench/run_time_seq.sh        (RUNS=5 SECONDS_PER_RUN=5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-5}
BASE=$(mktemp -d /tmp/settee-tsbench-XXXXXX)
source bench/lib.sh
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$BASE"' EXIT
echo "settee time-seq cost: $(nproc) cores, fsync on, generator on the same machine"

echo "== 1. commit path (build/settee_commit_cost --rounds $((RUNS + 2)))"
build/settee_commit_cost --rounds $((RUNS + 2)) --dir "$BASE"

echo "== 2. HTTP writes, [time_seq] enabled = true vs false, same binary"
ON=$(free_port) OFF=$(free_port)
start_node on "$ON" "[log]
level = warning
"
start_node off "$OFF" "[log]
level = warning
[time_seq]
enabled = false
"
declare -A RATES
for RUN in $(seq "$RUNS"); do
  for w in c1 c32; do
    targets="on off"; [ $((RUN % 2)) = 0 ] && targets="off on"  # alternate who goes first
    for t in $targets; do
      port=$ON; [ "$t" = off ] && port=$OFF
      line=$("$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --seconds "$SECS" --workload put \
        --concurrency "${w#c}" --db "b-$w-$RUN")
      echo "  put_$w $t run $RUN: $line" >&2
      RATES[$w.$t]+="$(echo "$line" | field rate) "
    done
  done
done
for w in c1 c32; do
  on=$(printf '%s\n' ${RATES[$w.on]} | median)
  off=$(printf '%s\n' ${RATES[$w.off]} | median)
  printf 'put_%-4s with time-seq %7s req/s  without %7s req/s  ratio %s   runs with: %s| without: %s\n' \
    "$w" "$on" "$off" "$(ratio "$on" "$off")" "${RATES[$w.on]}" "${RATES[$w.off]}"
done
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null || true; PIDS=()

echo "== 3. _changes since=<time> vs since=<seq>"
CLOCK_PORT=$(free_port)
echo 1767225600 > "$BASE/clock"
start_node timed "$CLOCK_PORT" "[log]
level = warning
" SETTEE_CLOCK_FILE="$BASE/clock"
python3 bench/since_latency.py "http://127.0.0.1:$CLOCK_PORT" bench:bench "$BASE/clock" "$((RUNS + 2))"
