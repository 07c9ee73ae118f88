#!/bin/bash
# checkpatch.pl --strict on every driver source and the uapi header, one
# pass per file: no error, warning or check may remain.
# Prints the findings and "style: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

CHECKPATCH=$BUILD/ksrc/scripts/checkpatch.pl
pass=0
fail=0

if [ ! -f "$CHECKPATCH" ]; then
	echo "style: $CHECKPATCH is missing (run scripts/ksrc.sh)" >&2
	echo "style: 0 passed, 1 failed"
	exit 1
fi

cd "$ROOT"
files=()
while IFS= read -r f; do
	files+=("$f")
done < <(find driver -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
if [ "${#files[@]}" -eq 0 ]; then
	echo "style: no driver/*.[ch] to check" >&2
	fail=$((fail + 1))
fi
files+=(uapi/linux/snowflake.h)

for f in "${files[@]}"; do
	if [ ! -f "$f" ]; then
		echo "style: $f is missing"
		fail=$((fail + 1))
		continue
	fi
	ignore=()
	# The compatibility header is where kernel version tests belong.
	case $f in
	*_compat.h) ignore=(--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON) ;;
	esac
	out=$(perl "$CHECKPATCH" --strict --no-tree --show-types --color=never "${ignore[@]}" -f "$f" 2>&1) || true
	total=$(sed -n 's/^total: \([0-9]*\) errors, \([0-9]*\) warnings, \([0-9]*\) checks.*/\1 \2 \3/p' <<<"$out")
	if [ -z "$total" ]; then
		printf '%s\n' "$out"
		echo "style: $f: checkpatch.pl printed no summary"
		fail=$((fail + 1))
	elif [ "$total" = "0 0 0" ]; then
		echo "style: $f: clean"
		pass=$((pass + 1))
	else
		printf '%s\n' "$out"
		read -r e w c <<<"$total"
		echo "style: $f: $e errors, $w warnings, $c checks"
		fail=$((fail + 1))
	fi
done

echo "style: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
