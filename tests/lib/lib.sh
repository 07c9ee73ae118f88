# shellcheck shell=bash
# Common helpers for the snowflake scripts.  Source it; do not run it.
#
# Everything the scripts produce goes under $BUILD (build/ at the repository
# root, gitignored).  No kernel version number is written here: the guest
# kernels are derived from the headers meta-packages below.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${SNOWFLAKE_BUILD:-$ROOT/build}

# shellcheck disable=SC2034 # used by the scripts that source this file
# The meta-packages whose dependency names the kernels we build and test for.
# The first one is the default kernel of `make run`.
KERNEL_META_PKGS=(linux-headers-6.12-amd64 linux-headers-amd64 linux-headers-6.12-rt-amd64)
# shellcheck disable=SC2034
# The kernels of other Debian suites, "SUITE META-PACKAGE": each built
# inside a root of its suite, with that suite's compiler (scripts/kroot.sh,
# cached in build/kroots/), booted from that suite's kernel image.  The
# oldest first; the newest (the last) also runs the handoff, vmclone and
# restart guests (newest_kver).
SUITE_KERNELS=("bullseye linux-headers-amd64" "trixie linux-headers-amd64" "sid linux-headers-amd64" "sid linux-headers-rt-amd64")
# The package shipping the kernel source tarball (kselftest headers,
# checkpatch.pl).
# shellcheck disable=SC2034
KSRC_PKG=linux-source-6.12
# shellcheck disable=SC2034
KSFT_SUBDIR=tools/testing/selftests

export LC_ALL=C

msg() { printf '%s: %s\n' "${0##*/}" "$*"; }
warn() { printf '%s: warning: %s\n' "${0##*/}" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "${0##*/}" "$*" >&2
	exit 1
}

# Checks of the stage scripts, TAP style: ok/notok count them in pass and
# fail and print "ok N WHAT" / "not ok N WHAT" (with $TAP_PREFIX before
# WHAT); check WHAT CMD... runs CMD and says which; indent prefixes each
# line of its input with "#   ".
pass=0
fail=0
ntap=0
ok() {
	pass=$((pass + 1)) ntap=$((ntap + 1))
	echo "ok $ntap ${TAP_PREFIX:-}$*"
}
notok() {
	fail=$((fail + 1)) ntap=$((ntap + 1))
	echo "not ok $ntap ${TAP_PREFIX:-}$*"
}
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else notok "$what"; fi
}
indent() { sed 's/^/#   /'; }

# lintian_check LOG WHAT [NOTE]: lintian's output in LOG (-I -E --pedantic)
# read as every lane reads it: the warning of a run as root dropped, the
# counts (and NOTE) and every line printed as comments, and one check,
# WHAT: no error (E:).
lintian_check() {
	local log=$1 what=$2 nerr
	sed -i '/running with root privileges is not recommended/d' "$log"
	nerr=$(grep -c '^E: ' "$log" || true)
	echo "# lintian: $nerr errors, $(grep -c '^W: ' "$log" || true) warnings, $(grep -c '^[IP]: ' "$log" || true) info/pedantic${3:+ ($3)}"
	indent <"$log"
	check "$what" [ "$nerr" -eq 0 ]
}

# log_has LOG ERE: LOG (a guest console: \r stripped) has a line matching
# ERE.  grep reads the whole of its input: with pipefail, `tr | grep -q`
# may kill tr with SIGPIPE once grep has found the line and exited, and the
# pipeline then fails although the line is there (or, under `!`, passes
# although it is).  tests/static/lib-test.sh shows it.
log_has() { tr -d '\r' <"$1" | grep -E -- "$2" >/dev/null; }

# Run a command as root: directly when root, through sudo when it is there
# and usable, otherwise fail.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -- "$@"
	else
		return 127
	fi
}

