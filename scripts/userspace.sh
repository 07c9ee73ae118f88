#!/bin/bash
# The userspace stage of `make check`: libsnowflake and the CLI built with
# WERROR=1 (-Werror), the native unit tests (`make -C userspace check`, ASan + UBSan),
# then an install into a temporary DESTDIR: a program built against the
# installed tree through pkg-config, shared and static, the installed man
# pages rendered without warnings, and an uninstall that leaves none of our
# files.  Prints "userspace: N passed, M failed".
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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
