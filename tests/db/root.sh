#!/bin/bash
# tests/db/root.sh: the db stage's two cached roots (tests/db/lib.sh,
# db_tarball), made from the deb stage's Debian 12 root (tests/deb/root.sh,
# for KVER's headers): the servers' root (+ PostgreSQL 15, MariaDB) and the
# build root (+ the client packages' Build-Depends).  tests/db/lib.sh
# (db_root) calls it; tests/lib/check.sh also starts it in the background
# at the beginning of `make check` (apt mostly waits on the mirror).  Two
# runs at once: the second waits for the first (flock).
#
# Usage: root.sh KVER.  Prints "# ..." lines, then "base=PATH" and
# "build=PATH"; exits nonzero when a root could not be made.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"
OUT=$BUILD/db
# shellcheck source=tests/db/lib.sh
. "$ROOT/tests/db/lib.sh"

kver=${1:-$(all_kvers | sed -n 1p)}
mkdir -p "$OUT"
exec 9>"$OUT/root.lock"
flock -w 1800 9 || {
	echo "# another tests/db/root.sh held $OUT/root.lock for 30 minutes"
	exit 1
}
rootout=$(DEB_KERNELS="$kver" "$ROOT/tests/deb/root.sh" 2>&1) || true
debroot=$(sed -n 's/^tarball=//p' <<<"$rootout" | tail -n1)
if [ -z "$debroot" ] || [ ! -s "$debroot" ]; then
	indent <<<"$rootout"
	echo "# no Debian 12 root (tests/deb/root.sh)"
	exit 1
fi
base=$(db_tarball base "$debroot" "${DB_RUN_PKGS[@]}")
bld=$(db_tarball build "$base" "${DB_BUILD_PKGS[@]}")
echo "base=$base"
echo "build=$bld"
