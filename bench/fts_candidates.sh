#!/usr/bin/env bash
# The text engines Debian packages for full-text search (issue 54 point 4), side by side: builds
# bench/fts_candidates.cpp against liblucene++-dev and libxapian-dev (installed here: neither is a
# project dependency yet), then for each engine, taking turns, RUNS times: index DOCS documents
# (~1 KB, two text fields; one commit at the end), the index's size on disk, 500 term, phrase and
# boolean queries each (p50/p95 ms, the top 25 with their ids); then a build killed with -9 while it
# commits every 10,000 documents, and what the index holds when opened again.
#   bash bench/fts_candidates.sh [DOCS=200000] [RUNS=3]
set -euo pipefail
DOCS=${1:-200000}
RUNS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/settee-fts-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if ! pkg-config --exists liblucene++ xapian-core || [ ! -d /usr/include/boost/filesystem ]; then
  echo "installing liblucene++-dev, libxapian-dev and the boost headers Lucene++ needs" >&2
  sudo_=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q liblucene++-dev libxapian-dev \
    libboost-filesystem-dev libboost-thread-dev libboost-date-time-dev libboost-iostreams-dev libboost-regex-dev >/dev/null
fi
BIN=$WORK/fts_candidates
g++ -O2 -std=c++17 "$HERE/fts_candidates.cpp" -o "$BIN" $(pkg-config --cflags --libs liblucene++ xapian-core) -lboost_system

for run in $(seq 1 "$RUNS"); do
  for engine in lucene xapian; do
    dir=$WORK/$engine-$run
    "$BIN" $engine build "$dir" "$DOCS"
    echo "{\"engine\":\"$engine\",\"run\":$run,\"size_mb\":$(du -sm "$dir" | cut -f1)}"
    "$BIN" $engine query "$dir" "$DOCS" 500
    rm -rf "$dir"
  done
done

# kill -9 in the middle of a build that commits every 10,000 documents, after about 35,000 (the
# engines' rates differ): the index opens with the documents of its last commit.
for engine in lucene xapian; do
  dir=$WORK/$engine-killed
  after=$([ $engine = lucene ] && echo 3 || echo 10)
  "$BIN" $engine build "$dir" "$DOCS" 10000 >/dev/null &
  pid=$!
  sleep "$after"
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  echo "{\"engine\":\"$engine\",\"killed_after_s\":$after,\"reopened\":$("$BIN" $engine query "$dir" "$DOCS" 20 2>&1 | tr -d '\n' | sed 's/^{//;s/}$//;s/^/{/;s/$/}/')}"
  rm -rf "$dir"
done
