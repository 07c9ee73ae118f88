#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The quickstart stage of `make check`: the documentation's install commands
# run as written, in fresh Debian 12 roots, as a newcomer types them; the
# README's (the Quick start) in a fresh Debian 13 root too.
#
#   - Every install block of every document (README.md, docs/*.md): each
#     ```sh block with an install command in it (apt/apt-get install or
#     build-dep, a make install target, install -..., dpkg -i), read from
#     the files at run time: a document edit that breaks a command breaks
#     this check, and a new install block is run without being listed here.
#     Each block runs in its own fresh root (they are alternatives, not
#     steps of one path), except that the install blocks of one section,
#     one after the other, share one.
#   - The how-tos that follow the Quick start (FOLLOW below: the host's
#     identity, the agent with Redis, with MariaDB): on the first suite,
#     their sections' blocks run after the README's Quick start, in its
#     root and guest, each section followed by a check of what it did.
#   - The suites (QUICKSTART_SUITES, default "bookworm trixie"): the first
#     runs every block, the others the README's only (its Quick start: the
#     path a newcomer follows first; every block on Debian 13 as well would
#     double the lane).  Each check line starts with its suite.
#   - The root: mmdebstrap SUITE, bookworm from the host's Debian 12 apt
#     sources, another suite as "deb MIRROR SUITE main" from the host's
#     mirror (host_mirror, as scripts/kroot.sh), with what a new user
#     starts from (apt, sudo, git, make, build-essential, ca-certificates,
#     and the systemd, udev, kmod and passwd every Debian host has, and the
#     image of the kernel it runs, the guest's: linux-image-KREL), cached
#     as build/quickstart/base-SUITE-*.tar.zst (its name carries its
#     recipe), extracted once a run (build/quickstart/lower-SUITE, mounted
#     read-only); each block's root is an overlay of it with an empty
#     upper directory of its own (base_copy): the same files as a fresh
#     extraction, none of another block's; NOT the build dependencies:
#     those must come from the documented commands.  apt's downloads are
#     kept in build/quickstart/apt-archives (bind-mounted).
#   - The user "newcomer" (sudo without a password: a person types theirs),
#     the source tree in ~/snowflake (the repository's tracked files, as a
#     clone gives them).  Each command runs in that user's login shell in
#     the tree (root's for a block whose text says "As root" and for a
#     command whose comment says "as root"), with "y" typed to apt's
#     questions; each is one check.  Each command starts in a new login
#     shell in the tree: a `cd` or an `export` in a block would not carry
#     over to the next command (none does today).  `editor FILE` is the one
#     command a person types into: the check appends the worker id it asks
#     for.  The first command that fails ends its block (a person stops
#     there too); the commands after it are named, not counted.
#   - The commands run in a chroot up to the first that needs the running
#     system (modprobe, /dev/..., snowflake, systemctl, udevadm); that one
#     and the rest run in a QEMU guest (TCG): the same root booted with
#     systemd as PID 1 on the kernel whose headers the block installed
#     (bookworm: QUICKSTART_KVER, default the first of all_kvers, Debian
#     12's 6.12; another suite: its own, the kernel scripts/kroot.sh
#     recorded for it, suite_kver: Debian 13's 6.12.y+deb13),
#     the module DKMS (or `make install`) put there, the CLI as installed
#     (tests/quickstart/init.sh runs them).  `snowflake next -n N` must
#     print N increasing IDs, `od ... -N B /dev/snowflake` B/8 IDs.
#
# `uname -r` in the chroot: the host runs its own kernel (no Debian
# headers exist for it), and the block's `linux-headers-$(uname -r)` must
# name the kernel the guest will boot.  Linux has no per-namespace release,
# so the chroot's /usr/bin/uname is, for the chroot's lifetime only
# (a bind mount in its private mount namespace; the root's file is not
# changed and the guest runs the real one), a wrapper printing the real
# uname's output with the host's release replaced by the guest kernel's.
# The person's `uname -r`, make's and DKMS's then all agree with the guest.
#
# Environment: QUICKSTART_README, QUICKSTART_REFERENCE (other copies of
# README.md and docs/reference.md, e.g. to show that a broken command
# fails), QUICKSTART_DOCS (a directory to read docs/*.md from instead),
# QUICKSTART_BLOCKS (the documents whose blocks run, by name:
# readme, reference, or the name of a docs/*.md file without .md; default:
# all), QUICKSTART_SUITES (above), QUICKSTART_KVER (bookworm's guest kernel),
# QUICKSTART_SOURCES (bookworm's: an apt .sources/.list file; default: the
# host's Debian 12 sources), KROOT_MIRROR (the other suites' mirror, as
# scripts/kroot.sh).  Prints "quickstart: N passed, M failed".
set -euo pipefail
# The shared harness (lib.sh: ok/notok/check, ROOT, BUILD, all_kvers;
# host_mirror, suite_kver; vm.sh: vmlinuz_of, vm_problems).
HARNESS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)
# shellcheck source=tests/lib/lib.sh
. "$HARNESS/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$HARNESS/vm.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

