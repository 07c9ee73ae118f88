#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make check` of userspace/: run the unit test programs given as arguments
# (kselftest TAP), then check the exported symbols of the shared library
# against the header.  Prints "userspace: N passed, M failed"; exits
# nonzero when anything failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-../build/userspace}

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok $((pass + fail)) $*"; }
notok() { fail=$((fail + 1)); echo "not ok $((pass + fail)) $*"; }

for t in "$@"; do
	log=$OUT/tests/${t##*/}.log
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -cE '^ok [0-9]+ ' "$log")
	f=$(grep -cE '^not ok [0-9]+ ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "# ${t##*/} exited $rc without a failing test"
		f=1
	elif [ "$((p + f))" -eq 0 ]; then
		echo "# ${t##*/}: no TAP result"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
done

# The library exports exactly the functions the header declares.
want=$(sed -n 's/^[a-z].*[ *]\(snowflake_[a-z_]*\)(.*/\1/p' include/snowflake.h | sort)
have=$(nm -D --defined-only "$OUT/libsnowflake.so.1" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort)
if [ -n "$want" ] && [ "$want" = "$have" ]; then
	ok "exports: the $(wc -l <<<"$want") functions of snowflake.h, nothing else"
else
	notok "exports differ from snowflake.h:"
	diff <(echo "$want") <(echo "$have") | sed 's/^/#   /'
fi
soname=$(objdump -p "$OUT/libsnowflake.so.1" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" = libsnowflake.so.1 ]; then ok "soname $soname"; else notok "soname '$soname'"; fi
if nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_open@@LIBSNOWFLAKE_1$'; then
	ok "symbols versioned LIBSNOWFLAKE_1"
else
	notok "symbols not versioned LIBSNOWFLAKE_1"
fi
# Functions added later keep their own version node.
if nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_set_fence@@LIBSNOWFLAKE_1.1$' &&
	nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_get_fence@@LIBSNOWFLAKE_1.1$'; then
	ok "fence functions versioned LIBSNOWFLAKE_1.1"
else
	notok "fence functions not versioned LIBSNOWFLAKE_1.1"
fi
if nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_assign_ids@@LIBSNOWFLAKE_1.2$'; then
	ok "snowflake_assign_ids versioned LIBSNOWFLAKE_1.2"
else
	notok "snowflake_assign_ids not versioned LIBSNOWFLAKE_1.2"
fi

if nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_uuid_next_n@@LIBSNOWFLAKE_1.2$' &&
	nm -D "$OUT/libsnowflake.so.1" | grep -q ' T snowflake_uuid_format@@LIBSNOWFLAKE_1.2$'; then
	ok "UUIDv7 functions versioned LIBSNOWFLAKE_1.2"
else
	notok "UUIDv7 functions not versioned LIBSNOWFLAKE_1.2"
fi

echo "userspace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
