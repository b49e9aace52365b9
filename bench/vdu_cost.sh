#!/usr/bin/env bash
# What validate_doc_update costs a write (issue 30): single-document PUTs at c=1 and c=32 into a
# database whose design document has a typical 10-line validate_doc_update, against one without,
# on one node with the default configuration, taking turns run by run. Prints each side's median
# req/s, the median of the per-run ratios (with / without), and each side's median node CPU a
# request (µs; steadier than throughput on a noisy machine, but without the workers' share).
#   bash bench/vdu_cost.sh     (RUNS=5 SECONDS_PER_RUN=4)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-4}
start_one settee-vdu
echo "validate_doc_update cost: one node, $(nproc) cores, $RUNS runs x ${SECS}s, fsync on"
for c in 1 32; do
  ra=() rb=() rr=() ca=() cb=()
  for i in $(seq "$RUNS"); do
    guard_db "$P" "v-$c-$i"
    la=$("$LOADGEN" --url "http://127.0.0.1:$P" --auth bench:bench --seconds "$SECS" --workload put --concurrency "$c" --db "p-$c-$i" --cpu-pid "${PIDS[0]}")
    lb=$("$LOADGEN" --url "http://127.0.0.1:$P" --auth bench:bench --seconds "$SECS" --workload put --concurrency "$c" --db "v-$c-$i" --cpu-pid "${PIDS[0]}")
    a=$(field rate <<<"$la") b=$(field rate <<<"$lb")
    ra+=("$a"); rb+=("$b"); rr+=("$(ratio "$b" "$a")")
    ca+=("$(field server_cpu_us <<<"$la")"); cb+=("$(field server_cpu_us <<<"$lb")")
  done
  printf 'put_c%-3s without %7s  with %7s req/s   with/without %s   (ratios: %s)   node CPU a request %s -> %s us\n' "$c" \
    "$(printf '%s\n' "${ra[@]}" | median)" "$(printf '%s\n' "${rb[@]}" | median)" \
    "$(printf '%s\n' "${rr[@]}" | median)" "${rr[*]}" \
    "$(printf '%s\n' "${ca[@]}" | median)" "$(printf '%s\n' "${cb[@]}" | median)"
done
