#!/bin/bash
# The roots of the other Debian suites' kernels (SUITE_KERNELS in lib.sh):
# for each suite a root made with mmdebstrap from the package mirror, with
# that suite's make, gcc and the kernel headers of its meta-packages, and
# each kernel's guest image (bzImage) and the modules the restart guest
# needs, from the same suite.
#
#   scripts/kroot.sh [SUITE...]     (default: every suite of SUITE_KERNELS)
#   KROOT_MIRROR=URL                the Debian mirror (default: the host's)
#
# Cached: build/kroots/SUITE-KEY.tar.zst, KEY a hash of the recipe (the
# mmdebstrap options, the mirror, the packages), rebuilt when it changes
# (and in the machine cache, lib.sh's mcache_*, with its images);
# build/kroots/SUITE/ the root unpacked from it.  Writes
# build/kroots/SUITE.kvers ("META KVER" lines, read by suite_kvers in
# lib.sh), build/kroots/kver/KVER -> the root, and
# build/kroots/images/KVER/{boot/vmlinuz-KVER,lib/modules/KVER/}.
# Fails (exit 1) when a kernel cannot be had: never a silent skip.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"

OUT=$BUILD/kroots
mkdir -p "$OUT/kver" "$OUT/images"

for tool in mmdebstrap zstd dpkg-deb unshare depmod; do
	command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh installs it)"
done
can_be_root || die "building in a chroot needs root (or sudo)"

# The Debian mirror (host_mirror in lib.sh: the host's).
MIRROR=${KROOT_MIRROR:-$(host_mirror)}

# The meta-packages of SUITE, from SUITE_KERNELS.
metas_of() {
	local entry s m
	for entry in "${SUITE_KERNELS[@]}"; do
		read -r s m <<<"$entry"
		[ "$s" = "$1" ] && echo "$m"
	done
	return 0
}

# The kernel release a meta-package installed in root R depends on.
root_meta_kver() {
	# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
	kroot_run "$1" "$OUT" dpkg-query -W -f='${Depends}' "$2" | sed 's/[,|]/\n/g' |
		sed -n 's/^ *linux-headers-\([^ ]*\).*/\1/p' | sed -n 1p
}

