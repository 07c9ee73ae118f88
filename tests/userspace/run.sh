#!/bin/bash
# The userspace stage of `make check`: libsnowflake and the CLI built with
# WERROR=1 (-Werror), the native unit tests (`make -C userspace check`, ASan + UBSan),
# then an install into a temporary DESTDIR: a program built against the
# installed tree through pkg-config, shared and static, the installed man
# pages rendered without warnings, and an uninstall that leaves none of our
# files.  Prints "userspace: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

dir=$ROOT/userspace
out=$BUILD/userspace
mkdir -p "$out"
TAP_PREFIX="install: "
mk() { make -C "$dir" OUT="$out" WERROR=1 ${V:+V="$V"} "$@"; }

# 1. Build and unit tests; their counts come from the last line of check.
log=$out/check.log
set +e
mk all check 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
line=$(grep -E '^userspace: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n1) || true
if [ -n "$line" ]; then
	pass=$(sed -E 's/^userspace: ([0-9]+) passed.*/\1/' <<<"$line")
	fail=$(sed -E 's/^.* ([0-9]+) failed.*/\1/' <<<"$line")
	ntap=$((pass + fail))
fi
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	notok "make -C userspace check exited $rc without a failing test"
fi

# 1b. A user's or a distribution's build: their CFLAGS, no -Werror forced
# (gcc 12 at -O3 warns where -O2 does not), and without hiredis: the
# library, the CLI and floord, no agent.
TAP_PREFIX="build: "
for variant in o3 nohiredis; do
	vout=$out/variant-$variant
	rm -rf "$vout"
	case $variant in
	o3) vargs=(CFLAGS="-O3 -g") venv=() ;;
	nohiredis) vargs=() venv=(PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH=) ;;
	esac
	if env "${venv[@]}" make -C "$dir" OUT="$vout" "${vargs[@]}" all >"$vout.log" 2>&1 &&
		[ -x "$vout/snowflake" ] && [ -x "$vout/snowflake-floord" ] && [ -f "$vout/libsnowflake.so.1" ]; then
		case $variant in
		o3) ok "make all CFLAGS=\"-O3 -g\" (no -Werror forced)" ;;
		nohiredis)
			if [ ! -e "$vout/snowflake-agent" ] && grep -q 'snowflake-agent not built' "$vout.log"; then
				ok "make all without hiredis: library, CLI and floord; the agent left out, with a note"
			else
				notok "make all without hiredis: the agent should be left out with a note"
			fi
			;;
		esac
	else
		indent <"$vout.log"
		notok "make all ($variant)"
	fi
	rm -rf "$vout" "$vout.log"
done

# 1c. --version of every program: the VERSION file's.
version=$(cat "$ROOT/VERSION")
for prog in snowflake snowflake-floord snowflake-agent; do
	[ -x "$out/$prog" ] || continue
	check "$prog --version prints '$prog $version'" \
		test "$("$out/$prog" --version 2>&1)" = "$prog $version"
done

# 1c'. The agent reads its configuration from $CREDENTIALS_DIRECTORY/agent.conf
# (snowflake-agent.service's LoadCredential=) when no --config is given.
if [ -x "$out/snowflake-agent" ]; then
	cred=$(mktemp -d "$out/cred.XXXXXX")
	printf 'cluster = from-credential\n' >"$cred/agent.conf"
	got=$(CREDENTIALS_DIRECTORY=$cred "$out/snowflake-agent" --print-config 2>&1) || true
	if grep -qx 'cluster = from-credential' <<<"$got" &&
		grep -qx "# config file: $cred/agent.conf" <<<"$got"; then
		ok "snowflake-agent reads \$CREDENTIALS_DIRECTORY/agent.conf"
	else
		notok "snowflake-agent does not read \$CREDENTIALS_DIRECTORY/agent.conf"
		indent <<<"$got"
	fi
	rm -rf "$cred"
fi

