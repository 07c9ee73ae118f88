#!/bin/bash
# Warning-free builds of the module: W=1 against every kernel's headers, and
# sparse (C=2) on top for the default kernel.  Each build is made from
# scratch in build/check-<KVER>/ so every warning is seen again.
# A "warning:", an "error:" or any sparse complaint fails the build.
# Prints "sparse: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

command -v sparse >/dev/null || warn "sparse is missing (run scripts/deps.sh)"

pass=0
fail=0
first=1
while read -r kver; do
	args=(W=1)
	what="W=1"
	if [ "$first" -eq 1 ]; then
		args+=(C=2)
		what="W=1 C=2 (sparse)"
	fi
	first=0
	dir=$BUILD/check-$kver
	log=$BUILD/check-$kver.log
	rm -rf "$dir"
	echo "sparse: building against $kver with $what"
	rc=0
	(build_module "$kver" "$dir" "${args[@]}") >"$log.raw" 2>&1 || rc=$?
	# Name the sources by their place in the repository, not in the copy.
	sed "s|$dir/||g" "$log.raw" >"$log"
	rm -f "$log.raw"
	# Complaints: compiler and sparse diagnostics, modpost warnings.
	complaints=$(grep -iE 'warning:|error:|undefined!' "$log" || true)
	if [ "$rc" -ne 0 ] || [ -n "$complaints" ]; then
		cat "$log"
		echo "sparse: $kver $what: FAILED (make exit $rc)"
		[ -n "$complaints" ] && printf '%s\n' "---- complaints ----" "$complaints" "----"
		fail=$((fail + 1))
	elif [ ! -f "$dir/snowflake.ko" ]; then
		cat "$log"
		echo "sparse: $kver $what: FAILED (no snowflake.ko)"
		fail=$((fail + 1))
	else
		echo "sparse: $kver $what: clean"
		pass=$((pass + 1))
	fi
done < <(all_kvers)

echo "sparse: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
