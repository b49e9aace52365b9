#!/usr/bin/env bash
# Server CPU per request of two builds on one preloaded database each, the builds alternating: loadgen
# GET c=32 for 4 s, six times per build; utime+stime of the node from /proc before and after.
#   bash bench/run_cpu_per_request.sh OLD_BINARY NEW_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
start_pair "$1" "$2"
PIDA=${PIDS[0]}; PIDB=${PIDS[1]}
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for port in $PA $PB; do "$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --seconds 2 --workload get --concurrency 32 --docs 10000 --db g >/dev/null; done
for i in 1 2 3 4 5 6; do
  for side in A B; do
    if [ $side = A ]; then port=$PA; pid=$PIDA; else port=$PB; pid=$PIDB; fi
    c0=$(cpu $pid)
    out=$("$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --seconds 4 --workload get --concurrency 32 --docs 10000 --db g)
    c1=$(cpu $pid)
    rate=$(echo "$out" | field rate)
    python3 -c "print('$side', $rate, 'req/s', round(($c1-$c0)*10000/($rate*4),1), 'us cpu/req')"
  done
done