# fetch_image R KVER: the bzImage and the disk modules of KVER, downloaded
# with apt inside R (sid: linux-binary-KVER, .../vmlinuz and the modules in
# linux-modules-KVER, modules.builtin in linux-base-KVER; older suites:
# linux-image-KVER, /boot/vmlinuz-KVER).
fetch_image() {
	local r=$1 kver=$2 dir=$OUT/images/$2 tmp deb pkg m v
	[ -s "$dir/boot/vmlinuz-$kver" ] && [ -f "$dir/lib/modules/$kver/modules.builtin" ] && return 0
	tmp=$OUT/dl.$kver
	rm -rf "$tmp" "$dir"
	mkdir -p "$tmp/x" "$dir/boot"
	for pkg in "linux-binary-$kver" "linux-modules-$kver" "linux-base-$kver" "linux-image-$kver" "linux-image-$kver-unsigned"; do
		kroot_run "$r" "$tmp" sh -c "cd /mnt/work && apt-get -q download '$pkg'" >>"$tmp/log" 2>&1 || true
	done
	for deb in "$tmp"/*.deb; do
		[ -f "$deb" ] || continue
		dpkg-deb -x "$deb" "$tmp/x"
	done
	for v in "$tmp/x/boot/vmlinuz-$kver" "$tmp/x/usr/lib/modules/$kver/vmlinuz" "$tmp/x/lib/modules/$kver/vmlinuz"; do
		if [ -s "$v" ]; then
			cp "$v" "$dir/boot/vmlinuz-$kver"
			break
		fi
	done
	if [ ! -s "$dir/boot/vmlinuz-$kver" ]; then
		cat "$tmp/log" >&2
		die "no kernel image for $kver in $(cd "$tmp" && echo *.deb)"
	fi
	# The modules the restart guest's disk needs (tests/restart/run.sh).
	for m in "$tmp/x/lib/modules/$kver" "$tmp/x/usr/lib/modules/$kver"; do
		[ -d "$m/kernel" ] || continue
		mkdir -p "$dir/lib/modules/$kver/kernel/drivers"
		cp "$m"/modules.* "$dir/lib/modules/$kver/" 2>/dev/null || true
		cp -r "$m/kernel/fs" "$m/kernel/lib" "$m/kernel/crypto" "$dir/lib/modules/$kver/kernel/"
		cp -r "$m/kernel/drivers/virtio" "$m/kernel/drivers/block" "$dir/lib/modules/$kver/kernel/drivers/"
		break
	done
	{ depmod -b "$dir" "$kver" && [ -f "$dir/lib/modules/$kver/modules.builtin" ]; } ||
		die "no modules tree for $kver (depmod -b ${dir#"$ROOT"/})"
	rm -rf "$tmp"
}

# make_root SUITE: the cached root of SUITE, unpacked, its kernels recorded.
make_root() {
	local suite=$1 metas key tarball r mmopts start meta kver kvers=() made d
	mapfile -t metas < <(metas_of "$suite")
	[ "${#metas[@]}" -gt 0 ] || die "Debian $suite has no kernel in SUITE_KERNELS"
	# No Recommends; sid's Release is past its Valid-Until on the mirror.
	mmopts=(--variant=apt --skip=cleanup/apt/lists
		--aptopt='APT::Install-Recommends "false"' --aptopt='Acquire::Check-Valid-Until "false"'
		--include="make,gcc,libc6-dev,libelf-dev,sparse,$(IFS=,; echo "${metas[*]}")")
	key=$(printf '%s\n' "${mmopts[@]}" "$MIRROR" | sha256sum | cut -c1-12)
	tarball=$OUT/$suite-$key.tar.zst
	r=$OUT/$suite
	made=0
	if [ ! -s "$tarball" ]; then
		start=$(now)
		rm -f "$OUT/$suite"-*.tar.zst
	fi
	# The machine cache (lib.sh): the tarball with its kernels' images,
	# fetched the day it was made (a root's apt lists name that day's
	# kernel, which the mirror drops when it moves on: fetch_image in a
	# root of last week may find it gone).
	if [ ! -s "$tarball" ] && mcache_get_dir "kroot-$suite" "$key" "$OUT/mcache-$suite" &&
		[ -s "$OUT/mcache-$suite/${tarball##*/}" ]; then
		for d in "$OUT/mcache-$suite"/images/*/; do
			d=${d%/}
			[ -d "$d" ] || continue
			rm -rf "$OUT/images/${d##*/}"
			mv -T "$d" "$OUT/images/${d##*/}"
		done
		mv "$OUT/mcache-$suite/${tarball##*/}" "$tarball"
		msg "root of Debian $suite from the machine cache ($(mcache_age "kroot-$suite" "$key") old, $(($(now) - start)) s)"
	fi
	rm -rf "$OUT/mcache-$suite"
	if [ ! -s "$tarball" ]; then
		made=1
		msg "mmdebstrap $suite ($MIRROR)"
		if ! mmdebstrap "${mmopts[@]}" "$suite" "$tarball.tmp.tar.zst" "deb $MIRROR $suite main" \
			>"$OUT/$suite.mmdebstrap.log" 2>&1; then
			tail -n 30 "$OUT/$suite.mmdebstrap.log" >&2
			rm -f "$tarball.tmp.tar.zst"
			die "mmdebstrap $suite failed (log: ${OUT#"$ROOT"/}/$suite.mmdebstrap.log)"
		fi
		mv "$tarball.tmp.tar.zst" "$tarball"
		msg "root of Debian $suite made in $(($(now) - start)) s"
	fi
	if [ "$(cat "$r/.kroot-key" 2>/dev/null)" != "$key" ]; then
		rm -rf "$r"
		mkdir -p "$r"
		tar -C "$r" --zstd -xf "$tarball"
		cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
		echo "$key" >"$r/.kroot-key"
	fi
	: >"$OUT/$suite.kvers.tmp"
	for meta in "${metas[@]}"; do
		kver=$(root_meta_kver "$r" "$meta")
		if [ -z "$kver" ] || [ ! -f "$r/usr/src/linux-headers-$kver/Makefile" ]; then
			die "$meta in the $suite root names no installed headers"
		fi
		ln -sfn "../$suite" "$OUT/kver/$kver"
		fetch_image "$r" "$kver"
		echo "$meta $kver" >>"$OUT/$suite.kvers.tmp"
		kvers+=("$kver")
	done
	mv "$OUT/$suite.kvers.tmp" "$OUT/$suite.kvers"
	if [ "$made" = 1 ]; then
		mcache_put_dir "kroot-$suite" "$key" "$OUT" "${tarball##*/}" "${kvers[@]/#/images/}" ||
			warn "the $suite root not stored in the machine cache"
	fi
	msg "Debian $suite: $(kroot_run "$r" "$OUT" gcc --version | head -n 1); kernels ${kvers[*]}"
}

exec 9>"$OUT/.lock"
flock 9
suites=("$@")
if [ "${#suites[@]}" -eq 0 ]; then
	for entry in "${SUITE_KERNELS[@]}"; do
		s=${entry%% *}
		[[ " ${suites[*]} " == *" $s "* ]] || suites+=("$s")
	done
fi
# The suites at once: each mmdebstrap mostly waits on the mirror (a fresh
# machine made bullseye, trixie and sid in 33, 282 and 40 s one after
# another).  Each in a subshell of its own (die ends only it); any that
# failed fails the whole.
pids=()
for s in "${suites[@]}"; do
	make_root "$s" &
	pids+=("$!")
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
exit "$rc"
