#!/bin/bash
# tests/dkms-sid/pg18-root.sh: the dkms-sid stage's root: the cached sid
# root (scripts/kroot.sh) with PostgreSQL 18 and what clients/postgresql's
# Debian package builds with (debian/control.in's Build-Depends but
# libsnowflake-dev, which is the deb stage's), installed with apt while no
# service may start (policy-rc.d), cached as
# build/dkms-sid-pg18/sid-pg18-KEY.tar.zst (KEY: the sid tarball's name and
# the packages).  tests/dkms-sid/run.sh calls it; tests/lib/check.sh also
# starts it in the background at the beginning of `make check` (apt mostly
# waits on the mirror).  Two runs at once: the second waits for the first
# (flock).
#
# Usage: pg18-root.sh.  Prints "# ..." lines, then "tarball=PATH"; exits
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
tb=$OUT/sid-pg18-$key.tar.zst
if [ ! -s "$tb" ]; then
	start=$(now)
	r=$OUT/mk
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
	apt_s=$(($(now) - start))
	rm -f "$r/usr/sbin/policy-rc.d"
	kroot_run "$r" "$OUT/mk-work" apt-get clean
	tar -C "$r" -I 'zstd -T0 -1' -cf "$tb.tmp" . && mv "$tb.tmp" "$tb"
	rm -rf "$r" "$OUT/mk-work"
	find "$OUT" -maxdepth 1 -name 'sid-pg18-*.tar.zst' ! -path "$tb" -delete
	echo "# made ${tb#"$ROOT"/}: + ${PG18_PKGS[*]} (apt ${apt_s} s, all $(($(now) - start)) s)"
fi
echo "tarball=$tb"
