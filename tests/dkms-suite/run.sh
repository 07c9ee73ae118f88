#!/bin/bash
# The dkms-SUITE stages of `make check` (dkms-sid: Debian sid, its 7.2,
# PostgreSQL 18; dkms-trixie: Debian 13, its 6.12, PostgreSQL 17 and
# MariaDB 11.8): snowflake-dkms as a user of that Debian installs it.  In a
# fresh copy of the cached SUITE root (scripts/kroot.sh: gcc, make and the
# headers of its linux-headers-amd64; with PostgreSQL, below),
# `apt install ./snowflake-dkms_*.deb` (the deb stage's package, build/deb/,
# or make deb's, build/debs/): DKMS builds the module for that kernel in the
# postinst; then `dkms build` for a 5.4 kernel, out of the range
# BUILD_EXCLUSIVE_KERNEL declares, is refused with snowflake's message and
# no compiler run.  Then PostgreSQL PGMAJOR, the suite's, in the same root
# (tests/dkms-suite/pg.sh): clients/postgresql built with PGXS and as the
# Debian package postgresql-PGMAJOR-snowflake (pg_buildext), installed with
# apt, a server started, CREATE EXTENSION snowflake, the no-device error
# and pg_regress's devices test (what runs without the module; the rest
# runs on 15 in the db stage's guest).  With --mariadb, MariaDB too
# (tests/dkms-suite/mariadb.sh): clients/mariadb's package
# mariadb-plugin-snowflake built and installed, a private mariadbd,
# CREATE FUNCTION ... SONAME, the no-device error.  The root with those
# servers and the packages' Build-Depends: tests/dkms-suite/root.sh, cached
# unpacked, under an overlay.
#
# Usage: run.sh SUITE PGMAJOR [--mariadb].
# Prints "dkms-SUITE: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ] || [[ ! $1 =~ ^[a-z]+$ ]] || [[ ! $2 =~ ^[0-9]+$ ]] ||
	{ [ $# -eq 3 ] && [ "$3" != --mariadb ]; }; then
	die "usage: tests/dkms-suite/run.sh SUITE PGMAJOR [--mariadb]"
fi
SUITE=$1 PG=$2 MARIADB=${3:-}
STAGE=dkms-$SUITE
OUT=$BUILD/$STAGE
R=$OUT/root
VERSION=$(cat "$ROOT/VERSION")
t0=$(now)

finish() {
	echo "$STAGE: $pass passed, $fail failed ($(($(now) - t0)) s)"
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
# The SUITE root with PostgreSQL PGMAJOR and the build packages
# (tests/dkms-suite/root.sh, cached; check.sh starts it early), under an
# overlay: the stage's writes go to $OUT/upper, the cached root stays as
# made; unmounted when the stage ends.
start=$(now)
rootout=$("$ROOT/tests/dkms-suite/root.sh" "$SUITE" "$PG" ${MARIADB:+"$MARIADB"} 2>&1) || true
lower=$(sed -n 's/^root=//p' <<<"$rootout")
grep '^# made' <<<"$rootout" || true
if [ -z "$lower" ] || [ ! -f "$lower.done" ]; then
	indent <<<"$rootout"
	notok "the $SUITE root with PostgreSQL $PG (tests/dkms-suite/root.sh)"
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
ok "a fresh $SUITE root with PostgreSQL $PG (an overlay on ${lower#"$ROOT"/}, $(($(now) - start)) s)"
kver=$(awk '$1 == "linux-headers-amd64" { print $2 }' "$BUILD/kroots/$SUITE.kvers" 2>/dev/null) || true
cp "$deb" "$OUT/work/"
start=$(now)
if kroot_run "$R" "$OUT/work" "${APT[@]}" install "/mnt/work/${deb##*/}" >"$OUT/apt.log" 2>&1 ||
	{ kroot_run "$R" "$OUT/work" apt-get -q -o Acquire::Check-Valid-Until=false update &&
		kroot_run "$R" "$OUT/work" "${APT[@]}" install "/mnt/work/${deb##*/}"; } >>"$OUT/apt.log" 2>&1; then
	ok "apt install ./${deb##*/} in a fresh $SUITE root with linux-headers-$kver ($(($(now) - start)) s)"
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
echo "figure: kernel $kver: DKMS $(kroot_run "$R" "$OUT/work" dkms --version 2>/dev/null | head -n 1) in Debian $SUITE"

# PostgreSQL PGMAJOR (tests/dkms-suite/pg.sh, in the root): its "PG ok|notok"
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
install -m 0755 "$ROOT/tests/dkms-suite/pg.sh" "$OUT/pg/pg.sh"
kroot_run "$R" "$OUT/pg" bash /mnt/work/pg.sh "$PG" >"$OUT/pg.log" 2>&1 || true
counted() {
	local tag=$1 what=$2 line
	while IFS= read -r line; do
		case $line in
		"$tag ok "*) ok "$what: ${line#"$tag ok "}" ;;
		"$tag notok "*) notok "$what: ${line#"$tag notok "}" ;;
		"$tag #"*) echo "#${line#"$tag #"}" ;;
		*) echo "#   $line" ;;
		esac
	done
}
counted PG "PostgreSQL $PG" <"$OUT/pg.log"
grep -q "^PG ok PostgreSQL $PG (pid [0-9]*) stopped" "$OUT/pg.log" ||
	notok "PostgreSQL $PG: the checks ran to the end (log: ${OUT#"$ROOT"/}/pg.log)"
echo "figure: PostgreSQL $PG in Debian $SUITE: $(($(now) - start)) s (build, package, install, server, checks)"

# MariaDB (tests/dkms-suite/mariadb.sh, in the root, after pg.sh: the
# deb stage's libsnowflake1 and libsnowflake-dev are installed by then).
if [ "$MARIADB" = --mariadb ]; then
	start=$(now)
	rm -rf "$OUT/pg/src/mariadb"
	cp -a "$ROOT/clients/mariadb" "$OUT/pg/src/"
	(cd "$OUT/pg/src/mariadb" && rm -f ./*.so)
	install -m 0755 "$ROOT/tests/dkms-suite/mariadb.sh" "$OUT/pg/mariadb.sh"
	kroot_run "$R" "$OUT/pg" bash /mnt/work/mariadb.sh >"$OUT/mariadb.log" 2>&1 || true
	counted MY MariaDB <"$OUT/mariadb.log"
	grep -q '^MY ok mariadbd (pid [0-9]*) stopped' "$OUT/mariadb.log" ||
		notok "MariaDB: the checks ran to the end (log: ${OUT#"$ROOT"/}/mariadb.log)"
	echo "figure: MariaDB in Debian $SUITE: $(($(now) - start)) s (package, install, server, checks)"
fi
finish
