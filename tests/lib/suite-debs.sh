#!/bin/bash
# tests/lib/suite-debs.sh SUITE SRC OUT: the packages of the source tree SRC
# (a copy: dpkg-buildpackage writes into it) built on Debian SUITE, with
# `dpkg-buildpackage -us -uc -b` in an overlay on the cached SUITE root
# that has their Build-Depends (tests/dkms-suite/root.sh trixie 17
# --mariadb: only trixie has them, and it is the root check.sh makes from
# the start), so that they depend on that Debian's libraries (the Debian 12
# snowflake-agent depends on libhiredis0.14, which trixie does not have).
# The .debs (without -dbgsym) go to OUT/, the log to OUT.log; the overlay
# (OUT.work/) is unmounted and removed at the end.  Used by the piuparts
# stage (today's packages) and tests/upgrade/old-release.sh trixie (the
# previous release's).  Exits nonzero with "# ..." lines saying why.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ $# -ne 3 ] || [ ! -f "$2/debian/control" ]; then
	die "usage: tests/lib/suite-debs.sh SUITE SRC OUT (SRC: a tree with debian/)"
fi
SUITE=$1 SRC=$2 OUT=$3
case $SUITE in
trixie) rootargs=(trixie 17 --mariadb) ;;
*) die "no root with the packages' Build-Depends for $SUITE (tests/dkms-suite/root.sh: trixie)" ;;
esac
rootout=$("$ROOT/tests/dkms-suite/root.sh" "${rootargs[@]}" 2>&1) || true
lower=$(sed -n 's/^root=//p' <<<"$rootout")
if [ -z "$lower" ] || [ ! -f "$lower.done" ]; then
	indent <<<"$rootout"
	echo "# no $SUITE root (tests/dkms-suite/root.sh ${rootargs[*]})"
	exit 1
fi
W=$OUT.work
R=$W/root
umount_root() {
	if mountpoint -q "$R" 2>/dev/null; then
		as_root umount "$R" 2>/dev/null || as_root umount -l "$R"
	fi
}
umount_root
rm -rf --one-file-system "$W" "$OUT"
mkdir -p "$R" "$W/upper" "$W/ovl" "$W/mnt" "$OUT"
as_root mount -t overlay overlay -o "lowerdir=$lower,upperdir=$W/upper,workdir=$W/ovl" "$R" ||
	{
		echo "# mount -t overlay on $lower failed"
		exit 1
	}
trap 'umount_root; rm -rf --one-file-system "$W"' EXIT
cp -a "$SRC" "$W/mnt/src"
if ! kroot_run "$R" "$W/mnt" sh -c 'cd /mnt/work/src && dpkg-buildpackage -us -uc -b' >"$OUT.log" 2>&1; then
	tail -n 30 "$OUT.log" | indent
	echo "# dpkg-buildpackage -us -uc -b on $SUITE failed (log: ${OUT#"$ROOT"/}.log)"
	exit 1
fi
find "$W/mnt" -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -exec mv -t "$OUT" {} +
n=$(find "$OUT" -name '*.deb' | wc -l)
[ "$n" -gt 0 ] || {
	echo "# dpkg-buildpackage on $SUITE made no .deb (log: ${OUT#"$ROOT"/}.log)"
	exit 1
}
echo "# $n packages built on $SUITE in ${OUT#"$ROOT"/}"
