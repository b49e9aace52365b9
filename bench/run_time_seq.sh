#!/usr/bin/env bash
# What time-seq costs, three ways, each side by side in one run (bounded: RUNS x workloads):
#  1. commits below HTTP: settee_commit_cost (fsynced one-document commits, 60 full bins vs none);
#  2. writes over HTTP: the same binary as three nodes, [time_seq] enabled = true, false and false
#     again (the control), put c=1 and c=32 in rotating order, RUNS x SECONDS_PER_RUN each;
#  3. reads: _changes since=<time> vs since=<seq> on a 200k-doc db (bench/since_latency.py).
#   bash bench/run_time_seq.sh        (RUNS=7 SECONDS_PER_RUN=3 by default, about 4 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
SECS=${SECONDS_PER_RUN:-3}
BASE=$(mktemp -d /tmp/settee-tsbench-XXXXXX)
source bench/lib.sh
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$BASE"' EXIT
echo "settee time-seq cost: $(nproc) cores, fsync on, generator on the same machine"

echo "== 1. commit path (build/settee_commit_cost)"
build/settee_commit_cost --dir "$BASE"

echo "== 2. HTTP writes, [time_seq] enabled = true vs false, same binary; off-2 (= off) is the noise floor"
NODES=(on off off-2)
declare -A PORT RATES
for t in "${NODES[@]}"; do
  PORT[$t]=$(free_port)
  cfg="[log]
level = warning
"
  [ "$t" != on ] && cfg="$cfg[time_seq]
enabled = false
"
  start_node "$t" "${PORT[$t]}" "$cfg"
done
for RUN in $(seq "$RUNS"); do
  for w in c1 c32; do
    for k in 0 1 2; do
      t=${NODES[$(((k + RUN) % 3))]}  # rotate who goes first
      line=$("$LOADGEN" --url "http://127.0.0.1:${PORT[$t]}" --auth bench:bench --seconds "$SECS" --workload put \
        --concurrency "${w#c}" --db "b-$w-$RUN")
      echo "  put_$w $t run $RUN: $line" >&2
      RATES[$w.$t]+="$(echo "$line" | field rate) "
    done
  done
done
for w in c1 c32; do
  on=$(printf '%s\n' ${RATES[$w.on]} | median)
  off=$(printf '%s\n' ${RATES[$w.off]} | median)
  off2=$(printf '%s\n' ${RATES[$w.off-2]} | median)
  printf 'put_%-4s on %7s  off %7s  off-2 %7s req/s   on/off %s  off-2/off %s\n' "$w" "$on" "$off" "$off2" \
    "$(ratio "$on" "$off")" "$(ratio "$off2" "$off")"
  printf '         runs on: %s| off: %s| off-2: %s\n' "${RATES[$w.on]}" "${RATES[$w.off]}" "${RATES[$w.off-2]}"
done
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null || true; PIDS=()

echo "== 3. _changes since=<time> vs since=<seq>"
CLOCK_PORT=$(free_port)
echo 1767225600 > "$BASE/clock"
start_node timed "$CLOCK_PORT" "[log]
level = warning
" SETTEE_CLOCK_FILE="$BASE/clock"
python3 bench/since_latency.py "http://127.0.0.1:$CLOCK_PORT" bench:bench "$BASE/clock" "$((RUNS + 2))"
