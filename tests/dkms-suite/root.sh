#!/bin/bash
# tests/dkms-suite/root.sh: the root of a dkms-SUITE stage (dkms-sid,
# dkms-trixie): the cached SUITE root (scripts/kroot.sh) with PostgreSQL
# PGMAJOR and what clients/postgresql's Debian package builds with
# (debian/control.in's Build-Depends but libsnowflake-dev, which is the deb
# stage's), and with --mariadb (the trixie root) also MariaDB's server,
# clients/mariadb's Build-Depends and the five packages' (debian/control's:
# the piuparts stage and tests/upgrade/old-release.sh trixie build today's
# and the previous release's packages in it, tests/lib/suite-debs.sh),
# installed with apt while no service may start
# (policy-rc.d), cached unpacked as build/dkms-SUITE-pgPGMAJOR/root-KEY/
# (KEY: the SUITE tarball's name and the packages; complete when
# root-KEY.done is there), read-only to the stage, which mounts an overlay
# on it (no copy: 2.1 GB with clang and LLVM).  tests/dkms-suite/run.sh
# calls it; tests/lib/check.sh also starts it in the background at the
# beginning of `make check` (apt mostly waits on the mirror).  Two runs at
# once: the second waits for the first (flock).
#
# Usage: root.sh SUITE PGMAJOR [--mariadb].  Prints "# ..." lines, then
# "root=PATH"; exits nonzero when the root could not be made.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ] || [[ ! $1 =~ ^[a-z]+$ ]] || [[ ! $2 =~ ^[0-9]+$ ]] ||
	{ [ $# -eq 3 ] && [ "$3" != --mariadb ]; }; then
	die "usage: tests/dkms-suite/root.sh SUITE PGMAJOR [--mariadb]"
fi
SUITE=$1 PG=$2
OUT=$BUILD/dkms-$SUITE-pg$PG
PKGS=("postgresql-$PG" "postgresql-server-dev-$PG" postgresql-server-dev-all debhelper
	build-essential pkgconf)
# debian/control's Build-Depends: debhelper-compat and
# dh-sequence-installsysusers are debhelper's, dh-sequence-dkms dh-dkms's
# (it depends on perl only: dkms itself stays for the stage's apt install).
[ "${3:-}" = --mariadb ] && PKGS+=(mariadb-server libmariadb-dev dh-dkms libcurl4-openssl-dev
	libhiredis-dev libjson-c-dev libzookeeper-mt-dev)
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 -o Acquire::Check-Valid-Until=false
	--no-install-recommends)
mkdir -p "$OUT"
exec 9>"$OUT/lock"
flock -w 1800 9 || {
	echo "# another tests/dkms-suite/root.sh held $OUT/lock for 30 minutes"
	exit 1
}
"$ROOT/scripts/kroot.sh" "$SUITE" >"$OUT/kroot.log" 2>&1 || {
	indent <"$OUT/kroot.log"
	echo "# scripts/kroot.sh $SUITE: no $SUITE root"
	exit 1
}
# "kroots/": build/kroots may be a link to a shared cache (find follows a
# starting point's link only so).
tarball=$(find "$BUILD/kroots/" -maxdepth 1 -name "$SUITE-*.tar.zst" | head -n 1)
if [ -z "$tarball" ]; then
	echo "# no build/kroots/$SUITE-*.tar.zst after scripts/kroot.sh $SUITE"
	exit 1
fi
key=$(printf '%s\n' "${tarball##*/}" "${PKGS[@]}" | sha256sum | cut -c1-12)
r=$OUT/root-$key
# The machine cache (lib.sh's mcache_*): another clone's root of the same
# key, within its max age, extracted here (the stage's overlays are on
# this clone's copy, never on the entry).
if [ ! -f "$r.done" ]; then
	start=$(now)
	if mcache_get_dir "dkms-$SUITE-pg$PG" "$key" "$r"; then
		touch "$r.done"
		echo "# ${r#"$ROOT"/} from the machine cache ($(mcache_age "dkms-$SUITE-pg$PG" "$key") old, $(($(now) - start)) s)"
	fi
fi
if [ ! -f "$r.done" ]; then
	start=$(now)
	rm -rf "$r"
	mkdir -p "$r" "$OUT/mk-work"
	tar -C "$r" --zstd -xf "$tarball"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 0755 "$r/usr/sbin/policy-rc.d"
	if ! { kroot_run "$r" "$OUT/mk-work" "${APT[@]}" install "${PKGS[@]}" ||
		{ kroot_run "$r" "$OUT/mk-work" apt-get -q -o Acquire::Check-Valid-Until=false update &&
			kroot_run "$r" "$OUT/mk-work" "${APT[@]}" install "${PKGS[@]}"; }; } >"$OUT/apt.log" 2>&1; then
		tail -n 30 "$OUT/apt.log" | indent
		echo "# apt-get install ${PKGS[*]} in the $SUITE root failed (log: ${OUT#"$ROOT"/}/apt.log)"
		rm -rf "$r" "$OUT/mk-work"
		exit 1
	fi
	rm -f "$r/usr/sbin/policy-rc.d"
	kroot_run "$r" "$OUT/mk-work" apt-get clean
	rm -rf "$OUT/mk-work"
	mcache_put_dir "dkms-$SUITE-pg$PG" "$key" "$r" || echo "# (not stored in the machine cache)"
	touch "$r.done"
	echo "# made ${r#"$ROOT"/}: + ${PKGS[*]} ($(($(now) - start)) s)"
fi
# Older keys' roots (not one a stage has mounted: rm stops at a mount).
find "$OUT" -maxdepth 1 -name 'root-*.done' ! -path "$r.done" -delete
find "$OUT" -maxdepth 1 -type d -name 'root-*' ! -path "$r" -exec rm -rf --one-file-system {} +
echo "root=$r"
