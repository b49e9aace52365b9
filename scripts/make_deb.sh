#!/usr/bin/env bash
# Packages a built tree as settee_<version>_<arch>.deb (issue 12 point 1): the stripped binary, a
# sandboxed systemd unit that runs it as the `settee` user on /var/lib/settee, /etc/settee/local.ini
# (a conffile). It does what debhelper would, with the same Debian tools underneath (issue 34 item
# 5): the binary carries dpkg-buildflags' hardening (CMakeLists.txt), Depends comes from
# dpkg-shlibdeps (versioned, as dh_shlibdeps), md5sums as dh_md5sums, maintainer scripts with
# dh_installsystemd's snippets.
#   bash scripts/make_deb.sh [BUILD_DIR] [OUT_DIR]        (make deb)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$BUILD}
VERSION=$("$BUILD/settee" --version | awk '{print $2}')  # e.g. 0.3.0, 0.4.0-dev
DEBVERSION=${VERSION//-/\~}                              # 0.4.0~dev sorts before 0.4.0
# Built from a release tag (vX.Y.Z on HEAD), the binary must say that version: a package named
# for a tag never holds another build.
TAG=$(git describe --exact-match --tags --match 'v[0-9]*' HEAD 2>/dev/null || true)
if [ -n "$TAG" ] && [ "$TAG" != "v$VERSION" ]; then
  echo "make deb: HEAD is tagged $TAG but $BUILD/settee says $VERSION (rebuild, or fix project(VERSION))" >&2
  exit 1
fi
ARCH=$(dpkg --print-architecture)
MAINTAINER="settee developers <settee@example.org>"
# A hardened build only (a tree configured before the hardening flags, or with sanitizers, is not).
if ! readelf -d "$BUILD/settee" | grep BIND_NOW >/dev/null || ! nm -D "$BUILD/settee" | grep __stack_chk_fail >/dev/null; then
  echo "make deb: $BUILD/settee lacks the hardening flags (full RELRO, stack protector): reconfigure and rebuild" >&2
  exit 1
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/debian/settee  # where dpkg-shlibdeps expects a package's files
mkdir -p "$STAGE"
chmod 0755 "$STAGE"

install -D -m 0755 "$BUILD/settee" "$STAGE/usr/bin/settee"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/bin/settee"
# The sandboxed JavaScript worker the node starts (a program of the package, not a command).
install -D -m 0755 "$BUILD/settee-js" "$STAGE/usr/lib/settee/settee-js"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/lib/settee/settee-js"
install -D -m 0644 packaging/settee.service "$STAGE/lib/systemd/system/settee.service"
install -D -m 0644 packaging/local.ini "$STAGE/etc/settee/local.ini"  # 0640, group settee: postinst
install -D -m 0644 README.md "$STAGE/usr/share/doc/settee/README.md"
install -D -m 0644 docs/operations.md "$STAGE/usr/share/doc/settee/operations.md"
install -D -m 0644 docs/releases.md "$STAGE/usr/share/doc/settee/releases.md"
install -D -m 0644 packaging/copyright "$STAGE/usr/share/doc/settee/copyright"
install -d "$STAGE/usr/share/man/man1"
gzip -9n < packaging/settee.1 > "$STAGE/usr/share/man/man1/settee.1.gz"
chmod 0644 "$STAGE/usr/share/man/man1/settee.1.gz"
# A native package's changelog: one entry pointing at releases.md.
printf 'settee (%s) unstable; urgency=medium\n\n  * See /usr/share/doc/settee/releases.md.\n\n -- %s  %s\n' \
  "$DEBVERSION" "$MAINTAINER" "$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")" |
  gzip -9n > "$STAGE/usr/share/doc/settee/changelog.gz"
chmod 0644 "$STAGE/usr/share/doc/settee/changelog.gz"
install -d "$STAGE/DEBIAN"
for script in postinst prerm postrm; do install -m 0755 "packaging/$script" "$STAGE/DEBIAN/$script"; done
echo /etc/settee/local.ini > "$STAGE/DEBIAN/conffiles"

# Depends: the packages (and least versions) that provide the libraries the binary links, as
# dh_shlibdeps finds them.
printf 'Source: settee\n\nPackage: settee\nArchitecture: any\n' > "$WORK/debian/control"
DEPENDS=$(cd "$WORK" && dpkg-shlibdeps -O -e debian/settee/usr/bin/settee -e debian/settee/usr/lib/settee/settee-js 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$DEPENDS" ] || { echo "make deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# md5sums of every file but the conffiles (dpkg tracks those itself), as dh_md5sums.
(cd "$STAGE" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum) > "$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/md5sums"
SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat > "$STAGE/DEBIAN/control" <<CONTROL
Package: settee
Version: $DEBVERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $SIZE
Depends: adduser, $DEPENDS
Section: database
Priority: optional
Description: clustered CouchDB-compatible database node
 settee speaks Apache CouchDB's HTTP API (curl, nano, PouchDB and the CouchDB
 replicator work unchanged) and forms clusters that split and move shards
 under load, with changes feeds that never rewind.
CONTROL

mkdir -p "$OUT"
DEB="$OUT/settee_${DEBVERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