can_be_root() {
	[ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1
}

pkg_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

# The kernel release a headers meta-package points at, e.g. the KVER of
# "Depends: linux-headers-KVER (= VERSION)".  Empty when not installed.
meta_kver() {
	local deps
	deps=$(dpkg-query -W -f='${Depends}' "$1" 2>/dev/null) || return 0
	printf '%s\n' "$deps" | sed 's/[,|]/\n/g' |
		sed -n 's/^ *linux-headers-\([^ ]*\).*/\1/p' | sed -n 1p
}

# bookworm_sources [FILE]: FILE when given, else the host's apt sources file
# (deb822 .sources or one-line .list) that names Debian 12 (bookworm), for
# the fresh Debian 12 roots of the deb and quickstart lanes; nothing (and
# status 1) when there is none.
bookworm_sources() {
	local f
	if [ -n "${1:-}" ]; then
		printf '%s\n' "$1"
		return 0
	fi
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		if grep -qE '^Suites:[[:space:]]+bookworm([[:space:]]|$)|^deb [^#]* bookworm main' "$f"; then
			printf '%s\n' "$f"
			return 0
		fi
	done
	return 1
}

# host_mirror: the host's Debian mirror, the URIs of its apt sources that
# serve bookworm (deb.debian.org when none does): the other suites' roots
# come from it (scripts/kroot.sh, tests/quickstart/run.sh).
host_mirror() {
	local f u
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		u=$(awk '/^URIs:/ { u = $2 } /^Suites:.*bookworm( |$)/ && u { print u; exit }
			$1 == "deb" && $3 == "bookworm" { print $2; exit }' "$f")
		if [ -n "$u" ]; then
			echo "$u"
			return 0
		fi
	done
	echo http://deb.debian.org/debian
}

# All kernel releases to test, default kernel first.  $KERNELS overrides
# (space separated kernel releases).
all_kvers() {
	local pkg k ks
	if [ -n "${KERNELS:-}" ]; then
		read -ra ks <<<"$KERNELS"
		printf '%s\n' "${ks[@]}"
		return 0
	fi
	for pkg in "${KERNEL_META_PKGS[@]}"; do
		k=$(meta_kver "$pkg")
		[ -n "$k" ] || die "cannot find the kernel of $pkg (not installed? run scripts/deps.sh)"
		printf '%s\n' "$k"
	done
}

# The kernels of SUITE_KERNELS, oldest first, as scripts/kroot.sh recorded
# them (build/kroots/SUITE.kvers: "META KVER" lines).  Dies when one cannot
# be had: a kernel we are meant to test is never skipped.
suite_kvers() {
	local entry suite meta k
	for entry in "${SUITE_KERNELS[@]}"; do
		read -r suite meta <<<"$entry"
		k=$(awk -v m="$meta" '$1 == m { print $2 }' "$BUILD/kroots/$suite.kvers" 2>/dev/null)
		[ -n "$k" ] || die "no kernel for $meta of Debian $suite (run scripts/kroot.sh)"
		printf '%s\n' "$k"
	done
}

# suite_kver SUITE: the kernel of SUITE's first meta-package in
# SUITE_KERNELS (trixie: its own 6.12), as scripts/kroot.sh recorded it;
# nothing and status 1 when it has not.
suite_kver() {
	local k
	k=$(awk 'NR == 1 { print $2 }' "$BUILD/kroots/$1.kvers" 2>/dev/null)
	[ -n "$k" ] && printf '%s\n' "$k"
}

# Every kernel the guest suite runs on: Debian 12's (all_kvers), then the
# other suites' (suite_kvers).  $KERNELS overrides.
vm_kvers() {
	all_kvers
	[ -n "${KERNELS:-}" ] || suite_kvers
}

# The newest kernel we test (the last of SUITE_KERNELS that is not -rt).
newest_kver() { suite_kvers | grep -v -- '-rt-' | tail -n 1; }

# The suite root KVER is built in (scripts/kroot.sh); empty for the host's.
kroot_of() {
	local r=$BUILD/kroots/kver/$1
	if [ -n "$1" ] && [ -L "$r" ] && [ -d "$r/usr/src/linux-headers-$1" ]; then
		readlink -f "$r"
	fi
}

# kroot_run ROOT DIR CMD...: CMD in a chroot into ROOT with DIR bound on
# /mnt/work, its own mount and PID namespace (/proc for objtool, /dev),
# gone with it.
kroot_run() {
	local r=$1 dir=$2
	shift 2
	mkdir -p "$r/mnt/work"
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	as_root unshare --mount --pid --fork --kill-child -- sh -c '
		R=$1 D=$2; shift 2
		mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev" &&
		mount --bind "$D" "$R/mnt/work" &&
		exec chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"' sh "$r" "$dir" "$@"
}

default_kver() {
	local ks
	if [ -n "${KVER:-}" ]; then
		printf '%s\n' "$KVER"
	else
		mapfile -t ks < <(all_kvers)
		[ "${#ks[@]}" -gt 0 ] || die "no kernel to use"
		printf '%s\n' "${ks[0]}"
	fi
}

# The debug kernel of scripts/debug-kernel.sh: its KVER is a link to its
# build tree (build/debug-kernel/kver/KVER), which serves as both the
# headers and the bzImage.  Empty when KVER is not that kernel.
debug_tree_of() {
	local t=$BUILD/debug-kernel/kver/$1
	if [ -n "$1" ] && [ -f "$t/Makefile" ]; then
		printf '%s\n' "$t"
	fi
}

is_debug_kver() { [ -n "$(debug_tree_of "$1")" ]; }

kdir_of() {
	local t
	t=$(debug_tree_of "$1")
	if [ -n "$t" ]; then
		printf '%s\n' "$t"
	elif t=$(kroot_of "$1") && [ -n "$t" ]; then
		printf '%s/usr/src/linux-headers-%s\n' "$t" "$1"
	else
		printf '/usr/src/linux-headers-%s\n' "$1"
	fi
}

# Path of a bootable bzImage for KVER: the debug kernel's, the copy
# scripts/deps.sh extracted from the downloaded package, else /boot when that
# kernel is installed
# (SNOWFLAKE_NO_BOOT_KERNEL=1: never use /boot).
vmlinuz_of() {
	local f boot=/boot/vmlinuz-$1
	[ "${SNOWFLAKE_NO_BOOT_KERNEL:-0}" = 1 ] && boot=
	for f in "$(debug_tree_of "$1")/arch/x86/boot/bzImage" \
		"$BUILD/kernels/$1/boot/vmlinuz-$1" "$BUILD/kroots/images/$1/boot/vmlinuz-$1" $boot; do
		if [ -r "$f" ]; then
			printf '%s\n' "$f"
			return 0
		fi
	done
	return 1
}

# bg_start RC CMD...: CMD in the background, in a subshell that writes
# CMD's exit status to the file RC when it ends ($! is that subshell).
# bg_wait PID RC: waits for it and returns that status (255 when RC was
# never written: the subshell was killed).
# Not `wait PID` alone, long after the child ended: bash forgets a reaped
# child's status when a later child of the same shell is given the same
# pid (pid_max is 32768 on these machines and a kernel build wraps it in
# minutes), and `wait PID` then says "not a child of this shell", 127.
# CI's run of 6bd60d2 failed the contract lane's "mutants.sh failed" so:
# a shell that forks ~700 times between the mutants' end and its wait.
# tests/static/bgwait-test.sh gives the pid back (a pid namespace,
# ns_last_pid) and checks both.
bg_start() {
	local rc=$1
	shift
	rm -f "$rc"
	(
		"$@"
		echo "$?" >"$rc"
	) &
}
bg_wait() {
	local r
	wait "$1" 2>/dev/null
	r=$(cat "$2" 2>/dev/null)
	[[ $r =~ ^[0-9]+$ ]] || r=255
	return "$r"
}

# Seconds since the epoch, for timings.
now() { date +%s; }

# parallel_each N FUNC ITEM...: FUNC ITEM for every ITEM, at most N at once
# (N of 1 or less: one after another, in this shell).  Each runs in a
# subshell of its own, its output kept and printed whole, in ITEM order,
# once all have ended; the pass and fail counts each added (ok, notok,
# and the lanes' own ok/bad) are added to this shell's, and its TAP lines
# ("ok N", "not ok N") numbered on from this shell's.  One that ended
# without its counts (an exit inside FUNC) is a failure.  The guest lanes
# use it: a TCG guest of these suites is mostly waiting on timers (a
# vmtest guest: about 70 CPU seconds in 160 s), so guests side by side
# fill the CPUs that one leaves idle.
parallel_each() {
	local n=$1 fn=$2 dir k=0 item p f
	shift 2
	if [ "$n" -le 1 ] || [ "$#" -le 1 ]; then
		for item in "$@"; do
			"$fn" "$item"
		done
		return 0
	fi
	dir=$(mktemp -d "$BUILD/parallel.XXXXXX")
	for item in "$@"; do
		while [ "$(jobs -rp | wc -l)" -ge "$n" ]; do
			wait -n 2>/dev/null || true
		done
		(
			p=$pass f=$fail
			"$fn" "$item"
			echo "$((pass - p)) $((fail - f))" >"$dir/$k.count"
		) >"$dir/$k.out" 2>&1 </dev/null &
		k=$((k + 1))
	done
	wait
	k=0
	for item in "$@"; do
		awk -v n="$ntap" '
			/^ok [0-9]+( |$)/ { n++; sub(/^ok [0-9]+/, "ok " n) }
			/^not ok [0-9]+( |$)/ { n++; sub(/^not ok [0-9]+/, "not ok " n) }
			{ print }
			END { print n > "/dev/stderr" }' "$dir/$k.out" 2>"$dir/$k.ntap"
		ntap=$(cat "$dir/$k.ntap")
		if [ -s "$dir/$k.count" ] && read -r p f <"$dir/$k.count"; then
			pass=$((pass + p)) fail=$((fail + f))
		else
			fail=$((fail + 1)) ntap=$((ntap + 1))
			echo "not ok $ntap $fn $item ended without its counts (it exited: above)"
		fi
		k=$((k + 1))
	done
	rm -rf "$dir"
}

# Copy the module sources (Kbuild, driver/, uapi/) of $MODULE_SRC (default:
# the repository) into a fresh DIR.  kbuild
# writes its objects beside the sources, so each kernel and each set of build
# flags gets its own copy.
sync_module_src() {
	local dir=$1 src=${MODULE_SRC:-$ROOT} d
	[ -f "$src/Kbuild" ] || die "$src/Kbuild is missing: no module to build"
	[ -d "$src/driver" ] || die "$src/driver/ is missing: no module to build"
	# Always from scratch: copied sources keep their times (cp -p), so
	# objects left from another source tree could look up to date.  A full
	# build takes a few seconds.
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -p "$src/Kbuild" "$dir/"
	[ ! -f "$src/VERSION" ] || cp -p "$src/VERSION" "$dir/"
	# Sources only: objects an in-tree `make module` left in driver/ were
	# built for another kernel and must not leak into this build.
	for d in driver uapi; do
		[ -d "$src/$d" ] || continue
		(cd "$src" && find "$d" -type f \( -name '*.[chS]' -o -name Makefile -o -name Kbuild \) \
			! -name '*.mod.c' -print0 | xargs -0 -r cp -p --parents -t "$dir")
	done
	return 0
}

# Build the module for KVER in DIR; extra arguments go to make.  Prints the
# build log; returns make's status.
build_module() {
	local kver=$1 dir=$2 kdir r
	shift 2
	kdir=$(kdir_of "$kver")
	[ -f "$kdir/Makefile" ] || die "no kernel headers in $kdir (run scripts/deps.sh)"
	sync_module_src "$dir"
	r=$(kroot_of "$kver")
	if [ -n "$r" ]; then
		# Another suite's kernel: its kbuild wants its own compiler.
		kroot_run "$r" "$dir" make -C "/usr/src/linux-headers-$kver" M=/mnt/work \
			${V:+V="$V"} "$@" modules
	else
		make -C "$kdir" M="$dir" ${V:+V="$V"} "$@" modules
	fi
}

# The machine cache: the artefacts whose name already carries their recipe
# (a hash of what makes them), kept outside the clone, shared by every
# clone of the machine, so that a fresh clone (CI's) takes them instead of
# making them again.  In the fresh-clone run of 73c8df9 they were most of
# its time: the quickstart's Debian 12 and 13 roots 788 and 615 s, the
# deb stage's root 795 s, the previous release 780 s, the dkms roots 404
# and 476 s, piuparts' chroot 218 s, the debug kernel several hundred CPU
# seconds.  tests/README.md says which and how to clear it.
#
#   SNOWFLAKE_CACHE unset    /var/cache/snowflake-check, when it can be made
#                            and written (as root); otherwise none
#   SNOWFLAKE_CACHE=         none: every artefact made in build/ as before
#   SNOWFLAKE_CACHE=DIR      DIR (an absolute path; another is none)
#   SNOWFLAKE_CACHE_DAYS=N   the max age of an entry (default 7)
#
# Each script still looks in its own build/ first; only when its artefact
# is missing there does it ask the cache (mcache_get, mcache_get_dir, at
# the point where it makes it), and what it made it gives to the cache
# (mcache_put, mcache_put_dir).  An entry is one file, DIR/KIND/KEY: KIND
# the artefact (kroot-sid, deb-root, ...), KEY the recipe hash the script
# computes for its own name in build/.  Why it is right:
#   - The key: an entry is found by its KEY alone; a recipe that changed
#     is another name, a miss, and the script makes (and puts) it.
#   - Whole or not at all: an entry is written under a name of its own
#     (.tmp.KEY.XXXXXX, in KIND/), fsynced, then renamed to KEY: rename(2)
#     in one directory is atomic, so a reader finds no KEY or a whole one;
#     a put that dies (a crash, a kill, a full disk) leaves only its .tmp.
#     file, which no reader opens and a later put of that KIND removes
#     after a day.  A hit is copied (or extracted) into build/ under a
#     temporary name too, and renamed into place: the script's own "is it
#     there" test never sees half a copy.
#   - Two runs at once: each writer has its own temporary file and the
#     rename replaces an entry at once; a reader that has opened an entry
#     reads it whole even when another run replaces or prunes it meanwhile
#     (an unlinked file lives until it is closed); one that finds it gone
#     takes that as a miss.  No lock is needed, nor held across a build.
#   - Never written through: a hit is a copy in the clone's build/ (a
#     directory entry extracted there), which the clone may change or
#     `rm -rf`; the entry itself is only ever read, and replaced whole.
#   - Bounded: an entry older than SNOWFLAKE_CACHE_DAYS is a miss (the
#     script makes it again and the put replaces it).  A root carries the
#     package versions of the day it was made and apt lists naming them:
#     once the mirror has moved on (sid daily, a stable suite at its point
#     releases), the lanes would test what no user installs any more, and
#     apt in the root may not find what its lists name (the lanes' own
#     "install, else update and install" covers the packages, not the
#     kernels a root is made for); a week bounds that without making a
#     machine that runs the check daily build everything daily.  Each put
#     keeps, of its KIND, the newest MCACHE_KEEP entries (the recipe just
#     made and the one a clone of an older commit may still want) and
#     removes the others and the expired ones: a few GB in all.
#   - Trusted: the directory must be the user's own (root extracts what is
#     in it, and boots it); one of another user is not used.
MCACHE_KEEP=2

# mcache_dir: the cache directory, made when missing; status 1 when there
# is none (SNOWFLAKE_CACHE empty or not an absolute path: the scripts run
# from different directories; or the directory cannot be made or written,
# or is not ours).
mcache_dir() {
	local d=${SNOWFLAKE_CACHE-/var/cache/snowflake-check}
	[[ $d == /* ]] || return 1
	mkdir -p "$d" 2>/dev/null || return 1
	[ -d "$d" ] && [ -w "$d" ] && [ -O "$d" ] || return 1
	printf '%s\n' "$d"
}

# mcache_entry KIND KEY: the path of that entry (KIND/ made); status 1
# with no cache, or when KIND or KEY is not a plain name.
mcache_entry() {
	local c
	[[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ && $2 =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || return 1
	c=$(mcache_dir) || return 1
	mkdir -p "$c/$1" 2>/dev/null || return 1
	printf '%s\n' "$c/$1/$2"
}

# mcache_days: SNOWFLAKE_CACHE_DAYS when it is a number, else 7.
mcache_days() {
	local d=${SNOWFLAKE_CACHE_DAYS:-7}
	[[ $d =~ ^[0-9]+$ ]] || d=7
	echo "$d"
}

# mcache_fresh ENTRY: ENTRY is there, not empty, and younger than the max
# age (its mtime is when it was put: when its artefact was made).
mcache_fresh() {
	local m
	[ -f "$1" ] && [ -s "$1" ] || return 1
	m=$(stat -c %Y "$1" 2>/dev/null) || return 1
	[ $(($(date +%s) - m)) -lt $(($(mcache_days) * 86400)) ]
}

# mcache_age KIND KEY: the entry's age, "N h" (for the scripts' messages).
mcache_age() {
	local e
	e=$(mcache_entry "$1" "$2") || return 0
	echo "$((($(date +%s) - $(stat -c %Y "$e" 2>/dev/null || date +%s)) / 3600)) h"
}

# mcache_get KIND KEY FILE: a fresh entry copied to FILE (renamed into
# place when whole); status 1 on a miss (no cache, no entry, an expired
# one, a failed copy), FILE then untouched.
mcache_get() {
	local e t
	e=$(mcache_entry "$1" "$2") && mcache_fresh "$e" || return 1
	t=$(mktemp "$3.mcache.XXXXXX") || return 1
	if cp "$e" "$t" && chmod 0644 "$t" && mv -f "$t" "$3"; then
		return 0
	fi
	rm -f "$t"
	return 1
}

# mcache_get_dir KIND KEY DIR: a fresh entry (a directory put by
# mcache_put_dir) extracted into DIR, which is replaced (removed first,
# the extraction renamed to it when whole); status 1 on a miss: DIR left
# as it was when there is no fresh entry, removed when one failed to
# extract.  The caller holds its own lock on DIR.
mcache_get_dir() {
	local e t
	e=$(mcache_entry "$1" "$2") && mcache_fresh "$e" || return 1
	rm -rf --one-file-system "$3" "$3".mcache.*
	mkdir -p "${3%/*}"
	t=$(mktemp -d "$3.mcache.XXXXXX") || return 1
	if tar -C "$t" --numeric-owner --xattrs --xattrs-include='*' -I zstd -xf "$e" && mv -T "$t" "$3"; then
		return 0
	fi
	rm -rf --one-file-system "$t"
	return 1
}

# mcache_put KIND KEY FILE: FILE stored as the entry KEY of KIND (a copy,
# written whole, then renamed; see above), then KIND pruned.  Status 0
# with no cache; 1 when it could not be written (the caller warns: the
# artefact in build/ is there all the same).
mcache_put() {
	local e t
	e=$(mcache_entry "$1" "$2") || return 0
	t=$(mktemp "${e%/*}/.tmp.$2.XXXXXX") || return 1
	if cp "$3" "$t" && chmod 0644 "$t" && sync "$t" && mv -f "$t" "$e"; then
		mcache_prune "$1" "$2"
		return 0
	fi
	rm -f "$t"
	return 1
}

# mcache_put_dir KIND KEY DIR [MEMBER...]: DIR (or only its MEMBERs,
# paths below it) stored as the entry KEY of KIND, a tar.zst (owners as
# numbers: a root's users are not the host's), as mcache_put.
mcache_put_dir() {
	local kind=$1 key=$2 dir=$3 e t
	shift 3
	e=$(mcache_entry "$kind" "$key") || return 0
	t=$(mktemp "${e%/*}/.tmp.$key.XXXXXX") || return 1
	if tar -C "$dir" --numeric-owner --xattrs --xattrs-include='*' --one-file-system \
		-I 'zstd -T0' -cf "$t" "${@:-.}" && chmod 0644 "$t" && sync "$t" && mv -f "$t" "$e"; then
		mcache_prune "$kind" "$key"
		return 0
	fi
	rm -f "$t"
	return 1
}

# mcache_prune KIND KEY: in KIND/, the entries older than the max age and
# all but the newest MCACHE_KEEP (KEY always kept) removed, and temporary
# files of a put more than a day old (a put that died).
mcache_prune() {
	local d f
	d=$(mcache_entry "$1" "$2") || return 0
	d=${d%/*}
	find "$d" -maxdepth 1 -type f -name '.tmp.*' -mmin +1440 -delete 2>/dev/null || true
	find "$d" -maxdepth 1 -type f ! -name '.*' ! -name "$2" -mmin +$(($(mcache_days) * 1440)) \
		-delete 2>/dev/null || true
	find "$d" -maxdepth 1 -type f ! -name '.*' -printf '%T@ %f\n' | sort -rn |
		tail -n +$((MCACHE_KEEP + 1)) | while read -r _ f; do
		[ "$f" = "$2" ] || rm -f "$d/$f"
	done
}