OUT=$BUILD/quickstart
ARCHIVES=$OUT/apt-archives
README=${QUICKSTART_README:-$ROOT/README.md}
REFERENCE=${QUICKSTART_REFERENCE:-$ROOT/docs/reference.md}
NEWCOMER=newcomer
TREE=/home/$NEWCOMER/snowflake
t_start=$(now)

finish() {
	echo "quickstart: $pass passed, $fail failed ($(($(now) - t_start)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

for tool in mmdebstrap zstd qemu-system-x86_64 cpio; do
	if ! command -v "$tool" >/dev/null; then
		notok "$tool is missing (scripts/deps.sh installs it)"
		finish
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	notok "the quickstart needs root (chroot, mounts)"
	finish
fi
# The lane in a mount namespace of its own: the roots' overlays and the
# base's read-only mount (base_copy) go away with it however it ends.
if [ -z "${QUICKSTART_MOUNTNS:-}" ]; then
	exec env QUICKSTART_MOUNTNS=1 unshare --mount --propagation private -- "${BASH_SOURCE[0]}" "$@"
fi
read -ra SUITES <<<"${QUICKSTART_SUITES:-bookworm trixie}"
[ "${#SUITES[@]}" -gt 0 ] || { notok "QUICKSTART_SUITES names no suite"; finish; }
mkdir -p "$OUT"

# ---- the documented commands -----------------------------------------------
# blocks FILE [HEADING]: each ```sh block of the section that starts with the
# line HEADING (up to the next heading of its level or above; without
# HEADING: of the whole file), as
#   B<TAB>TITLE<TAB>AS_ROOT   (TITLE: the nearest heading above the block;
#                              AS_ROOT 1 when the text before it says "As root")
#   C<TAB>COMMAND<TAB>COMMENT (continuation lines joined, the trailing
#                              "  # comment" apart)
blocks() {
	awk -v head="${2:-}" '
		function level(s) { match(s, /^#+/); return RLENGTH }
		!sect && head == "" { sect = 1; lvl = 0 }
		!sect { if ($0 == head) { sect = 1; lvl = level(head); title = substr(head, lvl + 2) } ; next }
		!inb && /^#+ / { if (level($0) <= lvl) exit; title = substr($0, level($0) + 2); asroot = 0; next }
		!inb && $0 == "```sh" { inb = 1; printf "B\t%s\t%d\n", title, asroot; next }
		!inb { if (index($0, "As root")) asroot = 1; next }
		$0 == "```" { inb = 0; asroot = 0; next }
		{
			line = cont $0; cont = ""
			if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); next }
			if (line ~ /^[ \t]*(#|$)/) next
			comment = ""
			if (match(line, /[ \t]+#[ \t]/)) {
				comment = substr(line, RSTART + RLENGTH)
				line = substr(line, 1, RSTART - 1)
			}
			printf "C\t%s\t%s\n", line, comment
		}
	' "$1"
}

# An install command: a block with one is an install block.
INSTALL_RE='(^|[;&|[:space:]])(apt(-get)?[[:space:]]+(install|build-dep)|make[[:space:]]([^;&|#]*[[:space:]])?(install|[a-z]+-install|install-[a-z-]+)([[:space:]]|$)|install[[:space:]]+-|dpkg[[:space:]]+-i)'

# A command that needs the running system (the module in the kernel, udev,
# systemd): from the first of them on, a block runs in the guest.
SYSTEM_RE='(^|[;&|][[:space:]]*|sudo[[:space:]]+)(modprobe|insmod|systemctl|udevadm|snowflake)([[:space:]]|$)|/dev/'

# The how-tos that follow the Quick start: on the first suite, the ```sh
# blocks of these sections (DOC<TAB>HEADING<TAB>CHECK; DOC as in
# QUICKSTART_BLOCKS, which must name it too) run after the README's Quick
# start, in its root and its guest, one section after the other, whether or
# not they install anything (they are what a newcomer does next on the
# host the Quick start made: give it its identity, run the agent with a
# store), each followed by its CHECK (tests/quickstart/check.sh in the
# guest, as root; one check):
#   identity   the device serves the datacenter and worker ids the
#              section's commands set (--datacenter/--worker, or
#              datacenter_id=/worker_id=), with worker_set 1, and
#              modprobe's configuration gives them to the next load;
#   agent      snowflake-agent.service is active, its current run started
#              with the backend the section's agent.conf names (a
#              "'backend = X'" argument of its commands) and logged
#              event=unfenced, and the device is strict, has a worker id
#              and is not fenced.
# These sections never run as blocks of their own, and not on the other
# suites.  A guest with a section to run has a network (QEMU's user
# networking, systemd-networkd, DHCP; the host's resolver through QEMU's
# 10.0.2.3): its `apt-get install` reaches the suite's mirror as the
# host's does, with the apt lists the chroot had.
FOLLOW=(
	"readme	## Installing the packages	identity"
	"deployment-redis	## On one Debian 12 host	agent"
	"deployment-mysql	## On one Debian 12 host	agent"
)

# ---- the fresh root ----------------------------------------------------------
# What a newcomer's Debian has before reading the README (passwd: every
# installed host has it, and the newcomer is made with its useradd; Debian
# 13 no longer counts it as required, so mmdebstrap's apt variant left it
# out), and the running kernel's image, linux-image-KREL (suite_vars): a
# host runs the kernel of a package it has installed.  (Without it, each
# block's `apt install ... linux-headers-$(uname -r)` installed the image
# as a Recommends and made its initramfs twice: about 100 of quickstart's
# 668 CPU seconds in the fresh-clone run of 7174532, which no host spends.)
# apt's own defaults (Recommends installed) are left as they are.
include=sudo,git,make,build-essential,ca-certificates,systemd-sysv,udev,kmod,passwd
debian_name() {
	case $1 in
	bookworm) echo "Debian 12 (bookworm)" ;;
	trixie) echo "Debian 13 (trixie)" ;;
	*) echo "Debian $1" ;;
	esac
}

# suite_vars SUITE: SUITE's guest kernel (KREL), apt sources (sources: a
# file or a line, as mmdebstrap takes them), cached base root (base; its
# recipe's hash BASEKEY is the machine cache's key too) and chroot uname
# (UNAME); notok and status 1 when SUITE cannot be had.  The blocks
# started afterwards (in subshells) keep them.
suite_vars() {
	local suite=$1 src
	local -a kvers
	SUITE=$suite
	if [ "$suite" = bookworm ]; then
		mapfile -t kvers < <(all_kvers)
		KREL=${QUICKSTART_KVER:-${kvers[0]}}
		sources=$(bookworm_sources "${QUICKSTART_SOURCES:-}") || true
		if [ -z "$sources" ]; then
			notok "bookworm: no apt sources for Debian 12 on this host: set QUICKSTART_SOURCES"
			return 1
		fi
		src=$(cat "$sources")
	else
		if ! KREL=$(suite_kver "$suite"); then
			notok "$suite: no kernel of $(debian_name "$suite") (run scripts/kroot.sh $suite)"
			return 1
		fi
		sources="deb ${KROOT_MIRROR:-$(host_mirror)} $suite main" src=$sources
	fi
	if ! vmlinuz_of "$KREL" >/dev/null; then
		notok "$suite: no guest kernel for $KREL (run scripts/deps.sh)"
		return 1
	fi
	mmopts=(--variant=apt --skip=cleanup/apt/lists --include="$include,linux-image-$KREL")
	BASEKEY=$(printf '%s\n' "${mmopts[@]}" "$src" | sha256sum | cut -c1-12)
	base=$OUT/base-$suite-$BASEKEY.tar.zst
	UNAME=$OUT/uname-$suite
	LISTS=$OUT/lists-$suite
	LOWER=$OUT/lower-$suite
}

# suite_root SUITE: its cached base root (suite_vars), made when missing,
# and its chroot uname (see the top: the host's release replaced by KREL).
suite_root() {
	local suite=$1 start hostrel dname
	suite_vars "$suite" || return 1
	dname=$(debian_name "$suite")
	if [ ! -s "$base" ]; then
		start=$(now)
		# An older recipe's, and the unnamed ones before the suites.
		rm -f "$OUT/base-$suite"-*.tar.zst "$OUT"/base-????????????.tar.zst
	fi
	if [ -s "$base" ]; then
		echo "# cached $dname root ${base#"$ROOT"/}"
	elif mcache_get "quickstart-$suite" "$BASEKEY" "$base"; then
		echo "# cached $dname root ${base#"$ROOT"/}, from the machine cache ($(mcache_age "quickstart-$suite" "$BASEKEY") old, $(($(now) - start)) s)"
	else
		echo "# mmdebstrap $suite (first run: a few minutes), sources: $sources"
		if mmdebstrap "${mmopts[@]}" "$suite" "$base.tmp.tar.zst" "$sources" >"$OUT/mmdebstrap-$suite.log" 2>&1; then
			mv "$base.tmp.tar.zst" "$base"
			echo "# a fresh $dname root with $include,linux-image-$KREL ($(($(now) - start)) s)"
			if ! mcache_put "quickstart-$suite" "$BASEKEY" "$base"; then
				warn "$suite: its root not stored in the machine cache"
			elif mcache_dir >/dev/null; then
				echo "# stored in the machine cache ($(($(now) - start)) s in all)"
			fi
		else
			tail -n 30 "$OUT/mmdebstrap-$suite.log" | indent
			rm -f "$base.tmp.tar.zst"
			notok "$suite: mmdebstrap (log: ${OUT#"$ROOT"/}/mmdebstrap-$suite.log)"
			return 1
		fi
	fi
	suite_lower || return 1
	hostrel=$(uname -r | sed 's/[][\.*^$/]/\\&/g')
	cat >"$UNAME" <<EOF
#!/bin/sh
# tests/quickstart/run.sh: this chroot's "running kernel" is the guest's.
/run/quickstart-uname "\$@" | sed 's/$hostrel/$KREL/g'
EOF
	chmod 0755 "$UNAME"
	suite_lists "$suite"
}

# suite_lower: the base extracted once a run into $LOWER, bind-mounted
# read-only onto itself (in the lane's mount namespace): the lower layer of
# every root of the suite (base_copy), which no block can change.  (The
# base was extracted for every root before: seven blocks and two apt-get
# updates a run, each 8 CPU seconds alone (mostly the kernel writing 750
# MB), 23 s of wall time beside the other blocks; a root's overlay costs
# a mount, and its upper directory holds only what the block wrote.  The
# lane here, warm caches, beside other work: 372 and 380 CPU seconds
# before, 313 and 364 after, 35 passed each time; without the four
# guests' own CPU (152 to 163 s a run, varying with the load) 228 before,
# 201 after.)
# $LOWER.ok marks it done.
suite_lower() {
	local start
	start=$(now)
	rm -f "$LOWER.ok"
	! mountpoint -q "$LOWER" || umount "$LOWER"
	rm -rf "$LOWER"
	mkdir -p "$LOWER"
	if ! tar -C "$LOWER" --zstd -xf "$base" ||
		! mount --bind "$LOWER" "$LOWER" || ! mount -o remount,bind,ro "$LOWER"; then
		notok "$SUITE: its base extracted into ${LOWER#"$ROOT"/}, mounted read-only"
		return 1
	fi
	touch "$LOWER.ok"
	echo "# $SUITE: its base extracted once for its roots ($(($(now) - start)) s)"
}

# suite_lists SUITE: the apt lists a fresh install has, current ones (the
# cached base's may name versions the mirror no longer has), fetched once a
# run into $LISTS by apt-get update in a copy of the base, for every block
# of the suite (each used to fetch its own: 40 s and the mirror's lists
# again, six times).
suite_lists() {
	local suite=$1 r=$OUT/lists-root-$1 start archives=$ARCHIVES/update-$1 name=update-$1
	start=$(now)
	mkdir -p "$archives/partial"
	rm -rf "$LISTS"
	if ! { base_copy "$r" && inroot "$r" root 'apt-get -q update' &&
		cp -a "$r/var/lib/apt/lists" "$LISTS"; } >"$OUT/$name.log" 2>&1; then
		tail -n 20 "$OUT/$name.log" | indent
		root_drop "$r"
		notok "$suite: a copy of its root and apt-get update there (log: ${OUT#"$ROOT"/}/$name.log)"
		return 1
	fi
	root_drop "$r"
	echo "# $suite: apt lists updated once for its blocks ($(($(now) - start)) s)"
}

# inroot R USER CMD: CMD in USER's login shell in the chroot R, in its own
# mount, PID and UTS namespace (its /proc, /sys, /dev, /run and the uname
# wrapper go away with it), "y" on its standard input, $archives (the
# block's own: blocks run at once, and apt locks its cache) as apt's cache.
# shellcheck disable=SC2016 # the inner script expands its own arguments
inroot() {
	unshare --mount --pid --uts --fork --kill-child -- sh -c '
		R=$1 A=$2 W=$3 U=$4 C=$5
		hostname quickstart &&
		mount -t proc proc "$R/proc" && mount -t sysfs sysfs "$R/sys" &&
		mount --rbind /dev "$R/dev" && mount -t tmpfs tmpfs "$R/run" &&
		cp "$R/usr/bin/uname" "$R/run/quickstart-uname" &&
		mount --bind "$W" "$R/usr/bin/uname" &&
		mount --bind "$A" "$R/var/cache/apt/archives" &&
		exec chroot "$R" env -i TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			runuser -l "$U" -c "$C"' sh "$1" "$archives" "$UNAME" "$2" "$3" < <(yes 2>/dev/null)
}

# base_copy R: a new copy of the suite's base root in R, with the host's
# resolver (suite_lists' apt-get update, and every block's root): an
# overlay, lowerdir the read-only $LOWER (suite_lower), upperdir R.upper
# made empty here; redirect_dir=on, so that renaming a directory works
# as on any file system.  The merged tree is what the chroot, apt, dpkg
# and DKMS work in and what the guest's initramfs is made of.  Where
# overlayfs cannot be had (no $LOWER.ok, or the mount fails), the base is
# extracted into R as before.
base_copy() {
	root_drop "$1"
	mkdir -p "$1" "$1.upper" "$1.work"
	if [ -e "$LOWER.ok" ] && mount -t overlay overlay \
		-o "lowerdir=$LOWER,upperdir=$1.upper,workdir=$1.work,redirect_dir=on" "$1"; then
		echo "# $1: an overlay of ${LOWER#"$ROOT"/}"
	else
		tar -C "$1" --zstd -xf "$base" || return 1
	fi
	cp -L /etc/resolv.conf "$1/etc/resolv.conf"
}

# root_drop R: R gone (its overlay unmounted, its upper and work directories
# removed).
root_drop() {
	! mountpoint -q "$1" || umount "$1"
	rm -rf "$1" "$1.upper" "$1.work"
}

# fresh_root R: a new copy of the base with the newcomer and the tree.
fresh_root() {
	local r=$1
	base_copy "$r" || return 1
	echo quickstart >"$r/etc/hostname"
	printf '127.0.1.1\tquickstart\n' >>"$r/etc/hosts"
	# No terminal here for debconf's dialogs: its questions take their
	# defaults, as a person pressing Enter would.
	echo 'debconf debconf/frontend select Noninteractive' | chroot "$r" debconf-set-selections
	# apt (unlike apt-get) deletes what it downloaded: keep it in the
	# cache (a harness setting, removed before the guest boots).
	echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$r/etc/apt/apt.conf.d/00quickstart-cache"
	chroot "$r" useradd -m -s /bin/bash "$NEWCOMER"
	printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$NEWCOMER" >"$r/etc/sudoers.d/$NEWCOMER"
	chmod 0440 "$r/etc/sudoers.d/$NEWCOMER"
	mkdir -p "$r$TREE"
	if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$ROOT" ls-files -z | tar -C "$ROOT" --null --ignore-failed-read -T - -cf - 2>/dev/null
	else
		tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - .
	fi | tar -C "$r$TREE" -xf -
	chroot "$r" chown -R "$NEWCOMER:$NEWCOMER" "$TREE"
	# The suite's current apt lists (suite_lists).
	rm -rf "$r/var/lib/apt/lists" && cp -a "$LISTS" "$r/var/lib/apt/lists"
}

# expect CMD OUTFILE: what CMD's output must be, beyond its exit status 0
# (a description on stdout; returns nonzero when the output is wrong).
expect() {
	local cmd=$1 out=$2 n ids
	ids=$(grep -cE '^[0-9]+$' "$out" || true)
	if [[ $cmd =~ (^|[[:space:]])snowflake[[:space:]]+next([[:space:]]|$) ]]; then
		n=1
		[[ ! $cmd =~ -n[[:space:]]+([0-9]+) ]] || n=${BASH_REMATCH[1]}
		echo "$n IDs, increasing"
		[ "$(wc -l <"$out")" -eq "$n" ] && [ "$ids" -eq "$n" ] &&
			sort -nuc "$out" 2>/dev/null && [ "$(sort -nu "$out" | head -n1)" -gt 0 ]
	elif [[ $cmd =~ ^od[[:space:]].*-N[[:space:]]*([0-9]+).*/dev/snowflake ]]; then
		n=$((BASH_REMATCH[1] / 8))
		echo "$n IDs"
		[ "$(xargs -n 1 <"$out" | grep -cE '^[1-9][0-9]*$')" -eq "$n" ]
	fi
}

# ---- one block -----------------------------------------------------------------
# run_block NAME LABEL AS_ROOT CMD<TAB>COMMENT...
run_block() {
	local name=$1 label=$2 asroot=$3 r=$OUT/root-$1 i=0 split=-1 line cmd comment user sect
	local archives=$ARCHIVES/$1
	mkdir -p "$archives/partial"
	local -a cmds=() users=() sects=()
	shift 3
	for line in "$@"; do
		cmd=${line%%$'\t'*} comment=${line#*$'\t'}
		# A section that follows the Quick start: its name (follow_lines).
		sect=''
		[[ $comment != *$'\t'* ]] || sect=${comment#*$'\t'} comment=${comment%%$'\t'*}
		sects+=("$sect")
		user=$NEWCOMER
		[ "$asroot" = 0 ] && [[ $comment != "as root"* ]] && [[ $comment != "check: "* ]] || user=root
		cmds+=("$cmd") users+=("$user")
		if [ "$split" -lt 0 ] && { [[ $cmd =~ $SYSTEM_RE ]] || [[ $comment == "check: "* ]]; }; then split=$i; fi
		i=$((i + 1))
	done
	[ "$split" -ge 0 ] || split=${#cmds[@]}
	echo "# ---- $label: ${#cmds[@]} commands, $split in a fresh root, then $((${#cmds[@]} - split)) in the guest ($KREL)"
	local start
	start=$(now)
	if ! fresh_root "$r" >"$OUT/$name-root.log" 2>&1; then
		tail -n 20 "$OUT/$name-root.log" | indent
		notok "$label: a fresh root with the suite's apt lists (log: ${OUT#"$ROOT"/}/$name-root.log)"
		return 0
	fi
	echo "# fresh root with the suite's apt lists ($(($(now) - start)) s)"
	for ((i = 0; i < split; i++)); do
		cmd=${cmds[i]}
		local log=$OUT/$name-$((i + 1)).log
		# The one command a person types into (see the top).
		[[ ! $cmd =~ ^editor[[:space:]] ]] ||
			cmd="editor() { printf '%s\n' 'options snowflake worker_id=3 datacenter_id=1' >>\"\$1\"; }; $cmd"
		start=$(now)
		if inroot "$r" "${users[i]}" "cd $TREE && $cmd" >"$log" 2>&1; then
			ok "$label: ${cmds[i]} (${users[i]}, $(($(now) - start)) s)"
		else
			tail -n 25 "$log" | indent
			notok "$label: ${cmds[i]} (${users[i]}; log: ${log#"$ROOT"/})"
			[ "$((i + 1))" -ge "${#cmds[@]}" ] || echo "# not run after it: ${cmds[*]:i+1}"
			return 0
		fi
	done
	rm -f "$r/etc/apt/apt.conf.d/00quickstart-cache"
	# A block with nothing for the running system ends here.
	[ "$split" -lt "${#cmds[@]}" ] || { root_drop "$r"; return 0; }
	guest "$name" "$label" "$r" "$split" "${#cmds[@]}" "${cmds[@]}" -- "${users[@]}"
	root_drop "$r"
}

# guest NAME LABEL R FROM COUNT CMDS... -- USERS...: commands FROM.. of the
# block in the root R booted with systemd as PID 1.
guest() {
	local name=$1 label=$2 r=$3 from=$4 count=$5 i ov img log rc
	shift 5
	local -a cmds=("${@:1:count}") users=("${@:count+2:count}")
	ov=$OUT/$name-overlay img=$OUT/$name.cpio log=$OUT/$name-console.log
	rm -rf "$ov"
	mkdir -p "$ov"/{usr/local/sbin,etc/quickstart,etc/systemd/system/multi-user.target.wants,dev,proc,sys,run,tmp}
	chmod 1777 "$ov/tmp"
	install -m 0755 "$HERE/init.sh" "$ov/usr/local/sbin/quickstart-guest"
	install -m 0755 "$HERE/check.sh" "$ov/usr/local/sbin/quickstart-check"
	# A command that installs (a section that follows the Quick start):
	# the guest has a network, apt's lists and cache, and perl's modules
	# (maintainer scripts use them), as the host had.
	local net=0 unit_net=''
	local -a keep_apt=(-o -path ./var/cache/apt -o -path ./var/lib/apt/lists
		-o -path ./usr/share/perl -o -path ./usr/lib/x86_64-linux-gnu/perl)
	local -a VM_SYSTEMD_ARGS=()
	for ((i = from; i < count; i++)); do
		[[ ! ${cmds[i]} =~ $INSTALL_RE ]] || net=1
	done
	if [ "$net" = 1 ]; then
		keep_apt=()
		VM_SYSTEMD_ARGS=(-netdev 'user,id=n0' -device 'virtio-net-pci,netdev=n0')
		unit_net=$'Wants=network-online.target\nAfter=network-online.target'
		mkdir -p "$ov"/etc/systemd/{network,system/sockets.target.wants,system/network-online.target.wants}
		printf '[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n' >"$ov/etc/systemd/network/80-quickstart.network"
		ln -s /lib/systemd/system/systemd-networkd.service "$ov/etc/systemd/system/multi-user.target.wants/"
		ln -s /lib/systemd/system/systemd-networkd.socket "$ov/etc/systemd/system/sockets.target.wants/"
		ln -s /lib/systemd/system/systemd-networkd-wait-online.service "$ov/etc/systemd/system/network-online.target.wants/"
		echo 'nameserver 10.0.2.3' >"$ov/etc/resolv.conf"
	fi
	install -D -m 0644 "$ROOT/tests/lib/kernel-log.sh" "$ov/usr/local/lib/sf-kernel-log.sh"
	echo "$TREE" >"$ov/etc/quickstart/dir"
	for ((i = from; i < count; i++)); do
		printf '%d\t%s\t%s\n' "$((i + 1))" "${users[i]}" "${cmds[i]}"
	done >"$ov/etc/quickstart/commands"
	cat >"$ov/etc/systemd/system/quickstart.service" <<EOF
[Unit]
Description=snowflake: the documentation's commands that need the running system (tests/quickstart/run.sh)
After=multi-user.target
$unit_net

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/quickstart-guest
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
	ln -s ../quickstart.service "$ov/etc/systemd/system/multi-user.target.wants/quickstart.service"
	ln -s /dev/null "$ov/etc/systemd/system/serial-getty@ttyS0.service"
	ln -s /dev/null "$ov/etc/systemd/system/getty@tty1.service"
	mknod -m 0600 "$ov/dev/console" c 5 1
	# The root without what a boot does not need (headers, compilers and
	# their sanitizer libraries, perl's modules (perl-base stays), git,
	# documentation, apt's caches, the other kernels' images and modules,
	# the build's output), then the overlay over it.
	(cd "$r" && find . -xdev \( -path ./usr/src -o -path ./usr/lib/gcc -o -path ./usr/libexec/gcc \
		-o -path ./usr/share/doc -o -path ./usr/share/man -o -path ./usr/share/locale \
		-o -path ./usr/share/info "${keep_apt[@]}" \
		-o -path ./proc -o -path ./sys -o -path ./run -o -path ./tmp -o -path ./boot \
		-o -path ./usr/include -o -path ./usr/lib/firmware -o -path ./var/lib/dkms \
		-o -path './usr/bin/x86_64-linux-gnu-lto-dump-*' -o -path './usr/lib/x86_64-linux-gnu/lib*san.so*' \
		-o -path ./usr/lib/git-core \
		-o -path ".$TREE/build" -o \( -path './usr/lib/modules/*' ! -path "./usr/lib/modules/$KREL*" \) \) \
		-prune -o -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$img"
	(cd "$ov" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) >>"$img"
	echo "# the initramfs: $(($(stat -c %s "$img") >> 20)) MiB"
	vm_boot_systemd "$KREL" "$img" "$log" "${QUICKSTART_VM_TIMEOUT:-$((600 + net * 600))}" || rc=none
	rm -f "$img"
	local n st secs want out=$OUT/$name-guest.out
	for ((i = from; i < count; i++)); do
		n=$((i + 1))
		tr -d '\r' <"$log" | sed -n "s/^QS $n| //p" >"$out"
		st=$(tr -d '\r' <"$log" | sed -n "s/^QS rc $n //p" | tail -n 1)
		secs=$(tr -d '\r' <"$log" | sed -n "s/^QS time $n //p" | tail -n 1)
		# sects: run_block's (a followed section's commands name it).
		local l=$label
		[ -z "${sects[i]:-}" ] || l="$SUITE ${sects[i]} (after the Quick start)"
		# (head reads the file: indent never writes into a closed pipe, as
		# it did with a long output, killing the block under set -e.)
		head -n 20 "$out" | indent
		if [ -z "$st" ]; then
			notok "$l (guest): ${cmds[i]} (${users[i]}): never ran (console: ${log#"$ROOT"/})"
		elif [ "$st" != 0 ]; then
			notok "$l (guest): ${cmds[i]} (${users[i]}): exit $st"
		elif want=$(expect "${cmds[i]}" "$out"); then
			ok "$l (guest): ${cmds[i]} (${users[i]}${want:+: $want}, ${secs:-?} s)"
		else
			notok "$l (guest): ${cmds[i]} (${users[i]}): not $want"
		fi
	done
	if ! log_has "$log" '^QS done'; then
		tail -n 30 "$log" | tr -d '\r' | indent
		notok "$label (guest): the commands did not finish (qemu exit $rc; console: ${log#"$ROOT"/})"
	fi
	if vm_problems "$log" >"$OUT/$name-problems.txt"; then
		ok "$label (guest): no kernel problem on the console"
	else
		indent <"$OUT/$name-problems.txt"
		notok "$label (guest): kernel problems on the console"
	fi
}

# ---- the blocks ----------------------------------------------------------------
# doc_blocks NAME FILE: start each install block of FILE in the background
# (the blocks are independent: one's guest runs while another builds), its
# lines into $OUT/NAMEi.tap, its exit status into $OUT/NAMEi.rc;
# started+=(NAMEi:PID).  Install blocks of one section in a row (the same
# title, nothing but blocks without install commands between them) run in
# one root, one after the other.
# doc_file NAME: the file of the document NAME (readme, reference, or
# docs/NAME.md; QUICKSTART_DOCS=DIR reads docs/*.md from DIR instead,
# e.g. to show that a broken command or check fails).
doc_file() {
	case $1 in
	readme) echo "$README" ;;
	reference) echo "$REFERENCE" ;;
	*) if [ -n "${QUICKSTART_DOCS:-}" ] && [ -e "$QUICKSTART_DOCS/$1.md" ]; then
		echo "$QUICKSTART_DOCS/$1.md"
	else
		echo "$ROOT/docs/$1.md"
	fi ;;
	esac
}

# followed NAME TITLE: TITLE is a section of NAME that follows the Quick start.
followed() {
	local f d h
	for f in "${FOLLOW[@]}"; do
		IFS=$'\t' read -r d h _ <<<"$f"
		[ "$d" != "$1" ] || [ "${h#* }" != "$2" ] || return 0
	done
	return 1
}

# follow_lines: the commands of the sections that follow the Quick start
# (FOLLOW, those of the documents QUICKSTART_BLOCKS names), each section's
# then its check, as COMMAND<TAB>COMMENT<TAB>SECTION lines (SECTION:
# "DOC: HEADING", named on their check lines; a check's comment:
# "check: SECTION").
follow_lines() {
	local f d h check file kind a b dc wk be sect
	local -a c
	for f in "${FOLLOW[@]}"; do
		IFS=$'\t' read -r d h check <<<"$f"
		want_block "$d" || continue
		file=$(doc_file "$d")
		sect="$d: ${h#* }"
		c=()
		while IFS=$'\t' read -r kind a b; do
			[ "$kind" != C ] || c+=("$a"$'\t'"$b"$'\t'"$sect")
		done < <(blocks "$file" "$h")
		if [ "${#c[@]}" -eq 0 ]; then
			printf 'false "no sh block in %s"\tcheck: %s\t%s\n' "$h" "$sect" "$sect"
			continue
		fi
		printf '%s\n' "${c[@]}"
		case $check in
		identity)
			dc='' wk=''
			for a in "${c[@]}"; do
				[[ ! $a =~ (--datacenter[[:space:]=]+|datacenter_id=)([0-9]+) ]] || dc=${BASH_REMATCH[2]}
				[[ ! $a =~ (--worker[[:space:]=]+|worker_id=)([0-9]+) ]] || wk=${BASH_REMATCH[2]}
			done
			printf 'quickstart-check identity %s %s\tcheck: %s\t%s\n' "${dc:-none}" "${wk:-none}" "$sect" "$sect" ;;
		agent)
			be=''
			for a in "${c[@]}"; do
				[[ ! $a =~ \'backend[[:space:]]*=[[:space:]]*([a-z]+)\' ]] || be=${BASH_REMATCH[1]}
			done
			printf 'quickstart-check agent %s\tcheck: %s\t%s\n' "${be:-none}" "$sect" "$sect" ;;
		*) printf 'false "unknown check %s"\tcheck: %s\t%s\n' "$check" "$sect" "$sect" ;;
		esac
	done
}

started=()
doc_blocks() {
	local name=$1 file=$2 kind a b nb=0 title='' asroot=0 ptitle='' proot=0 inst=0 line
	local -a cur=() pending=()
	if [ ! -r "$file" ]; then
		notok "$SUITE $name: $file is missing"
		return 0
	fi
	# One block ends: an install block joins the pending one of its
	# section, or starts the next.
	end_of_block() {
		! followed "$name" "$title" || inst=0
		[ "$inst" = 1 ] || { cur=(); return 0; }
		if [ "${#pending[@]}" -gt 0 ] && { [ "$title" != "$ptitle" ] || [ "$asroot" != "$proot" ]; }; then
			nb=$((nb + 1))
			start_pending
			pending=()
		fi
		pending+=("${cur[@]}") ptitle=$title proot=$asroot cur=() inst=0
	}
	# The pending block starts; the Quick start on the first suite with
	# the sections that follow it (FOLLOW).
	start_pending() {
		local -a more=()
		if [ "$name" = readme ] && [ "$ptitle" = "Quick start" ] && [ "$SUITE" = "${SUITES[0]}" ]; then
			mapfile -t more < <(follow_lines)
		fi
		start_block "$SUITE-$name$nb" "$SUITE $name: $ptitle" "$proot" "${pending[@]}" "${more[@]}"
	}
	while IFS=$'\t' read -r kind a b; do
		if [ "$kind" = B ]; then
			end_of_block
			title=$a asroot=$b
		else
			cur+=("$a"$'\t'"$b")
			[[ ! $a =~ $INSTALL_RE ]] || inst=1
		fi
	done < <(blocks "$file")
	end_of_block
	if [ "${#pending[@]}" -gt 0 ]; then
		nb=$((nb + 1))
		start_pending
	fi
	[ "$nb" -gt 0 ] || echo "# $SUITE $name: no install block of its own in ${file#"$ROOT"/}"
}
start_block() {
	echo "# started: $2"
	rm -f "$OUT/$1.rc"
	( (
		pass=0 fail=0 ntap=0
		run_block "$@"
	) </dev/null >"$OUT/$1.tap" 2>&1
		echo "$?" >"$OUT/$1.rc") &
	started+=("$1:$!")
	# QUICKSTART_JOBS=1: one block after the other.
	[ "${QUICKSTART_JOBS:-0}" != 1 ] || wait "$!" || true
}

want_block() { [ -z "${QUICKSTART_BLOCKS:-}" ] || [[ " $QUICKSTART_BLOCKS " == *" $1 "* ]]; }
# recount FILE: FILE's lines, its checks ("ok"/"not ok" lines) counted here.
recount() {
	local line
	while IFS= read -r line; do
		if [[ $line =~ ^ok\ [0-9]+\ (.*) ]]; then
			ok "${BASH_REMATCH[1]}"
		elif [[ $line =~ ^not\ ok\ [0-9]+\ (.*) ]]; then
			notok "${BASH_REMATCH[1]}"
		else
			printf '%s\n' "$line"
		fi
	done <"$1"
}

# The suites' roots at once (each mmdebstrap mostly waits on the mirror),
# then each suite's blocks as soon as its root is there: the first suite's
# every block, the others' the README's.
setups=()
for suite in "${SUITES[@]}"; do
	rm -f "$OUT/setup-$suite.rc"
	( (pass=0 fail=0 ntap=0; suite_root "$suite") </dev/null >"$OUT/setup-$suite.tap" 2>&1
		echo "$?" >"$OUT/setup-$suite.rc") &
	setups+=("$!")
done
for i in "${!SUITES[@]}"; do
	suite=${SUITES[i]}
	wait "${setups[i]}" 2>/dev/null || true
	recount "$OUT/setup-$suite.tap"
	rc=$(cat "$OUT/setup-$suite.rc" 2>/dev/null) || rc=none
	if [ "$rc" != 0 ]; then
		grep -q '^not ok' "$OUT/setup-$suite.tap" ||
			notok "$suite: its root (status $rc; log: ${OUT#"$ROOT"/}/setup-$suite.tap)"
		continue
	fi
	suite_vars "$suite" || continue
	! want_block readme || doc_blocks readme "$README"
	[ "$i" -eq 0 ] || continue
	for doc in "$ROOT"/docs/*.md; do
		d=$(basename "$doc" .md)
		! want_block "$d" || doc_blocks "$d" "$(doc_file "$d")"
	done
done
if [ "${#started[@]}" -eq 0 ]; then
	notok "no install block found (QUICKSTART_BLOCKS=${QUICKSTART_BLOCKS:-})"
fi
# Each block's lines in order, its checks counted here.
for j in "${started[@]}"; do
	wait "${j#*:}" 2>/dev/null || true
	recount "$OUT/${j%%:*}.tap"
	rc=$(cat "$OUT/${j%%:*}.rc" 2>/dev/null) || rc=none
	[ "$rc" = 0 ] || notok "block ${j%%:*} ended early (status $rc; log: ${OUT#"$ROOT"/}/${j%%:*}.tap)"
done
finish
