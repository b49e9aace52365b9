#!/usr/bin/env bash
# Installs the Debian 12 packages settee needs to build, test (--tests) and run.
# Idempotent: does nothing when every package is already installed.
set -euo pipefail
packages=(g++ make cmake pkg-config ccache libcaf-dev capnproto libcapnp-dev liblmdb-dev
          libcpp-httplib-dev libhttp-parser-dev nlohmann-json3-dev fiu-utils doctest-dev libssl-dev zlib1g-dev libre2-dev libpcre2-dev libsimdjson-dev python3 curl clang-format
          libmozjs-102-dev libseccomp-dev libicu-dev
          liblucene++-dev libboost-system-dev libboost-filesystem-dev libboost-thread-dev libboost-date-time-dev libboost-iostreams-dev libboost-regex-dev)
# `--tests`: also what the test suite drives (real clients: PouchDB from npm, tests/clients/).
if [ "${1:-}" = "--tests" ] && ! command -v npm >/dev/null; then packages+=(nodejs npm); fi
# `--tests`: lintian checks the Debian package `make deb` builds (tests/integration/test_deb.py);
# dpkg-shlibdeps (dpkg-dev) computes its Depends; systemd-analyze (systemd) rates its unit's sandbox.
if [ "${1:-}" = "--tests" ]; then packages+=(lintian dpkg-dev systemd); fi
# `--tests`: the operator drills run the playbooks in ansible/ (tests/drills/); ansible-lint checks them.
if [ "${1:-}" = "--tests" ]; then packages+=(ansible-core ansible-lint); fi
# `--tests`: replication tests make self-signed certificates for their TLS endpoints (openssl req).
if [ "${1:-}" = "--tests" ]; then packages+=(openssl); fi
# `--tests`: the built-in page is checked in a real headless browser (tests/cluster/test_settee_page.py).
if [ "${1:-}" = "--tests" ]; then packages+=(chromium); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# `--tests`: promtool checks the /_prometheus exposition (tests/integration/test_metrics.py). It
# ships in Debian's prometheus package, whose server we do not want installed and running: only
# its promtool is unpacked, into $SETTEE_TOOLS (default build/tools). Not fatal: without it that
# check is skipped, saying so.
fetch_promtool() {
  local dest="${SETTEE_TOOLS:-build/tools}" tmp
  if [ -x "$dest/promtool" ] || command -v promtool >/dev/null; then return 0; fi
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1) ||
     { [ "$(id -u)" -eq 0 ] && apt-get update -qq && (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1); }; then
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x" && mkdir -p "$dest" && cp "$tmp/x/usr/bin/promtool" "$dest/promtool" &&
      echo "setup: promtool in $dest"
  else
    echo "setup: could not fetch Debian's prometheus package; test_metrics skips its promtool check" >&2
  fi
  rm -rf "$tmp"
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "setup: missing packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
if [ "${1:-}" = "--tests" ]; then fetch_promtool || true; fi
