#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's examples that cannot run in the busybox guest, run on the host
# as they are written in README.md: the Python and PHP examples of "Reading
# IDs" and its C program (built with libsnowflake), with only the path
# /dev/snowflake replaced by a recorded ID stream; and the C fragment of "The
# library" compiled.  (The shell and CLI examples run in the guest:
# selftests/readme_test.c.)
#
# The stream: IDs made with snowflake_compose() (default layout, now, worker 3,
# datacenter 1), read from a regular file and from a pipe that holds fewer IDs
# than the example asks for, as the device gives when a millisecond runs out.
# Each example's output must be exactly the IDs it read.
#
# Prints "ok   ...", "FAIL ..." or "skip ..." per check, then
# "readme-examples: N passed, M failed"; exits nonzero when anything failed.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

readme=$ROOT/README.md
work=$BUILD/readme-examples
lib_out=$BUILD/userspace
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
skip() { echo "skip $*"; }
finish() {
	echo "readme-examples: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

# block HEADING LANG: the first ```LANG block after the line starting with
# HEADING, before the next "## " heading.
block() {
	awk -v head="$1" -v fence="\`\`\`$2" '
		!sect { if (index($0, head) == 1) sect = 1; next }
		!inb { if ($0 ~ /^## /) exit; if ($0 == fence) inb = 1; next }
		$0 == "```" { exit }
		{ print }
	' "$readme"
}

# check NAME EXPECTED_FILE CMD...: CMD's stdout must equal EXPECTED_FILE.
check() {
	local name=$1 want=$2 got
	shift 2
	if ! got=$("$@" 2>"$work/stderr"); then
		bad "$name: exited nonzero"
		sed 's/^/    | /' "$work/stderr"
		return 0
	fi
	if [ "$got" = "$(cat "$want")" ]; then
		ok "$name: $(wc -l <"$want") IDs, as recorded"
	else
		bad "$name: output differs from the recorded IDs"
		diff <(cat "$want") <(printf '%s\n' "$got") | head -n 10 | sed 's/^/    | /'
	fi
}

rm -rf "$work"
mkdir -p "$work"

if ! make -s -C "$ROOT/userspace" OUT="$lib_out" "$lib_out/libsnowflake.a" >"$work/make.log" 2>&1; then
	sed 's/^/    | /' "$work/make.log"
	bad "building libsnowflake.a"
	finish
fi
CFLAGS=(-std=gnu11 -O2 -Wall -Wextra -Werror -I"$ROOT/userspace/include" -I"$ROOT/uapi")

# The recorded stream: 100 IDs, 40 per tick, as three reads would give them.
cat >"$work/record.c" <<'EOF'
#include <stdio.h>
#include <time.h>
#include <snowflake.h>

int main(int argc, char **argv)
{
	struct snowflake_config layout;
	struct snowflake_parts p = { .datacenter = 1, .worker = 3 };
	char text[SNOWFLAKE_FORMAT_MAX];
	struct timespec now;
	FILE *bin, *txt;
	uint64_t id;
	int i;

	if (argc != 3 || !(bin = fopen(argv[1], "wb")) || !(txt = fopen(argv[2], "w")))
		return 2;
	snowflake_default_layout(&layout);
	clock_gettime(CLOCK_REALTIME, &now);
	p.timestamp = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000 -
		      layout.epoch_ms;
	for (i = 0; i < 100; i++) {
		p.sequence = (uint32_t)(i % 40);
		if (i && !p.sequence)
			p.timestamp++;
		if (snowflake_compose(&layout, &p, &id) ||
		    snowflake_format(id, SNOWFLAKE_FORMAT_DEC, text, sizeof(text)) < 0)
			return 1;
		fwrite(&id, sizeof(id), 1, bin);	/* host byte order, as read(2) gives */
		fprintf(txt, "%s\n", text);
	}
	return fclose(bin) || fclose(txt);
}
EOF
if cc "${CFLAGS[@]}" -o "$work/record" "$work/record.c" "$lib_out/libsnowflake.a" &&
	"$work/record" "$work/ids.bin" "$work/ids.txt"; then
	ok "recorded 100 IDs with snowflake_compose()"
else
	bad "recording IDs with snowflake_compose()"
	finish
fi
head -n 64 "$work/ids.txt" >"$work/want64"
head -n 16 "$work/ids.txt" >"$work/want16"
head -n 10 "$work/ids.txt" >"$work/want10"
head -n 1 "$work/ids.txt" >"$work/want1"

# replace PATH: the block on stdin with the device path replaced.
replace() { sed "s|/dev/snowflake|$1|g"; }

# Python (os.read + struct).
py=$(command -v python3 || true)
src=$(block "## Reading IDs" python)
if [ -z "$src" ]; then
	bad "README: no \`\`\`python block in ## Reading IDs"
elif [ -z "$py" ]; then
	bad "python3 is missing (scripts/deps.sh installs it)"
else
	printf '%s\n%s\n' "$(replace "$work/ids.bin" <<<"$src")" \
		'print("\n".join(str(i) for i in ids))' >"$work/example_file.py"
	check "Python example, regular file" "$work/want64" "$py" "$work/example_file.py"
	printf '%s\n%s\n' "$(replace /dev/stdin <<<"$src")" \
		'print("\n".join(str(i) for i in ids))' >"$work/example_pipe.py"
	check "Python example, short read from a pipe" "$work/want10" \
		bash -c "head -c 80 '$work/ids.bin' | '$py' '$work/example_pipe.py'"
fi

# PHP (fread + unpack).
php=$(command -v php || true)
src=$(block "## Reading IDs" php)
if [ -z "$src" ]; then
	bad "README: no \`\`\`php block in ## Reading IDs"
elif [ -z "$php" ]; then
	skip "PHP example: php is not installed (scripts/deps.sh installs php-cli)"
else
	printf '%s\n%s\n' "$(replace "$work/ids.bin" <<<"$src")" 'echo $id, "\n";' \
		>"$work/example.php"
	# One ID of 8 bytes: a short read cannot happen.  (No pipe: PHP's
	# fopen() resolves /dev/stdin to the pipe's name, which cannot be opened.)
	check "PHP example, regular file" "$work/want1" "$php" "$work/example.php"
fi

# C with libsnowflake: the whole program, through $SNOWFLAKE_DEVICE.
block "## Reading IDs" c >"$work/example.c"
if [ ! -s "$work/example.c" ]; then
	bad "README: no \`\`\`c block in ## Reading IDs"
elif ! cc "${CFLAGS[@]}" -o "$work/example_c" "$work/example.c" "$lib_out/libsnowflake.a" \
	2>"$work/cc.log"; then
	bad "C example: does not compile"
	sed 's/^/    | /' "$work/cc.log"
else
	ok "C example compiles with -Wall -Wextra -Werror"
	# libsnowflake opens only the device (the guest's libsnowflake_test
	# reads it): a recorded stream in a file or a pipe is refused, with the
	# example's message and status 1.
	for how in file pipe; do
		rc=0
		if [ "$how" = file ]; then
			got=$(SNOWFLAKE_DEVICE="$work/ids.bin" "$work/example_c" 2>&1) || rc=$?
		else
			got=$(SNOWFLAKE_DEVICE=/dev/stdin "$work/example_c" 2>&1 <"$work/ids.bin") || rc=$?
		fi
		if [ "$rc" -eq 1 ] && [ "$got" = "snowflake: not a snowflake device" ]; then
			ok "C example refuses a $how that is not the device: $got"
		else
			bad "C example with a $how: exit $rc, '$got' (want 1, 'snowflake: not a snowflake device')"
		fi
	done
fi

# /dev/uuidv7: a stream made by the module's own UUIDv7 code
# (driver/uuid_core.c, built natively) read by the README's Python and PHP
# examples; then an independent implementation, Python's uuid module, must
# see version 7 and the RFC variant in every UUID, and the time in its top
# 48 bits must be what the CLI's `snowflake decode` prints.
cat >"$work/record_uuid.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <snowflake.h>
#include "uuid_core.h"

int main(int argc, char **argv)
{
	struct sf_uuid_core u;
	struct sf_uuid_block b;
	char text[SNOWFLAKE_UUID_STR_MAX];
	unsigned char out[16];
	struct timespec now;
	FILE *bin, *txt;
	uint64_t ms;
	int i;

	if (argc != 3 || !(bin = fopen(argv[1], "wb")) || !(txt = fopen(argv[2], "w")))
		return 2;
	clock_gettime(CLOCK_REALTIME, &now);
	srandom((unsigned int)now.tv_nsec);
	ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	sf_uuid_core_init(&u, SF_UUID_COUNTER_BITS);
	for (i = 0; i < 100; i++) {
		uint64_t seed = (uint64_t)random() << 31 ^ (uint64_t)random();

		if (i % 40 == 39)
			ms++;
		if (sf_uuid_core_reserve(&u, ms, 1, seed, &b) != 1)
			return 1;
		sf_uuid_format(out, b.ms, b.first, (uint32_t)random());
		if (snowflake_uuid_format(out, text, sizeof(text)) != 36)
			return 1;
		fwrite(out, 16, 1, bin);
		fprintf(txt, "%s\n", text);
	}
	return fclose(bin) || fclose(txt);
}
EOF
if cc "${CFLAGS[@]}" -I"$ROOT/driver" -o "$work/record_uuid" "$work/record_uuid.c" \
	"$ROOT/driver/uuid_core.c" "$lib_out/libsnowflake.a" &&
	"$work/record_uuid" "$work/uuids.bin" "$work/uuids.txt"; then
	ok "recorded 100 UUIDv7s with driver/uuid_core.c"
	head -n 64 "$work/uuids.txt" >"$work/uwant64"
	head -n 1 "$work/uuids.txt" >"$work/uwant1"
	heading="## Reading UUIDv7s"
	src=$(block "$heading" python)
	if [ -z "$src" ] || [ -z "$py" ]; then
		bad "README: no \`\`\`python block in $heading (or no python3)"
	else
		printf '%s\n%s\n' "$(sed "s|/dev/uuidv7|$work/uuids.bin|g" <<<"$src")" \
			'print("\n".join(str(u) for u in uuids))' >"$work/uexample.py"
		check "UUIDv7 Python example, regular file" "$work/uwant64" "$py" "$work/uexample.py"
	fi
	src=$(block "$heading" php)
	if [ -z "$src" ]; then
		bad "README: no \`\`\`php block in $heading"
	elif [ -z "$php" ]; then
		skip "UUIDv7 PHP example: php is not installed"
	else
		printf '%s\n%s\n' "$(sed "s|/dev/uuidv7|$work/uuids.bin|g" <<<"$src")" \
			'echo $uuid, "\n";' >"$work/uexample.php"
		check "UUIDv7 PHP example, regular file" "$work/uwant1" "$php" "$work/uexample.php"
	fi
	# Python's uuid module against the CLI's decode, UUID by UUID.
	if make -s -C "$ROOT/userspace" OUT="$lib_out" "$lib_out/snowflake" >"$work/make.log" 2>&1 &&
		xargs "$lib_out/snowflake" decode <"$work/uuids.txt" >"$work/udecode.txt"; then
		cat >"$work/ucheck.py" <<'EOF'
import sys, uuid
data = open(sys.argv[1], "rb").read()
lines = open(sys.argv[2]).read().split("\n")
n = 0
for i in range(0, len(data), 16):
    u = uuid.UUID(bytes=data[i:i + 16])
    fields = dict(f.split("=", 1) for f in lines[i // 16].split())
    assert u.version == 7, (u, u.version)
    assert u.variant == uuid.RFC_4122, (u, u.variant)
    assert fields["uuid"] == str(u), (fields, u)
    assert int(fields["unix_ms"]) == u.int >> 80, (fields, u.int >> 80)
    n += 1
print(n)
EOF
		if [ "$("$py" "$work/ucheck.py" "$work/uuids.bin" "$work/udecode.txt" 2>"$work/stderr")" = 100 ]; then
			ok "Python's uuid: 100 UUIDs of version 7, RFC variant, time = snowflake decode's unix_ms"
		else
			bad "Python's uuid disagrees with the UUIDs or with snowflake decode"
			sed 's/^/    | /' "$work/stderr"
		fi
	else
		bad "snowflake decode of the recorded UUIDv7s"
		sed 's/^/    | /' "$work/make.log"
	fi
else
	bad "recording UUIDv7s with driver/uuid_core.c"
fi

# The C fragment of "The library": compiles inside a function with an open handle.
src=$(block "## The library" c)
if [ -z "$src" ]; then
	bad "README: no \`\`\`c block in ## The library"
else
	{
		printf '#include <inttypes.h>\n#include <stdio.h>\n#include <snowflake.h>\n\n'
		printf 'void example(struct snowflake *sf);\n\nvoid example(struct snowflake *sf)\n{\n'
		printf '%s\n}\n' "$src"
	} >"$work/fragment.c"
	if cc "${CFLAGS[@]}" -c -o "$work/fragment.o" "$work/fragment.c" 2>"$work/cc.log"; then
		ok "the library's decode fragment compiles with -Wall -Wextra -Werror"
	else
		bad "the library's decode fragment does not compile"
		sed 's/^/    | /' "$work/cc.log"
	fi
fi

finish
