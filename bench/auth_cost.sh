#!/bin/bash
# Usage: RUNS=5 SECS=3 bash bench/auth_cost.sh [BINARY]   (issues 34 item 8 and 52 point 6; docs/BENCHMARKS.md)
# What authentication costs a GET of a document, side by side on one node, the ways taking turns in each
# run: anonymous, Basic, an AuthSession cookie, a JWT (HS256), at c=32 on kept-open connections and
# with a fresh connection per request. Prints server CPU us/request and req/s (medians) and each way's
# ratio to anonymous (median of the per-run ratios).
cd "$(dirname "$0")/.." && source bench/lib.sh
BIN=${1:-build/settee}
BASE=$(mktemp -d /tmp/settee-auth-XXXXXX); trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$BASE"' EXIT
P=$(free_port); start_node a "$P" '[chttpd]
authentication_handlers = {chttpd_auth, jwt_authentication_handler}, {chttpd_auth, cookie_authentication_handler}, {chttpd_auth, default_authentication_handler}
[jwt_keys]
hmac:_default = YmVuY2ggand0IHNlY3JldCBvZiAzMiBieXRlcyEhIQ==
[chttpd_auth]
timeout = 3600
'
U=http://127.0.0.1:$P
COOKIE=$(curl -s -i -X POST "$U/_session" -H 'Content-Type: application/json' -d '{"name":"bench","password":"bench"}' |
  sed -n 's/^Set-Cookie: \(AuthSession=[^;]*\);.*/\1/p')
TOKEN=$(python3 - <<'PY'
import base64, hashlib, hmac, json, time
b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
m = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b(json.dumps({"sub": "bench", "exp": int(time.time()) + 3600}).encode())
key = base64.b64decode("YmVuY2ggand0IHNlY3JldCBvZiAzMiBieXRlcyEhIQ==")
print(m + "." + b(hmac.new(key, m.encode(), hashlib.sha256).digest()))
PY
)
for h in "Cookie: $COOKIE" "Authorization: Bearer $TOKEN"; do  # each way signs bench in, or the figures mean nothing
  curl -s "$U/_session" -H "$h" | grep -q '"name":"bench"' || { echo "not signed in with: ${h%%:*}" >&2; exit 1; }
done
$LOADGEN --url "$U" --auth bench:bench --seconds 0.1 --workload get --concurrency 1 --docs 10000 --db authdb --public 1 >/dev/null
one() {  # one run of a way: prints "cpu_us rate"
  local out
  out=$($LOADGEN --url "$U" --auth bench:bench --seconds "${SECS:-3}" --workload get --concurrency 32 --docs 10000 --db authdb --cpu-pid "${PIDS[0]}" "$@")
  echo "$(echo "$out" | field server_cpu_us) $(echo "$out" | field rate)"
}
for fresh in 0 1; do
  declare -A cpu=() rate=() rr=()
  for i in $(seq "${RUNS:-5}"); do
    read -r ca ra < <(one --public 1 --fresh $fresh)
    read -r cb rb < <(one --fresh $fresh)
    read -r cc rc < <(one --public 1 --fresh $fresh --header "Cookie: $COOKIE")
    read -r cj rj < <(one --public 1 --fresh $fresh --header "Authorization: Bearer $TOKEN")
    for w in anonymous:$ca:$ra basic:$cb:$rb cookie:$cc:$rc jwt:$cj:$rj; do
      IFS=: read -r name c r <<<"$w"
      cpu[$name]+="$c "; rate[$name]+="$r "; rr[$name]+="$(ratio "$c" "$ca") "
    done
  done
  echo "fresh connections: $fresh (c=32, ${RUNS:-5} runs of ${SECS:-3} s)"
  for name in anonymous basic cookie jwt; do
    printf '  %-9s server cpu %6s us/request  %7s req/s  cpu/anonymous %s  (%s)\n' "$name" \
      "$(printf '%s\n' ${cpu[$name]} | median)" "$(printf '%s\n' ${rate[$name]} | median)" \
      "$(printf '%s\n' ${rr[$name]} | median)" "${rr[$name]% }"
  done
  unset cpu rate rr
done
