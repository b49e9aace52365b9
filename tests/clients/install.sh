#!/usr/bin/env bash
# Installs the client libraries the tests drive (package.json, pinned by package-lock.json) into
# DIR/node_modules; does nothing when DIR already holds this lock file's install.
set -euo pipefail
src="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: install.sh DIR}"
mkdir -p "$dir"
# Tests that run side by side (ctest -j2) may each ask for the install: one installs, the others wait.
exec 9>"$dir/.install.lock"
flock 9
# The stamp is written once npm finished: an install cut short is made again.
if cmp -s "$src/package-lock.json" "$dir/.installed-lock" && [ -d "$dir/node_modules" ]; then exit 0; fi
command -v npm >/dev/null || { echo "install.sh: npm is missing (make setup installs it)" >&2; exit 1; }
cp "$src/package.json" "$src/package-lock.json" "$dir/"
rm -rf "$dir/node_modules"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
cp "$src/package-lock.json" "$dir/.installed-lock"
echo "client libraries installed in $dir/node_modules"
