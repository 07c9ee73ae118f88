#!/bin/bash
# tests/upgrade/abi.sh OUT OLD_DEBS NEW_DEBS OLD_VERSION NEW_VERSION: the
# library ABI of libsnowflake1, the previous release's package against
# today's (tests/upgrade/run.sh prints its "ok|notok ..." lines):
#   - abidiff (abigail-tools) of the two libsnowflake.so.1, with the types
#     of their -dbgsym packages and the public headers of libsnowflake-dev:
#     no removed or changed function, variable or type (added ones are how
#     the library grows);
#   - the symbols the library exports, name@NODE, are exactly the lines of
#     debian/libsnowflake1.symbols, whose nodes are userspace/lib/
#     libsnowflake.map's; every symbol of the previous release is still
#     exported with its node;
#   - abicompat: a program built against the previous release's
#     libsnowflake-dev (tests/upgrade/old-client.c; its CLI links the
#     library statically) needs nothing today's library lacks.
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
OUT=$1 OLDD=$2 NEWD=$3 OLDV=$4 NEWV=$5
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
res() { if "${@:2}"; then echo "ok $1"; else echo "notok $1"; fi; }
rm -rf "$OUT"
for side in old new; do
	d=$OLDD v=$OLDV
	[ "$side" = new ] && d=$NEWD v=$NEWV
	mkdir -p "$OUT/$side"
	for p in libsnowflake1 libsnowflake1-dbgsym libsnowflake-dev; do
		dpkg-deb -x "$d/${p}_${v}_"*.deb "$OUT/$side" || { echo "notok $side: no ${p}_$v package in $d"; exit 1; }
	done
done
lib=usr/lib/$ma/libsnowflake.so.1
abidiff --d1 "$OUT/old/usr/lib/debug" --d2 "$OUT/new/usr/lib/debug" \
	--hd1 "$OUT/old/usr/include" --hd2 "$OUT/new/usr/include" \
	"$OUT/old/$lib" "$OUT/new/$lib" >"$OUT/abidiff.txt" 2>&1
rc=$?
sed 's/^/#   /' "$OUT/abidiff.txt"
summary=$(grep -E 'changes summary:' "$OUT/abidiff.txt" | tr '\n' ' ')
# Exit bits: 1 error, 2 usage, 4 a change, 8 an incompatible change.
res "abidiff libsnowflake.so.1 $OLDV -> $NEWV: nothing removed or changed (exit $rc: ${summary:-no summary})" \
	sh -c "[ \$(( $rc & 11 )) -eq 0 ] && ! grep -qE '[1-9][0-9]* (Removed|Changed)' '$OUT/abidiff.txt' &&
		grep -q 'Functions changes summary' '$OUT/abidiff.txt'"
# Without the -dbgsym packages' DWARF, abidiff compares ELF symbols alone
# and passes a changed type (issue 42, finding 6; abidiff 2.2's
# --fail-no-debug-info does not bite on a stripped library): so each side
# must show abidw the types of its functions, and the same count on a
# stripped library with no debug tree, the canary, must be 0.
typed() { abidw --debug-info-dir "$2" "$1" 2>/dev/null | grep -c '<function-decl'; }
mkdir -p "$OUT/stripped" "$OUT/nodebug"
strip --strip-all --remove-section=.gnu_debuglink -o "$OUT/stripped/libsnowflake.so.1" "$OUT/new/$lib"
told=$(typed "$OUT/old/$lib" "$OUT/old/usr/lib/debug") tnew=$(typed "$OUT/new/$lib" "$OUT/new/usr/lib/debug")
tstrip=$(typed "$OUT/stripped/libsnowflake.so.1" "$OUT/nodebug")
res "abidiff read both libraries' types from their debug info ($OLDV: $told functions typed, $NEWV: $tnew; a stripped one: $tstrip)" \
	test "$told" -gt 0 -a "$tnew" -gt 0 -a "$tstrip" -eq 0
# The exported symbols, name@NODE (the node's own symbol too), sorted.
# (A node's own symbol, ABS, is printed without its @NODE by readelf.)
exported() {
	readelf --dyn-syms -W "$1" | awk '$5 != "LOCAL" && $7 != "UND" {
		s = $8; sub(/@@/, "@", s)
		if (s ~ /@/) print s; else if ($7 == "ABS") print s "@" s }' | sort -u
}
exported "$OUT/new/$lib" >"$OUT/new.syms"
exported "$OUT/old/$lib" >"$OUT/old.syms"
awk 'NR > 1 && /^ / { print $1 }' "$ROOT/debian/libsnowflake1.symbols" | sort -u >"$OUT/symbols-file.syms"
res "debian/libsnowflake1.symbols lists exactly the $(wc -l <"$OUT/new.syms") symbols $NEWV exports" \
	diff "$OUT/symbols-file.syms" "$OUT/new.syms"
sed -n 's/^\(LIBSNOWFLAKE_[0-9.]*\) {.*/\1/p' "$ROOT/userspace/lib/libsnowflake.map" | sort -u >"$OUT/map.nodes"
sed 's/.*@//' "$OUT/new.syms" | sort -u >"$OUT/lib.nodes"
res "the LIBSNOWFLAKE_* nodes of libsnowflake.map are the library's ($(paste -sd ' ' "$OUT/map.nodes"))" \
	diff "$OUT/map.nodes" "$OUT/lib.nodes"
res "every symbol $OLDV exported is exported by $NEWV with its node ($(wc -l <"$OUT/old.syms"))" \
	sh -c "comm -23 '$OUT/old.syms' '$OUT/new.syms' | tee '$OUT/missing.syms' | grep -q . && exit 1 || exit 0"
sed 's/^/#   missing: /' "$OUT/missing.syms"
# A program of the previous release's users (tests/upgrade/old-client.c),
# built against its headers and library, dynamically: abicompat says it
# needs nothing today's library lacks; tests/upgrade/guest.sh runs it.
if gcc -O2 -g -Wall -Wextra -Werror -I "$OUT/old/usr/include" -o "$OUT/old-client" \
	"$ROOT/tests/upgrade/old-client.c" -L "$OUT/old/usr/lib/$ma" -l:libsnowflake.so.1 >"$OUT/old-client.log" 2>&1; then
	echo "# old-client: $(readelf -V "$OUT/old-client" | grep -o 'LIBSNOWFLAKE_[0-9.]*' | sort -u | paste -sd ' ')"
	abicompat --libd1 "$OUT/old/usr/lib/debug" --libd2 "$OUT/new/usr/lib/debug" \
		"$OUT/old-client" "$OUT/old/$lib" "$OUT/new/$lib" >"$OUT/abicompat.txt" 2>&1
	rc=$?
	sed 's/^/#   /' "$OUT/abicompat.txt"
	res "abicompat: a program built against $OLDV's libsnowflake-dev needs nothing $NEWV's library lacks (exit $rc)" [ "$rc" -eq 0 ]
else
	sed 's/^/#   /' "$OUT/old-client.log"
	echo "notok a program against $OLDV's libsnowflake-dev does not build (tests/upgrade/old-client.c)"
fi
