#!/usr/bin/env bash
# Durable writes side by side (issue 56 points 1-2): the fsync floor of this disk first
# (settee_fsync_floor), then single-document PUTs of ~1 KB at c=1 and c=32 and _bulk_docs of 1,000
# ~1 KB documents a request (2 clients, docs/s) against one node of each build, default config, the
# nodes taking turns run by run. Prints each side's median rate, p50 and p99 and the median of the
# per-run ratios B/A. VDU=1: every database has bench/lib.sh's 10-line validate_doc_update
# (guard_db), to compare what a validated write costs in each build (PUTs only). INDEX=1: every
# database has a Mango JSON index on `n` (index_db); INDEX=B: only B's do (give the same binary
# twice: B/A is what maintaining the index costs).
#   bash bench/durable_writes.sh OLD_BINARY [NEW_BINARY]     (RUNS=5 SECONDS_PER_RUN=4 BULK_DOCS=100000 VDU=0 INDEX=0)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
A=${1:?usage: durable_writes.sh OLD_BINARY [NEW_BINARY]}
B=${2:-build/settee}
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-4}
BULK_DOCS=${BULK_DOCS:-100000}
VDU=${VDU:-0}
INDEX=${INDEX:-0}
if [ "$VDU" != 1 ]; then
  echo "the floor: build/settee_fsync_floor --rounds 5"
  build/settee_fsync_floor --rounds 5 | grep median
fi
start_pair "$A" "$B"
echo "side by side: A=$A B=$B, $(nproc) cores, $RUNS runs, fsync on$([ "$VDU" = 1 ] && echo ", validate_doc_update on every database")$([ "$INDEX" != 0 ] && echo ", a JSON index on $([ "$INDEX" = B ] && echo "B's" || echo "every") database")"

# run NAME LOADGEN_ARGS...: as lib.sh's run_pair, with the medians of p50 and p99 (put workloads).
run() {
  local name=$1; shift
  local ra=() rb=() rr=() a50=() b50=() a99=() b99=() la lb
  for i in $(seq "$RUNS"); do
    if [ "$VDU" = 1 ]; then guard_db "$PA" "w-$name-$i"; guard_db "$PB" "w-$name-$i"; fi
    if [ "$INDEX" = 1 ]; then index_db "$PA" "w-$name-$i"; fi
    if [ "$INDEX" = 1 ] || [ "$INDEX" = B ]; then index_db "$PB" "w-$name-$i"; fi
    both_sides "$i" "w-$name-$i" "$@"
    la=$OUT_A; lb=$OUT_B
    ra+=("$(echo "$la" | field rate)"); rb+=("$(echo "$lb" | field rate)")
    rr+=("$(ratio "${rb[-1]}" "${ra[-1]}")")
    if [[ $la == *p50_ms* ]]; then
      a50+=("$(echo "$la" | field p50_ms)"); b50+=("$(echo "$lb" | field p50_ms)")
      a99+=("$(echo "$la" | field p99_ms)"); b99+=("$(echo "$lb" | field p99_ms)")
    fi
  done
  local lat=""
  if [ ${#a50[@]} -gt 0 ]; then
    lat=$(printf '  p50 %s / %s ms  p99 %s / %s ms' "$(printf '%s\n' "${a50[@]}" | median)" \
      "$(printf '%s\n' "${b50[@]}" | median)" "$(printf '%s\n' "${a99[@]}" | median)" "$(printf '%s\n' "${b99[@]}" | median)")
  fi
  printf '%-8s A %7s  B %7s /s   B/A %s%s   (ratios: %s)\n' "$name" "$(printf '%s\n' "${ra[@]}" | median)" \
    "$(printf '%s\n' "${rb[@]}" | median)" "$(printf '%s\n' "${rr[@]}" | median)" "$lat" "${rr[*]}"
}
run put_c1 --workload put --concurrency 1
run put_c32 --workload put --concurrency 32
[ "$VDU" = 1 ] || run bulk --workload bulk --concurrency 2 --docs "$BULK_DOCS"
