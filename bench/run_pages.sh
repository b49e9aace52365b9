#!/usr/bin/env bash
# Paged _all_docs side by side (issue 14): two builds, one node each with the same 200,000 documents
# (q=2), paged with startkey + skip=1 + limit=1000 from the first id to the last, RUNS times each,
# taking turns. Prints rows/s and the first and last page's time for each run, offsets checked.
#   bash bench/run_pages.sh OLD_BINARY [NEW_BINARY]     (RUNS=3 DOCS=200000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
A=${1:?usage: run_pages.sh OLD_BINARY [NEW_BINARY]}
B=${2:-build/settee}
RUNS=${RUNS:-3}
DOCS=${DOCS:-200000}
start_pair "$A" "$B"
echo "pages: A=$A B=$B, $DOCS docs, $RUNS runs"
for i in $(seq "$RUNS"); do
  for side in A B; do
    port=$PA; [ "$side" = B ] && port=$PB
    printf '%s ' "$side"
    "$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --workload pages --docs "$DOCS" --db pages
  done
done
