#!/usr/bin/env bash
# What a view kept up to date costs writes (issue 31): single-document PUTs of ~1 KB at c=1 and
# c=32 into a database without a design document, and into one whose view
# (`emit(doc.type, 1)` with _count) a reader keeps up to date meanwhile (one client querying it
# with the default update=true, back to back), taking turns run by run on one node with the
# default configuration. Prints each side's median req/s, the median of the per-run ratios
# (with / without), how many queries the reader made and the changes left to index at the end.
#   bash bench/view_write_cost.sh     (RUNS=5 SECONDS_PER_RUN=4)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-4}
start_one settee-vwc
URL="http://127.0.0.1:$P"
DDOC='{"views":{"by_type":{"map":"function(doc) { emit(doc.type, 1); }","reduce":"_count"}}}'
echo "view write cost: one node, $(nproc) cores, $RUNS runs x ${SECS}s, fsync on"
for c in 1 32; do
  ra=() rb=() rr=() reads=() left=()
  for i in $(seq "$RUNS"); do
    db="v-$c-$i"
    curl -sf -u bench:bench -X PUT "$URL/$db" >/dev/null
    curl -sf -u bench:bench -X PUT "$URL/$db/_design/app" -d "$DDOC" >/dev/null
    a=$("$LOADGEN" --url "$URL" --auth bench:bench --seconds "$SECS" --workload put --concurrency "$c" --doc-bytes 1000 --db "p-$c-$i" | field rate)
    # The reader: queries back to back until the writes end (bounded by the run's length).
    (n=0; end=$((SECONDS + SECS + 2)); while [ ! -e "$BASE/stop-$db" ] && [ $SECONDS -lt $end ]; do
       curl -sf -u bench:bench "$URL/$db/_design/app/_view/by_type" >/dev/null; n=$((n + 1)); done
     echo "$n" > "$BASE/reads-$db") &
    b=$("$LOADGEN" --url "$URL" --auth bench:bench --seconds "$SECS" --workload put --concurrency "$c" --doc-bytes 1000 --db "$db" | field rate)
    touch "$BASE/stop-$db"; wait $!
    reads+=("$(cat "$BASE/reads-$db")")
    left+=("$(curl -sf -u bench:bench "$URL/$db/_design/app/_info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["view_index"]["updates_pending"]["total"])')")
    ra+=("$a"); rb+=("$b"); rr+=("$(ratio "$b" "$a")")
  done
  printf 'put_c%-3s without %7s  with a view kept up to date %7s req/s   with/without %s   (ratios: %s; reader queries per run: %s; changes left at the end: %s)\n' "$c" \
    "$(printf '%s\n' "${ra[@]}" | median)" "$(printf '%s\n' "${rb[@]}" | median)" \
    "$(printf '%s\n' "${rr[@]}" | median)" "${rr[*]}" "${reads[*]}" "${left[*]}"
done
