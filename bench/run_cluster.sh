#!/usr/bin/env bash
# Cluster benchmark: a 3-node cluster on this machine (n=3, w=2, every write fsynced on each copy)
# next to one single node, the same workloads alternating in one run so the ratio is fair.
# The generator talks to the first node, which coordinates. Bounded: RUNS x workloads. For PUT and
# GET it also prints the server CPU the coordinating node used per request (µs), next to the single
# node's: issue 14's "coordinator CPU per clustered request" (GET reads r=2 copies, PUT waits w=2).
#   bash bench/run_cluster.sh            (RUNS=3 SECONDS_PER_RUN=5 DOCS=50000 by default)
#   WORKLOADS="get_c32 put_c32" bash bench/run_cluster.sh    (a subset)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SECS=${SECONDS_PER_RUN:-5}
DOCS=${DOCS:-50000}
WORKLOADS=${WORKLOADS:-put_c1 put_c32 get_c32 bulk changes}
BASE=$(mktemp -d /tmp/settee-cbench-XXXXXX)
source bench/lib.sh
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$BASE"' EXIT

SINGLE=$(free_port)
start_node single "$SINGLE" "[log]
level = warning
"
HTTP=() RPC=()
for i in 1 2 3; do HTTP+=("$(free_port)"); RPC+=("$(free_port)"); done
for i in 0 1 2; do
  seeds=""
  for j in 0 1 2; do [ "$j" != "$i" ] && seeds="$seeds${seeds:+,}c$((j+1))@127.0.0.1:${RPC[$j]}"; done
  start_node "c$((i+1))" "${HTTP[$i]}" "[node]
name = c$((i+1))@127.0.0.1
[cluster]
rpc_port = ${RPC[$i]}
seeds = $seeds
[log]
level = warning
"
done
for _ in $(seq 100); do
  n=$(curl -s -u bench:bench "http://127.0.0.1:${HTTP[0]}/_membership" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["all_nodes"]))')
  [ "$n" = 3 ] && break; sleep 0.1
done

SINGLE_PID=${PIDS[0]} COORD_PID=${PIDS[1]}
declare -A RATES CPU
run() {  # name metric loadgen args...
  local name=$1 metric=$2; shift 2
  [[ " $WORKLOADS " == *" $name "* ]] || return 0
  for target in single cluster; do
    local port=$SINGLE pid=$SINGLE_PID; [ "$target" = cluster ] && port=${HTTP[0]} pid=$COORD_PID
    local rc=0 cpu=()
    [ "$metric" = rate ] && [[ "$*" == *"--workload put"* || "$*" == *"--workload get"* ]] && cpu=(--cpu-pid "$pid")
    line=$("$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --seconds "$SECS" "$@" "${cpu[@]}" \
      --db "b-$name-$target-$RUN" 2>"$BASE/loadgen.err") || rc=$?
    if [ "$rc" != 0 ]; then
      echo "loadgen failed (exit $rc) on $name $target run $RUN: $line $(cat "$BASE/loadgen.err")" >&2
      for n in single c1 c2 c3; do echo "--- $n log tail" >&2; tail -5 "$BASE/$n.log" >&2; done
      exit 1
    fi
    echo "  $name $target run $RUN: $line" >&2
    RATES[$name.$target]+="$(echo "$line" | field "$metric") "
    if [ ${#cpu[@]} -gt 0 ]; then CPU[$name.$target]+="$(echo "$line" | field server_cpu_us) "; fi
  done
}
echo "settee cluster benchmark: $(nproc) cores, $RUNS runs, 3 nodes (n=3, w=2) vs 1 node, generator on the same machine"
for RUN in $(seq "$RUNS"); do
  run put_c1 rate --workload put --concurrency 1
  run put_c32 rate --workload put --concurrency 32
  run get_c32 rate --workload get --concurrency 32 --docs 10000
  run bulk rate --workload bulk --concurrency 4 --docs "$DOCS"
  run changes rate --workload changes --docs "$DOCS"
done
printf '%-9s %16s %16s %7s\n' workload "1 node (median)" "3 nodes (median)" ratio
for name in $WORKLOADS; do
  s=$(printf '%s\n' ${RATES[$name.single]} | median)
  c=$(printf '%s\n' ${RATES[$name.cluster]} | median)
  printf '%-9s %16s %16s %7s   runs 1 node: %s| 3 nodes: %s\n' "$name" "$s" "$c" \
    "$(python3 -c "print(f'{$c/$s:.2f}')")" "${RATES[$name.single]}" "${RATES[$name.cluster]}"
done
printf '\nserver CPU of the coordinating node per request (µs, medians)\n'
for name in $WORKLOADS; do
  [ -n "${CPU[$name.single]:-}" ] || continue
  s=$(printf '%s\n' ${CPU[$name.single]} | median)
  c=$(printf '%s\n' ${CPU[$name.cluster]} | median)
  printf '%-9s 1 node %8s  3 nodes %8s  ratio %s   runs 1 node: %s| 3 nodes: %s\n' "$name" "$s" "$c" \
    "$(python3 -c "print(f'{$c/$s:.2f}')")" "${CPU[$name.single]}" "${CPU[$name.cluster]}"
done