# 1c''. snowflake-floord and what its state directory holds (issue 24): a
# file with a right checksum over a floor no device can use is corrupt
# (exit 3) in every mode, before any device is opened; the documented exit
# codes for the other bad inputs; a stale temporary file is removed.
if [ -x "$out/snowflake-floord" ]; then
	TAP_PREFIX="floord: "
	fd=$(mktemp -d "$out/floord.XXXXXX")
	# put_state DIR BODY: DIR/floor with BODY and its right crc32 line.
	put_state() {
		mkdir -p "$1"
		python3 -c 'import sys, zlib; b = sys.argv[1].encode(); sys.stdout.buffer.write(b + b"crc32 %08x\n" % zlib.crc32(b))' \
			"$2" >"$1/floor"
	}
	# floord_case WHAT WANT-RC WANT-TEXT ARGS...: floord ARGS exits WANT-RC, saying WANT-TEXT.
	floord_case() {
		local what=$1 want=$2 text=$3 got rc=0
		shift 3
		got=$(SNOWFLAKE_DEVICE=/nonexistent/snowflake "$out/snowflake-floord" "$@" 2>&1) || rc=$?
		if [ "$rc" = "$want" ] && grep -qF -- "$text" <<<"$got"; then
			ok "snowflake-floord $what: exit $rc, \"$text\""
		else
			notok "snowflake-floord $what: exit $rc (want $want and \"$text\")"
			indent <<<"$got"
		fi
	}
	id=0f3c9a5e7d1b24c68e0a9b3f5c7d1e2a
	put_state "$fd/max" $'snowflake-floor 1\nfloor_ms 18446744073709551615\n'
	for mode in --show --restore --save ""; do
		floord_case "${mode:-(daemon)} with floor_ms 18446744073709551615" 3 \
			"floor_ms 18446744073709551615 is past year 9999" ${mode:+"$mode"} --state-dir "$fd/max"
	done
	put_state "$fd/y10k" $'snowflake-floor 1\nfloor_ms 253402300800000\n'
	floord_case "--restore with floor_ms at year 10000" 3 "is past year 9999" --restore --state-dir "$fd/y10k"
	put_state "$fd/high" "snowflake-floor 2"$'\nfloor_ms 1763769600123\nhigh_ms 1763769700123\nmargin_ms 10000\nsaved_unix_ms 1763769590125\ninstance_id '"$id"$'\n'
	floord_case "--show with high_ms above floor_ms" 3 "high_ms 1763769700123 is above floor_ms" --show --state-dir "$fd/high"
	put_state "$fd/margin" "snowflake-floor 2"$'\nfloor_ms 1763769600123\nhigh_ms 1763769590123\nmargin_ms 86400001\nsaved_unix_ms 1763769590125\ninstance_id '"$id"$'\n'
	floord_case "--show with margin_ms over a day" 3 "margin_ms 86400001 is more than a day" --show --state-dir "$fd/margin"
	put_state "$fd/v7" $'snowflake-floor 7\nfloor_ms 5\n'
	floord_case "--restore with format version 7" 3 "unknown format: format version 7" --restore --state-dir "$fd/v7"
	mkdir -p "$fd/torn" && printf 'snowflake-floor 1\nfloor_ms 17637696' >"$fd/torn/floor"
	floord_case "--show with a torn file" 3 "does not end with a newline" --show --state-dir "$fd/torn"
	put_state "$fd/good" "snowflake-floor 2"$'\nfloor_ms 1763769600123\nhigh_ms 1763769590123\nmargin_ms 10000\nsaved_unix_ms 1763769590125\ninstance_id '"$id"$'\n'
	floord_case "--show with a good file" 0 "floor_ms 1763769600123 2025-11-22T00:00:00.123Z" --show --state-dir "$fd/good"
	mkdir -p "$fd/empty"
	floord_case "--show with no file" 1 "no saved floor" --show --state-dir "$fd/empty"
	floord_case "--show with no directory" 1 "does not exist" --show --state-dir "$fd/missing"
	floord_case "--margin 0" 2 "--margin: '0' is not a duration" --show --margin 0
	floord_case "--margin 2s --interval 1s" 2 "must be more than twice --interval" --show --margin 2s --interval 1s
	floord_case "--state-dir ''" 2 "--state-dir: empty" --show --state-dir ''
	floord_case "--restore --save" 2 "exclude each other" --restore --save
	floord_case "--bogus" 2 "unknown option '--bogus'" --bogus
	floord_case "--show extra" 2 "unexpected argument 'extra'" --show extra
	# An interrupted save's leftovers: removed under the lock, even with no device.
	mkdir -p "$fd/stale"
	: >"$fd/stale/floor.tmp"
	: >"$fd/stale/floor.tmp.x1y2z3"
	floord_case "--restore with two stale temporary files (and no device)" 1 \
		"removed 2 temporary files of an interrupted save" --restore --state-dir "$fd/stale"
	check "... and they are gone" test -z "$(find "$fd/stale" -name 'floor.tmp*')"
	rm -rf "$fd"
	TAP_PREFIX="build: "
