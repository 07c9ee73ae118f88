#!/bin/bash
# Build (or reuse) the debug guest kernel: Debian's linux-source tarball,
# `make tinyconfig` + scripts/debug-kernel.config (lockdep, KASAN, UBSAN,
# kmemleak, fault injection, ...).  The tree is cached in
# build/debug-kernel/<hash of tarball version + fragment + this script>/linux
# (and in the machine cache, lib.sh's mcache_*, under that hash) and
# build/debug-kernel/kver/<KVER> links to it, which is how lib.sh's
# kdir_of/vmlinuz_of resolve that KVER (KERNELS=<KVER> tests/vmtest/run.sh).
#
# Prints "KVER=...", "KDIR=..." and "BZIMAGE=..." last.  -q: print only the
# KVER.  JOBS=N: make -j (default: nproc).
#
# The guest suite on it is the debug-kernel lane, tests/debug-kernel/run.sh
# (`make debug-kernel`).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"

quiet=0
case ${1:-} in
-q) quiet=1 ;;
"") ;;
*) die "usage: ${0##*/} [-q]" ;;
esac
FRAG=$ROOT/scripts/debug-kernel.config
JOBS=${JOBS:-$(nproc)}
KMAKE=(make ARCH=x86_64 LOCALVERSION= -j"$JOBS")

tarball=$(dpkg-query -L "$KSRC_PKG" 2>/dev/null |
	grep -E '/linux-source-[^/]*\.tar\.(xz|gz|bz2)$' | head -n1) || true
if [ -z "$tarball" ] || [ ! -r "$tarball" ]; then
	die "no kernel source tarball from $KSRC_PKG (run scripts/deps.sh)"
fi
srcver=$(dpkg-query -W -f='${Version}' "$KSRC_PKG")
# Bump when the way the tree is built changes (not for other edits here).
RECIPE=1
hash=$({
	printf '%s %s recipe %s\n' "$srcver" "$(stat -c %s "$tarball")" "$RECIPE"
	cat "$FRAG"
} | sha256sum | cut -c1-16)
top=$BUILD/debug-kernel
dir=$top/$hash
tree=$dir/linux

log() { [ "$quiet" = 1 ] || msg "$@"; }

# verify_config: every option the fragment sets must have survived
# olddefconfig.  Options silently dropped (unmet dependency) are the trap.
verify_config() {
	local line opt want got bad=0
	while IFS= read -r line; do
		if [[ "$line" =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
			opt=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
		elif [[ "$line" =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			opt=${BASH_REMATCH[1]} want=n
		else
			continue
		fi
		got=$(sed -n "s/^$opt=//p" "$tree/.config")
		[ -n "$got" ] || got=n
		if [ "$got" != "$want" ]; then
			echo "debug-kernel: $opt: fragment wants $want, .config has $got" >&2
			bad=1
		fi
	done <"$FRAG"
	[ "$bad" = 0 ] || die "the .config lacks options of ${FRAG#"$ROOT"/} (unmet dependencies?)"
}

# One build at a time: check.sh's helper builds from the start at the
# lowest priority, and the debug-kernel stage, started before the helper
# is done, waits here and then reuses its tree.
mkdir -p "$top"
exec 9>"$top/.lock"
if ! flock -n 9; then
	log "waiting for the build in progress (${top#"$ROOT"/}/.lock)"
	flock 9
fi
# The machine cache (lib.sh's mcache_*): another clone's tree of the same
# hash, within its max age (extracted here: the module builds write
# beside it, never into the entry).  Its key adds the host's gcc, which
# built it: the modules built against it later use the host's gcc, and a
# clone's tree of the same hash is made with the gcc of its day.
mkey=$hash-gcc$(gcc -dumpfullversion 2>/dev/null || echo none)
if [ ! -f "$dir/.done" ]; then
	start=$(now)
	if mcache_get_dir debug-kernel "$mkey" "$dir" && [ -f "$dir/.done" ]; then
		log "${dir#"$ROOT"/} from the machine cache ($(mcache_age debug-kernel "$mkey") old, $(($(now) - start)) s)"
	else
		rm -rf "$dir"
	fi
fi
if [ ! -f "$dir/.done" ]; then
	start=$(now)
	rm -rf "$dir"
	mkdir -p "$dir"
	log "extracting ${tarball##*/} into ${tree#"$ROOT"/}"
	mkdir -p "$tree"
	tar -xaf "$tarball" -C "$tree" --strip-components=1
	log "configuring: tinyconfig + ${FRAG#"$ROOT"/}"
	(
		cd "$tree"
		"${KMAKE[@]}" tinyconfig >/dev/null
		KCONFIG_CONFIG=.config ARCH=x86_64 scripts/kconfig/merge_config.sh -m .config "$FRAG" >/dev/null
		"${KMAKE[@]}" olddefconfig >/dev/null
	)
	verify_config
	log "building (make -j$JOBS; log in ${dir#"$ROOT"/}/build.log)"
	if ! (cd "$tree" && "${KMAKE[@]}" all) >"$dir/build.log" 2>&1; then
		tail -n 40 "$dir/build.log" >&2
		die "the debug kernel build failed (log above)"
	fi
	[ -s "$tree/arch/x86/boot/bzImage" ] || die "no arch/x86/boot/bzImage after the build"
	[ -s "$tree/Module.symvers" ] || die "no Module.symvers after the build"
	(cd "$tree" && "${KMAKE[@]}" -s kernelrelease) >"$dir/kver"
	echo "$(($(now) - start))" >"$dir/build-secs"
	touch "$dir/.done"
	log "built in $(cat "$dir/build-secs")s"
	mcache_put_dir debug-kernel "$mkey" "$dir" || warn "the tree not stored in the machine cache"
else
	verify_config
	log "reusing ${dir#"$ROOT"/} (built in $(cat "$dir/build-secs" 2>/dev/null || echo ?)s)"
fi

kver=$(cat "$dir/kver")
mkdir -p "$top/kver"
ln -sfn "../$hash/linux" "$top/kver/$kver"
# Trees of older fragments: drop them (a few GB each).
for d in "$top"/*/; do
	d=${d%/}
	case ${d##*/} in "$hash" | kver) ;; *) rm -rf "$d" ;; esac
done

if [ "$quiet" = 1 ]; then
	echo "$kver"
else
	echo "KVER=$kver"
	echo "KDIR=$tree"
	echo "BZIMAGE=$tree/arch/x86/boot/bzImage"
fi
