#!/usr/bin/env bash
# Installs the client libraries the tests drive (package.json, pinned by package-lock.json) into
# DIR/node_modules; does nothing when DIR already holds this lock file's install.
set -euo pipefail
src="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: install.sh DIR}"
mkdir -p "$dir"
if cmp -s "$src/package-lock.json" "$dir/package-lock.json" && [ -d "$dir/node_modules" ]; then exit 0; fi
command -v npm >/dev/null || { echo "install.sh: npm is missing (make setup installs it)" >&2; exit 1; }
cp "$src/package.json" "$src/package-lock.json" "$dir/"
rm -rf "$dir/node_modules"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "client libraries installed in $dir/node_modules"
