#!/bin/bash
# The dkms-sid stage of `make check`: snowflake-dkms as a user of Debian sid
# installs it.  In a fresh copy of the cached sid root (scripts/kroot.sh:
# gcc, make and the 7.2 headers), `apt install ./snowflake-dkms_*.deb` (the
# deb stage's package, build/deb/, or make deb's, build/debs/): DKMS builds the module for 7.2 in the
# postinst; then `dkms build` for a 5.4 kernel, out of the range
# BUILD_EXCLUSIVE_KERNEL declares, is refused with snowflake's message and
# no compiler run.
# Prints "dkms-sid: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/dkms-sid
R=$OUT/root
VERSION=$(cat "$ROOT/VERSION")
t0=$(now)

finish() {
	echo "dkms-sid: $pass passed, $fail failed ($(($(now) - t0)) s)"
	[ "$fail" -eq 0 ]
	exit
}

# The deb stage's package, else `make deb`'s.
deb=$(find "$BUILD/deb" "$BUILD/debs" -maxdepth 1 -name "snowflake-dkms_${VERSION}_all.deb" 2>/dev/null |
	head -n 1) || true
if [ -z "$deb" ]; then
	notok "no snowflake-dkms_${VERSION}_all.deb in build/deb or build/debs: run the deb stage first (tests/deb/run.sh, or make deb)"
	finish
fi
if ! "$ROOT/scripts/kroot.sh" sid >"$OUT.kroot.log" 2>&1; then
	indent <"$OUT.kroot.log"
	notok "scripts/kroot.sh sid: no sid root"
	finish
fi
kver=$(awk '$1 == "linux-headers-amd64" { print $2 }' "$BUILD/kroots/sid.kvers")
tarball=$(find "$BUILD/kroots" -maxdepth 1 -name 'sid-*.tar.zst' | head -n 1)

rm -rf "$OUT"
mkdir -p "$R" "$OUT/work"
tar -C "$R" --zstd -xf "$tarball"
cp -L /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
cp "$deb" "$OUT/work/"
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 -o Acquire::Check-Valid-Until=false
	--no-install-recommends)
start=$(now)
if kroot_run "$R" "$OUT/work" "${APT[@]}" install "/mnt/work/${deb##*/}" >"$OUT/apt.log" 2>&1 ||
	{ kroot_run "$R" "$OUT/work" apt-get -q -o Acquire::Check-Valid-Until=false update &&
		kroot_run "$R" "$OUT/work" "${APT[@]}" install "/mnt/work/${deb##*/}"; } >>"$OUT/apt.log" 2>&1; then
	ok "apt install ./${deb##*/} in a fresh sid root with linux-headers-$kver ($(($(now) - start)) s)"
else
	tail -n 30 "$OUT/apt.log" | indent
	notok "apt install ./${deb##*/} (log: ${OUT#"$ROOT"/}/apt.log)"
	finish
fi
ko=$(find "$R/var/lib/dkms/snowflake/$VERSION/$kver" "$R/usr/lib/modules/$kver/updates" \
	-name 'snowflake.ko*' 2>/dev/null | head -n 1) || true
status=$(kroot_run "$R" "$OUT/work" dkms status snowflake 2>&1 || true)
echo "$status" | indent
if [ -n "$ko" ] && grep -F "snowflake/$VERSION, $kver, " <<<"$status" | grep -qE ': (built|installed)'; then
	ok "DKMS built snowflake.ko for $kver (${ko#"$R"})"
else
	{ grep -E 'error|Error|warning' "$OUT/apt.log" || true; } | head -n 20 | indent
	notok "DKMS did not build snowflake.ko for $kver"
fi
if [ -n "$ko" ]; then
	vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	check "its vermagic is $kver (got '$vermagic')" [ "$vermagic" = "$kver" ]
fi
# Out of the range: refused by dkms.conf, with snowflake's own message.
old=5.4.0-26-amd64
kroot_run "$R" "$OUT/work" dkms build "snowflake/$VERSION" -k "$old" >"$OUT/old.log" 2>&1 || true
indent <"$OUT/old.log"
if grep -q "snowflake: Linux $old is out of the supported range (5.10 and later)" "$OUT/old.log" &&
	grep -q 'BUILD_EXCLUSIVE' "$OUT/old.log" && ! grep -qE 'error:|make .*modules' "$OUT/old.log"; then
	ok "dkms build -k $old: refused by BUILD_EXCLUSIVE_KERNEL with snowflake's message"
else
	notok "dkms build -k $old: no clear refusal (log above)"
fi
echo "figure: kernel $kver: DKMS $(kroot_run "$R" "$OUT/work" dkms --version 2>/dev/null | head -n 1) in Debian sid"
finish
