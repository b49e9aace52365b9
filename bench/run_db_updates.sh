#!/usr/bin/env bash
# What _db_updates costs and how fast it is (issue 9, docs/BENCHMARKS.md "_db_updates").
# 1. Writes with the bookkeeping off ([db_updates] enabled = false) and on (the default), one node
#    of each, the same binary, taking turns run by run; median req/s and the median per-run ratio.
# 2. bench/db_updates.py against the default node: N databases written once to their rows, commit
#    to longpoll latency, and since=now with many databases.
#   bash bench/run_db_updates.sh          (RUNS=5 SECONDS_PER_RUN=4; DBS, SAMPLES, MANY for the script;
#                                          ONLY=put_c1 runs that one pair and nothing else; SAME=1 runs
#                                          two default nodes, to see the noise of the pairing itself)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-4}
BASE=$(mktemp -d /tmp/settee-dbu-XXXXXX)
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$BASE"' EXIT
PA=$(free_port); PB=$(free_port)
if [ -n "${SAME:-}" ]; then start_node off "$PA" ""; else start_node off "$PA" "[db_updates]
enabled = false
"; fi
start_node on "$PB" ""
LA=off LB=on
echo "_db_updates bookkeeping ${SAME:+on vs on (SAME=1)}${SAME:-off vs on}: $(nproc) cores, $RUNS runs x ${SECS}s, fsync on"
ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
want put_c1 && run_pair put_c1 --workload put --concurrency 1
want put_c32 && run_pair put_c32 --workload put --concurrency 32
want bulk && run_pair bulk --workload bulk --concurrency 4 --docs 20000
[ -n "$ONLY" ] || python3 bench/db_updates.py "$PB"
