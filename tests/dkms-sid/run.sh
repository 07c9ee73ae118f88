#!/bin/bash
# The dkms-sid stage of `make check`: snowflake-dkms as a user of Debian sid
# installs it.  In a fresh copy of the cached sid root (scripts/kroot.sh:
# gcc, make and the 7.2 headers; with PostgreSQL 18, below), `apt install ./snowflake-dkms_*.deb` (the
# deb stage's package, build/deb/, or make deb's, build/debs/): DKMS builds the module for 7.2 in the
# postinst; then `dkms build` for a 5.4 kernel, out of the range
# BUILD_EXCLUSIVE_KERNEL declares, is refused with snowflake's message and
# no compiler run.  Then PostgreSQL 18, sid's newest, in the same root
# (tests/dkms-sid/pg18.sh): clients/postgresql built with PGXS and as the
# Debian package postgresql-18-snowflake (pg_buildext), installed with apt,
# a server started, CREATE EXTENSION snowflake, the no-device error and
# pg_regress's devices test (what runs without the module; the rest runs
# on 15 in the db stage's guest).  The root with postgresql-18 and the
# package's Build-Depends: tests/dkms-sid/pg18-root.sh, cached unpacked,
# under an overlay.
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
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 -o Acquire::Check-Valid-Until=false
	--no-install-recommends)
# The sid root with PostgreSQL 18 and its build packages
# (tests/dkms-sid/pg18-root.sh, cached; check.sh starts it early), under an
# overlay: the stage's writes go to $OUT/upper, the cached root stays as
# made; unmounted when the stage ends.
start=$(now)
rootout=$("$ROOT/tests/dkms-sid/pg18-root.sh" 2>&1) || true
lower=$(sed -n 's/^root=//p' <<<"$rootout")
grep '^# made' <<<"$rootout" || true
if [ -z "$lower" ] || [ ! -f "$lower.done" ]; then
	indent <<<"$rootout"
	notok "the sid root with PostgreSQL 18 (tests/dkms-sid/pg18-root.sh)"
	finish
fi
as_root umount "$R" 2>/dev/null || true
rm -rf --one-file-system "$OUT"
mkdir -p "$R" "$OUT/upper" "$OUT/ovl" "$OUT/work"
if ! as_root mount -t overlay overlay -o "lowerdir=$lower,upperdir=$OUT/upper,workdir=$OUT/ovl" "$R"; then
	notok "mount -t overlay on ${lower#"$ROOT"/}"
	finish
fi
trap 'as_root umount "$R" || as_root umount -l "$R"' EXIT
cp -L /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
ok "a fresh sid root with PostgreSQL 18 (an overlay on ${lower#"$ROOT"/}, $(($(now) - start)) s)"
kver=$(awk '$1 == "linux-headers-amd64" { print $2 }' "$BUILD/kroots/sid.kvers" 2>/dev/null) || true
cp "$deb" "$OUT/work/"
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

# PostgreSQL 18 (tests/dkms-sid/pg18.sh, in the root): its "PG18 ok|notok"
# lines counted here.  Everything it starts dies with kroot_run's PID
# namespace at the latest.
start=$(now)
mkdir -p "$OUT/pg/src"
for p in libsnowflake1 libsnowflake-dev; do
	f=$(find "${deb%/*}" -maxdepth 1 -name "${p}_${VERSION}_*.deb" | head -n 1) || true
	[ -n "$f" ] && cp "$f" "$OUT/pg/"
done
cp -a "$ROOT/clients/postgresql" "$OUT/pg/src/"
(cd "$OUT/pg/src/postgresql" && rm -rf ./*.o ./*.so ./*.bc results regression.*)
install -m 0755 "$ROOT/tests/dkms-sid/pg18.sh" "$OUT/pg/pg18.sh"
kroot_run "$R" "$OUT/pg" bash /mnt/work/pg18.sh >"$OUT/pg18.log" 2>&1 || true
while IFS= read -r line; do
	case $line in
	"PG18 ok "*) ok "PostgreSQL 18: ${line#PG18 ok }" ;;
	"PG18 notok "*) notok "PostgreSQL 18: ${line#PG18 notok }" ;;
	"PG18 #"*) echo "#${line#PG18 #}" ;;
	*) echo "#   $line" ;;
	esac
done <"$OUT/pg18.log"
grep -q '^PG18 ok PostgreSQL 18 (pid [0-9]*) stopped' "$OUT/pg18.log" ||
	notok "PostgreSQL 18: the checks ran to the end (log: ${OUT#"$ROOT"/}/pg18.log)"
echo "figure: PostgreSQL 18 in Debian sid: $(($(now) - start)) s (build, package, install, server, checks)"
finish