fi

# 1d. The bash completion offers every long option of the CLI.
comp=$ROOT/packaging/bash-completion/snowflake
missing=()
while read -r o; do
	grep -qw -- "--$o" "$comp" || missing+=("--$o")
done < <(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*_argument.*/\1/p' "$dir/cli/opts.c" | sort -u)
if [ "${#missing[@]}" -eq 0 ] && bash -n "$comp"; then
	ok "the bash completion offers every option of cli/opts.c"
else
	notok "the bash completion lacks: ${missing[*]}"
fi
# 1e. snowflake(1) with bad input (issue 24): every command refuses it with
# a message and its exit code, and prints nothing on stdout.  The table
# (input, message, exit code) is written to $out/cli-bad-input.md.  A node
# made with mknod for a misc device that is not ours (fuse, 10:229, or
# another harmless one) stands in for a wrong --device.
TAP_PREFIX="cli: "
cli=$out/snowflake
san=$out/san/snowflake
mk "$san" >/dev/null
ctmp=$(mktemp -d "$out/cli.XXXXXX")
table=$out/cli-bad-input.md
printf '| input | message (stderr, first line) | exit |\n|---|---|---|\n' >"$table"
# bad RC PATTERN [VAR=VALUE...] -- ARG...: `snowflake ARG...` (stdin from
# $bad_in, else /dev/null) exits RC, says PATTERN (fixed string) on stderr,
# and prints nothing on stdout.
bad() {
	local want=$1 pat=$2 envs=() rc=0 first
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$cli" "$@" <"${bad_in:-/dev/null}" >"$ctmp/out" 2>"$ctmp/err" || rc=$?
	first=$(head -n1 "$ctmp/err")
	first=${first//"$ctmp"/DIR}
	# shellcheck disable=SC2016 # backquotes of Markdown
	printf '| %s`snowflake %s`%s | %s | %s |\n' "${envs[*]:+${envs[*]//"$ctmp"/DIR} }" "${*//"$ctmp"/DIR}" \
		"${bad_in:+ < $(basename "$bad_in")}" "${first//|/\\|}" "$rc" >>"$table"
	if [ "$rc" -eq "$want" ] && grep -qF -- "$pat" "$ctmp/err" && [ ! -s "$ctmp/out" ]; then
		ok "snowflake $* (${envs[*]:-}): exit $rc, '$pat'"
	else
		notok "snowflake $* (${envs[*]:-}): exit $rc (want $want), '$pat' wanted on stderr, stdout empty"
		indent <"$ctmp/err"
		head -c 300 "$ctmp/out" | indent
	fi
}
foreign=
for m in fuse loop-control hw_random; do
	[ -r "/sys/class/misc/$m/dev" ] || continue
	IFS=: read -r fmaj fmin <"/sys/class/misc/$m/dev"
	mknod "$ctmp/$m" c "$fmaj" "$fmin" 2>/dev/null && foreign=$ctmp/$m && break
done
nsd="not a snowflake device"
if [ -n "$foreign" ]; then
	# Issue 24, item 4: the device is identified at open (its sysfs name).
	bad 1 "$nsd" -- --device "$foreign" next -n 2
	bad 1 "$nsd" -- next --device "$foreign" -f json
	bad 1 "$nsd" SNOWFLAKE_DEVICE="$foreign" -- next
	bad 1 "$nsd" -- uuid --device "$foreign" -n 2
	bad 1 "$nsd" SNOWFLAKE_UUID_DEVICE="$foreign" -- uuid
	bad 1 "$nsd" -- config --device "$foreign"
	bad 1 "$nsd" -- config --device "$foreign" --worker 1
	bad 1 "$nsd" -- stats --device "$foreign"
	bad 1 "$nsd" -- stats --device "$foreign" --prometheus
	bad 1 "$nsd" -- decode --device "$foreign" 1
	bad 1 "$nsd" -- decode --device "$foreign" --layout-from-device 1
elif [ "$(id -u)" -eq 0 ]; then
	notok "mknod of a foreign misc device (fuse, loop-control, hw_random) failed as root"
else
	echo "# not root: the foreign-device checks need mknod (make check runs as root)"
fi
bad 1 "no such device" -- --device "$ctmp/missing" next
bad 1 "$nsd" -- --device /dev/null next
bad 1 "$nsd" -- uuid --device /dev/null
bad 1 "$nsd" -- --device "$ctmp" config
# The command line: exit 2, nothing done.
bad 2 "no command given" --
bad 2 "unknown command 'frob'" -- frob
bad 2 "unknown option --bogus" -- --bogus next
bad 2 "--device: empty path" -- --device= next
bad 2 "help: unknown command 'nope'" -- help nope
bad 2 "help: unexpected argument 'extra'" -- help next extra
bad 2 "help: unexpected argument '--bogus'" -- help decode --bogus
bad 2 "next: -n: 0 is out of range" -- next -n 0
bad 2 "next: --count: 'x' is not an unsigned decimal number" -- next --count x
bad 2 "next: --count: 4294967296 is out of range" -- next --count=4294967296
bad 2 "next: --format: 'xml' is not dec, hex or json" -- next -f xml
bad 2 "next: option --format needs a value" -- next --format
bad 2 "next: unexpected argument '3'" -- next 3
bad 2 "next: unknown option --json" -- next --json
bad 2 "uuid: -n: 0 is out of range" -- uuid -n 0
bad 2 "uuid: --count: '-1' is not an unsigned decimal number" -- uuid --count=-1
bad 2 "uuid: unknown option --format" -- uuid --format hex
bad 2 "uuid: unexpected argument 'x'" -- uuid x
bad 2 "decode: 'x1' is not an ID" -- decode --bits 41/5/5/12 x1
bad 2 "decode: '18446744073709551616' does not fit 64 bits" -- decode 18446744073709551616
bad 2 "is not a UUIDv7" -- decode 017f22e2-79b0-4cc3-98c4-dc0c0c07398f
bad 2 "decode: 1024 has bits set above the 10/0/0/0 layout" -- decode --bits 10/0/0/0 1024
bad 2 "decode: 0x8000000000000000 has bits set above" -- decode --unit 1 0x8000000000000000
# Issue 24, item 6: the time overflows, the bits fit.
bad 2 "decode: 0x7fffffffffffffff: its time does not fit 64-bit Unix ms" -- \
	decode --bits 63/0/0/0 --unit 2 0x7fffffffffffffff
bad 2 "decode: --bits: '41/5//12' is not" -- decode --bits 41/5//12 1
bad 2 "decode: --unit: 0 is out of range" -- decode --unit 0 1
bad 2 "decode: --epoch: '-1' is not an unsigned decimal number" -- decode --epoch -1 1
bad 2 "is not valid" -- decode --bits 41/32/0/0 1
bad 2 "exclude each other" -- decode --epoch 1 --layout-from-device 1
bad 2 "decode: '-' (standard input) goes alone" -- decode --unit 1 1 -
printf '1\n2 x3\n' >"$ctmp/ids"
bad_in=$ctmp/ids bad 2 "decode: standard input line 2: 'x3' is not an ID" -- decode --unit 1 -
bad_in=/dev/null bad 2 "decode: no ID on standard input" -- decode --unit 1
bad 2 "config: --worker: 'x' is not an unsigned decimal number" -- config --worker x
bad 2 "config: --datacenter: 4294967296 is out of range" -- config --datacenter 4294967296
bad 2 "config: --random-sequence: 2 is out of range (0..1)" -- config --random-sequence 2
bad 2 "config: --fence: 2 is out of range (0..1)" -- config --fence 2
bad 2 "config: --rearm needs --worker" -- config --rearm
bad 2 "config: --force goes with --floor" -- config --force
bad 2 "config: --json shows the configuration; it takes no change" -- config --json --worker 1
bad 2 "config: --floor 9999999999999 is" -- config --floor 9999999999999
bad 2 "config: --floor: 9223372036854775808 is out of range" -- config --floor 9223372036854775808
bad 2 "config: unexpected argument 'x'" -- config x
# Issue 44, item 2: a host's identity, applied and recorded (config --save).
bad 2 "config: --save records the identity given now: it needs --worker N" -- config --save
bad 2 "config: --save records the identity given now: it needs --worker N" -- config --save --datacenter 1
bad 2 "config: --strict needs --save" -- config --strict
bad 2 "config: --strict leaves the ids to snowflake-agent" -- config --strict --save --worker 7
bad 2 "config: --strict leaves the ids to snowflake-agent" -- config --strict --save --datacenter 1
bad 2 "config: --save records the ids or strict mode only" -- config --save --worker 7 --floor 1
bad 2 "config: --save records the ids or strict mode only" -- config --save --worker 7 --fence 0
bad 2 "config: --json shows the configuration; it takes no change" -- config --json --strict --save
bad 2 "config: --worker: '-1' is not an unsigned decimal number" -- config --save --worker -1
bad 2 "config: unknown option --strict" -- config --strict=1 --save
bad 2 "stats: --json and --prometheus exclude each other" -- stats --json --prometheus
bad 2 "stats: unknown option --worker" -- stats --worker 1
bad 2 "stats: unexpected argument 'x'" -- stats x
echo "# the table: $table"
# ... and every function of snowflake.h has a bad-input line in lib_test's log.
missing=()
while read -r f; do
	grep -q "^# bad-input: $f |" "$out/tests/lib_test.log" 2>/dev/null || missing+=("$f")
done < <(sed -n 's/^[a-z].*[ *]\(snowflake_[a-z_]*\)(.*/\1/p' "$dir/include/snowflake.h" | sort -u)
if [ "${#missing[@]}" -eq 0 ]; then
	ok "lib_test gives every function of snowflake.h bad input"
else
	notok "no bad input in lib_test for: ${missing[*]}"
fi

# decode reads IDs from standard input (no ID, or -): the forms of the
# arguments (quoted, hex, upper-case and quoted UUIDs), blanks and lines.
printf '1 "7"\n0x10\t"017F22E2-79B0-7CC3-98C4-DC0C0C07398F"\n' >"$ctmp/in"
want=$("$cli" decode --unit 1 1 '"7"' 0x10 '"017F22E2-79B0-7CC3-98C4-DC0C0C07398F"')
check "decode reads IDs from standard input, as arguments" \
	test "$("$cli" decode --unit 1 <"$ctmp/in")" = "$want" -a \
	"$("$cli" decode --unit 1 - <"$ctmp/in")" = "$want" -a "$(wc -l <<<"$want")" -eq 4

# Issue 24, item 8: a closed pipe is exit 1, silently, for every command
# that writes much (it was 141, SIGPIPE); SIGPIPE ignored by the caller
# or not.  A file of IDs stands in for the device (test build).
python3 -c 'import struct,sys; sys.stdout.buffer.write(b"".join(struct.pack("<Q", i) for i in range(1, 200001)))' >"$ctmp/ids.bin"
pipe_rc() { # CMD...: "exit status of CMD | head -1, bytes on stderr"
	local rcs
	"$@" 2>"$ctmp/perr" | head -n1 >/dev/null
	rcs=("${PIPESTATUS[@]}")
	echo "${rcs[0]} $(wc -c <"$ctmp/perr")"
}
seq 1 200000 >"$ctmp/seq"
export SF_TESTING_ANY_FILE=1
for c in "next -n 200000" "next -n 200000 -f json" "decode --unit 1 -"; do
	# shellcheck disable=SC2086 # $c is a list of words
	got=$(pipe_rc "$san" --device "$ctmp/ids.bin" $c <"$ctmp/seq")
	check "snowflake $c | head -1: exit 1, silent (got: exit, stderr bytes: $got)" test "$got" = "1 0"
done
unset SF_TESTING_ANY_FILE

# Issue 24, item 5: uuid stops at the first write error (it read on: 336 s
# for 200,000 UUIDs).  A FIFO fed by a writer that counts what it could
# write before the reader went away: one chunk (64 KiB) and the pipe's
# buffer, not the 3.2 MB asked for.
mkfifo "$ctmp/fifo"
for c in uuid next; do
	python3 - "$ctmp/fifo" >"$ctmp/written" <<'PY' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
n, chunk = 0, bytes(range(7 * 16, 8 * 16)) * 256
try:
    while n < 8 << 20:
        n += os.write(fd, chunk)
except BrokenPipeError:
    pass
print(n)
PY
	wpid=$!
	rc=0
	SF_TESTING_ANY_FILE=1 timeout 60 "$san" $c --device "$ctmp/fifo" -n 200000 >/dev/full 2>"$ctmp/ferr" || rc=$?
	wait "$wpid" || true
	written=$(cat "$ctmp/written")
	if [ "$rc" -eq 1 ] && grep -q "No space left on device" "$ctmp/ferr" && [ "$written" -lt 1048576 ]; then
		ok "$c -n 200000 >/dev/full: exit 1 at the first write error (the device gave $written bytes)"
	else
		notok "$c -n 200000 >/dev/full: exit $rc, the device gave $written bytes (want 1 and < 1 MiB)"
		indent <"$ctmp/ferr"
	fi
done
rm -rf "$ctmp"
TAP_PREFIX="install: "

# 2. Install into a temporary tree, as a distribution package would.
tmp=$(mktemp -d "$out/destdir.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "# make -C userspace install DESTDIR=$tmp PREFIX=/usr"
if mk install DESTDIR="$tmp" PREFIX=/usr >"$out/install.log" 2>&1; then
	ok "make install DESTDIR PREFIX=/usr"
else
	indent <"$out/install.log"
	notok "make install DESTDIR PREFIX=/usr"
fi
want=(usr/lib/libsnowflake.so.1 usr/lib/libsnowflake.so usr/lib/libsnowflake.a
	usr/lib/pkgconfig/snowflake.pc usr/include/snowflake.h usr/include/linux/snowflake.h
	usr/share/man/man3/libsnowflake.3 usr/share/man/man4/snowflake.4)
if compgen -G "$dir/cli/*.c" >/dev/null; then
	want+=(usr/bin/snowflake)
fi
if [ -f "$dir/man/snowflake.1" ]; then
	want+=(usr/share/man/man1/snowflake.1)
fi
if compgen -G "$dir/floord/*.c" >/dev/null; then
	want+=(usr/sbin/snowflake-floord usr/share/man/man8/snowflake-floord.8)
fi
if compgen -G "$dir/agent/*.c" >/dev/null; then
	want+=(usr/sbin/snowflake-agent usr/share/man/man8/snowflake-agent.8)
fi
missing=()
for f in "${want[@]}"; do
	[ -e "$tmp/$f" ] || missing+=("$f")
done
if [ "${#missing[@]}" -eq 0 ]; then
	ok "the ${#want[@]} files are installed"
else
	notok "missing after install: ${missing[*]}"
fi
if cmp -s "$ROOT/uapi/linux/snowflake.h" "$tmp/usr/include/linux/snowflake.h"; then
	ok "the uapi header is installed as <linux/snowflake.h>"
else
	notok "the installed <linux/snowflake.h> differs from uapi/linux/snowflake.h"
fi

# 3. A program built against the installed tree only, through pkg-config.
cat >"$out/installed_test.c" <<'PROG'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <snowflake.h>
#include <linux/snowflake.h>

int main(void)
{
	struct snowflake_config layout;
	struct snowflake_parts parts;
	struct snowflake *sf;
	char text[SNOWFLAKE_FORMAT_MAX];
	uint64_t id;

	snowflake_default_layout(&layout);
	if (snowflake_decode(&layout, (1000ULL << 22) | (3 << 17) | (7 << 12) | 42, &parts) ||
	    parts.unix_ms != SNOWFLAKE_TWITTER_EPOCH_MS + 1000 || parts.sequence != 42)
		return 1;
	if (snowflake_format(UINT64_MAX, SNOWFLAKE_FORMAT_HEX, text, sizeof(text)) != 18 ||
	    snowflake_parse(text, &id) || id != UINT64_MAX)
		return 2;
	if (snowflake_open(&sf, "/nonexistent/snowflake", 0) != -ENOENT)
		return 3;
	if (strcmp(snowflake_strerror(-ENOTTY), "not a snowflake device"))
		return 4;
	puts("installed libsnowflake works");
	return 0;
}
PROG
pc() {
	PKG_CONFIG_SYSROOT_DIR=$tmp PKG_CONFIG_PATH='' \
		PKG_CONFIG_LIBDIR=$tmp/usr/lib/pkgconfig pkg-config "$@"
}
if flags=$(pc --cflags --libs snowflake); then
	ok "pkg-config --cflags --libs snowflake: $flags"
else
	notok "pkg-config --cflags --libs snowflake"
	flags=
fi
# shellcheck disable=SC2086 # $flags is a list of words
if cc -std=gnu11 -Wall -Wextra -Werror -o "$out/installed_shared" "$out/installed_test.c" $flags &&
	LD_LIBRARY_PATH=$tmp/usr/lib "$out/installed_shared" &&
	libs=$(LD_LIBRARY_PATH=$tmp/usr/lib ldd "$out/installed_shared") &&
	grep -qF "$tmp/usr/lib/libsnowflake.so.1" <<<"$libs"; then
	ok "a program linked with the shared library runs"
else
	notok "a program linked with the shared library"
fi
sflags=$(pc --cflags --libs --static snowflake) || sflags=
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Wextra -Werror -static -o "$out/installed_static" "$out/installed_test.c" $sflags &&
	"$out/installed_static" && ! readelf -d "$out/installed_static" 2>/dev/null | grep -q NEEDED; then
	ok "a program linked statically runs"
else
	notok "a program linked statically"
fi

# 4. The installed man pages render without a warning.
while IFS= read -r page; do
	# --warnings=w: every groff warning ("all" is not one of its names).
	w=$(MANWIDTH=80 man --warnings=w -l "$page" 2>&1 >/dev/null) || w="man failed: $w"
	if [ -z "$w" ]; then
		ok "man -l ${page#"$tmp"/}"
	else
		notok "man -l ${page#"$tmp"/}"
		indent <<<"$w"
	fi
done < <(find "$tmp/usr/share/man" -type f | sort)

# 5. Uninstall leaves none of our files.
mk uninstall DESTDIR="$tmp" PREFIX=/usr >/dev/null 2>&1 || true
left=$(find "$tmp" ! -type d)
if [ -z "$left" ]; then
	ok "uninstall removes every installed file"
else
	notok "left after uninstall:"
	indent <<<"${left//"$tmp"\//}"
fi

echo "userspace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
