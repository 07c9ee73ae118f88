#!/bin/bash
# tests/dkms-sid/pg18-root.sh: the dkms-sid stage's root: the cached sid
# root (scripts/kroot.sh) with PostgreSQL 18 and what clients/postgresql's
# Debian package builds with (debian/control.in's Build-Depends but
# libsnowflake-dev, which is the deb stage's), installed with apt while no
# service may start (policy-rc.d), cached unpacked as
# build/dkms-sid-pg18/root-KEY/ (KEY: the sid tarball's name and the
# packages; complete when root-KEY.done is there), read-only to the stage,
# which mounts an overlay on it (no copy: 2.1 GB with clang and LLVM).  tests/dkms-sid/run.sh calls it; tests/lib/check.sh also
# starts it in the background at the beginning of `make check` (apt mostly
# waits on the mirror).  Two runs at once: the second waits for the first
# (flock).
#
# Usage: pg18-root.sh.  Prints "# ..." lines, then "root=PATH"; exits
# nonzero when the root could not be made.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/dkms-sid-pg18
PG18_PKGS=(postgresql-18 postgresql-server-dev-18 postgresql-server-dev-all debhelper
	build-essential pkgconf)
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 -o Acquire::Check-Valid-Until=false
	--no-install-recommends)
mkdir -p "$OUT"
exec 9>"$OUT/lock"
flock -w 1800 9 || {
	echo "# another tests/dkms-sid/pg18-root.sh held $OUT/lock for 30 minutes"
	exit 1
}
"$ROOT/scripts/kroot.sh" sid >"$OUT/kroot.log" 2>&1 || {
	indent <"$OUT/kroot.log"
	echo "# scripts/kroot.sh sid: no sid root"
	exit 1
}
# "kroots/": build/kroots may be a link to a shared cache (find follows a
# starting point's link only so).
sid=$(find "$BUILD/kroots/" -maxdepth 1 -name 'sid-*.tar.zst' | head -n 1)
if [ -z "$sid" ]; then
	echo "# no build/kroots/sid-*.tar.zst after scripts/kroot.sh sid"
	exit 1
fi
key=$(printf '%s\n' "${sid##*/}" "${PG18_PKGS[@]}" | sha256sum | cut -c1-12)
r=$OUT/root-$key
if [ ! -f "$r.done" ]; then
	start=$(now)
	rm -rf "$r"
	mkdir -p "$r" "$OUT/mk-work"
	tar -C "$r" --zstd -xf "$sid"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 0755 "$r/usr/sbin/policy-rc.d"
	if ! { kroot_run "$r" "$OUT/mk-work" "${APT[@]}" install "${PG18_PKGS[@]}" ||
		{ kroot_run "$r" "$OUT/mk-work" apt-get -q -o Acquire::Check-Valid-Until=false update &&
			kroot_run "$r" "$OUT/mk-work" "${APT[@]}" install "${PG18_PKGS[@]}"; }; } >"$OUT/apt.log" 2>&1; then
		tail -n 30 "$OUT/apt.log" | indent
		echo "# apt-get install ${PG18_PKGS[*]} in the sid root failed (log: ${OUT#"$ROOT"/}/apt.log)"
		rm -rf "$r" "$OUT/mk-work"
		exit 1
	fi
	rm -f "$r/usr/sbin/policy-rc.d"
	kroot_run "$r" "$OUT/mk-work" apt-get clean
	rm -rf "$OUT/mk-work"
	touch "$r.done"
	# Older keys' roots (not one a stage has mounted: rm stops at a mount).
	find "$OUT" -maxdepth 1 -name 'root-*.done' ! -path "$r.done" -delete
	find "$OUT" -maxdepth 1 -type d -name 'root-*' ! -path "$r" -exec rm -rf --one-file-system {} +
	echo "# made ${r#"$ROOT"/}: + ${PG18_PKGS[*]} ($(($(now) - start)) s)"
fi
echo "root=$r"
