# Helpers shared by the bench scripts (source it). Nodes live under $BASE; their pids gather in PIDS,
# which the caller's EXIT trap kills. Every node's admin is bench:bench.
BIN=${SETTEE_BIN:-build/settee}
LOADGEN=${LOADGEN:-build/settee_loadgen}
PIDS=()

# A port below the kernel's ephemeral range (outgoing connections cannot take it first), as the tests do.
free_port() { python3 -c 'import sys; sys.path.insert(0, "tests/integration"); import harness; print(harness.free_port())'; }

# start_node NAME HTTP_PORT CONFIG_TEXT [VAR=value ...]: starts a node, waits until /_up answers.
start_node() {
  mkdir -p "$BASE/$1"
  printf '%s' "$3" > "$BASE/$1.ini"
  env SETTEE_CLUSTER_SECRET=bench-cluster-secret-0123456789 "${@:4}" SETTEE_ADMIN=bench:bench "$BIN" --data-dir "$BASE/$1" --port "$2" --config "$BASE/$1.ini" \
    > "$BASE/$1.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$2/_up" >/dev/null && return; sleep 0.05; done
  echo "node $1 did not start" >&2; exit 1
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -E "s/.*$1=([0-9.]+).*/\1/"; }
ratio() { python3 -c "print(f'{$1/$2:.3f}')"; }

# start_one PREFIX: one node of $BIN (config $NODE_CONFIG) under a fresh $BASE (removed at exit),
# its port in P.
start_one() {
  BASE=$(mktemp -d "/tmp/$1-XXXXXX")
  trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$BASE"' EXIT
  P=$(free_port)
  start_node a "$P" "${NODE_CONFIG:-}"
}

# start_pair A_BINARY B_BINARY: one node of each build under a fresh $BASE (removed at exit), their
# ports in PA and PB.
start_pair() {
  BASE=$(mktemp -d /tmp/settee-pair-XXXXXX)
  trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$BASE"' EXIT
  PA=$(free_port); PB=$(free_port)
  BIN=$1 start_node a "$PA" ""
  BIN=$2 start_node b "$PB" ""
}

# both_sides RUN DB LOADGEN_ARGS...: the workload on database DB of the node on $PA and of the one
# on $PB, its loadgen lines in OUT_A and OUT_B. Each side goes first every other run (whichever
# went first measured ~1.5% faster at c=1).
both_sides() {
  local run=$1 db=$2; shift 2
  if (( run % 2 )); then
    OUT_A=$(loadgen_on "$PA" "$@" --db "$db"); OUT_B=$(loadgen_on "$PB" "$@" --db "$db")
  else
    OUT_B=$(loadgen_on "$PB" "$@" --db "$db"); OUT_A=$(loadgen_on "$PA" "$@" --db "$db")
  fi
}
loadgen_on() { local port=$1; shift; "$LOADGEN" --url "http://127.0.0.1:$port" --auth bench:bench --seconds "$SECS" "$@"; }

# run_pair NAME LOADGEN_ARGS...: the workload against the nodes on $PA and $PB, taking turns for
# $RUNS runs of $SECS seconds; prints each side's median req/s ($LA, $LB name them) and the median
# of the per-run ratios B/A.
run_pair() {
  local name=$1; shift
  local ra=() rb=() rr=() a b
  for i in $(seq "$RUNS"); do
    both_sides "$i" "p-$name-$i" "$@"
    a=$(echo "$OUT_A" | field rate); b=$(echo "$OUT_B" | field rate)
    ra+=("$a"); rb+=("$b"); rr+=("$(ratio "$b" "$a")")
  done
  printf '%-8s %s %7s  %s %7s req/s   %s/%s %s   (ratios: %s)\n' "$name" "${LA:-A}" "$(printf '%s\n' "${ra[@]}" | median)" \
    "${LB:-B}" "$(printf '%s\n' "${rb[@]}" | median)" "${LB:-B}" "${LA:-A}" "$(printf '%s\n' "${rr[@]}" | median)" "${rr[*]}"
}

# guard_db PORT DB: creates DB with a design document holding a typical 10-line
# validate_doc_update (issue 30's), as an application guarding its writes has.
guard_db() {
  local vdu='function(newDoc, oldDoc, userCtx, secObj) {
  if (newDoc._deleted) return;
  if (typeof newDoc.pad !== "string") throw({forbidden: "pad must be a string"});
  if (newDoc.pad.length > 100000) throw({forbidden: "pad too long"});
  if (oldDoc && oldDoc.owner && oldDoc.owner !== newDoc.owner) throw({unauthorized: "only the owner may edit"});
  var admin = userCtx.roles.indexOf("_admin") !== -1;
  if (!admin && secObj.members && secObj.members.names && secObj.members.names.indexOf(userCtx.name) === -1)
    throw({unauthorized: "members only"});
  if (newDoc.type && ["post", "comment"].indexOf(newDoc.type) === -1) throw({forbidden: "unknown type"});
}'
  curl -sf -u bench:bench -X PUT "http://127.0.0.1:$1/$2" >/dev/null
  python3 -c 'import json,sys; print(json.dumps({"validate_doc_update": sys.argv[1]}))' "$vdu" |
    curl -sf -u bench:bench -X PUT "http://127.0.0.1:$1/$2/_design/guard" -d @- >/dev/null
}

# index_db PORT DB: creates DB with a Mango JSON index on `n` (the field settee_loadgen's documents
# number), so that every write maintains it.
index_db() {
  curl -sf -u bench:bench -X PUT "http://127.0.0.1:$1/$2" >/dev/null
  curl -sf -u bench:bench -X POST "http://127.0.0.1:$1/$2/_index" -H 'Content-Type: application/json' \
    -d '{"index": {"fields": ["n"]}, "name": "by-n"}' >/dev/null
}
