#!/bin/bash
# Usage: RUNS=7 SECS=3 bash bench/auth_cost.sh [BINARY]   (issue 34 item 8; docs/BENCHMARKS.md)
# Auth cost: server CPU µs per GET (c=32) with Basic credentials vs anonymous on a public db, same node, alternating.
cd "$(dirname "$0")/.." && source bench/lib.sh
BIN=${1:-build/settee}
BASE=$(mktemp -d /tmp/settee-auth-XXXXXX); trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$BASE"' EXIT
P=$(free_port); start_node a "$P" ""
ra=(); rb=(); rr=()
for i in $(seq ${RUNS:-5}); do
  a=$($LOADGEN --url http://127.0.0.1:$P --auth bench:bench --seconds ${SECS:-3} --workload get --concurrency 32 --docs 10000 --db authdb --public 1 --cpu-pid ${PIDS[0]} | field server_cpu_us)
  b=$($LOADGEN --url http://127.0.0.1:$P --auth bench:bench --seconds ${SECS:-3} --workload get --concurrency 32 --docs 10000 --db authdb --cpu-pid ${PIDS[0]} | field server_cpu_us)
  ra+=($a); rb+=($b); rr+=($(ratio $b $a))
done
echo "server cpu us/request: anonymous $(printf '%s\n' "${ra[@]}" | median)  basic $(printf '%s\n' "${rb[@]}" | median)  basic/anon $(printf '%s\n' "${rr[@]}" | median)  (${rr[*]})"
