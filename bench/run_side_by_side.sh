#!/usr/bin/env bash
# Two builds of settee side by side on one machine: single-doc PUT c=1, PUT c=32, GET c=32, a whole
# _all_docs read and a whole _changes read of 100,000 documents (rows/s) against one node of each,
# the nodes taking turns run by run (so a noisy moment hits both alike). Prints each workload's
# median req/s per build and the median of the per-run ratios (B / A).
#   bash bench/run_side_by_side.sh OLD_BINARY [NEW_BINARY]     (RUNS=5 SECONDS_PER_RUN=4)
# e.g. bash bench/run_side_by_side.sh build/releases/v0.2.0/build/settee   (the upgrade tests build it)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
A=${1:?usage: run_side_by_side.sh OLD_BINARY [NEW_BINARY]}
B=${2:-build/settee}
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-4}
start_pair "$A" "$B"
echo "side by side: A=$A B=$B, $(nproc) cores, $RUNS runs x ${SECS}s, fsync on"
run_pair put_c1 --workload put --concurrency 1
run_pair put_c32 --workload put --concurrency 32
run_pair get_c32 --workload get --concurrency 32 --docs 10000
run_pair alldocs --workload alldocs --docs 10000
run_pair changes --workload changes --docs 100000
