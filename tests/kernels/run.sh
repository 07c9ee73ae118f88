#!/bin/bash
# The kernels stage of `make check`: the module built with W=1 for every
# kernel of the other Debian suites (SUITE_KERNELS: 5.10, 7.2, 7.2-rt),
# each inside a root of its own suite with that suite's compiler
# (scripts/kroot.sh); a warning fails like an error.  Debian 12's kernels
# are built by the sparse stage (W=1 C=1).  The lane that catches a removed
# kernel API (hrtimer_init() in 7.x): MODULE_SRC=DIR builds another tree.
#
#   KERNELS_NEWEST=1   (make kernels-check) instead: a fresh copy of the sid
#                      root, apt-get update, the newest linux-headers-*-amd64
#                      the mirror has, and the module built against it
#
# Prints "figure: kernel KVER: ..." per kernel and
# "kernels: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/kernels-check
t0=$(now)

finish() {
	echo "kernels: $pass passed, $fail failed ($(($(now) - t0)) s)"
	[ "$fail" -eq 0 ]
	exit
}

# build_w1 ROOT KVER: the module for KVER, W=1 and sparse (C=1, the
# suite's sparse), inside ROOT, in OUT/mod-KVER; warnings fail.
build_w1() {
	local r=$1 kver=$2 dir=$OUT/mod-$2 log=$OUT/build-$2.log start sp=" and sparse"
	start=$(now)
	if (sync_module_src "$dir" &&
		kroot_run "$r" "$dir" make -C "/usr/src/linux-headers-$kver" M=/mnt/work W=1 C=1 modules) \
		>"$log" 2>&1 && [ -f "$dir/snowflake.ko" ] &&
		! grep -qE 'warning:|error:' "$log"; then
		# sid's headers lack scripts/checker-valid.sh: kbuild then
		# builds without sparse, and says so.
		if grep -q 'sparse is not available' "$log"; then
			sp=" (sparse: kbuild of these headers cannot run it, no scripts/checker-valid.sh)"
		fi
		ok "$kver: built W=1$sp clean in $(($(now) - start)) s"
	else
		grep -E 'warning:|error:|Error' "$log" | head -n 20 | indent
		notok "$kver: the module does not build W=1 clean (log: ${log#"$ROOT"/})"
	fi
	echo "figure: kernel $kver: $(kroot_run "$r" "$OUT" gcc --version | head -n 1)"
}

mkdir -p "$OUT"
if [ "${KERNELS_NEWEST:-0}" = 1 ]; then
	# The newest headers the mirror has: sid's, whatever the meta-packages
	# of SUITE_KERNELS point at today.
	"$ROOT/scripts/kroot.sh" sid >/dev/null || die "scripts/kroot.sh sid failed"
	tarball=$(find "$BUILD/kroots" -maxdepth 1 -name 'sid-*.tar.zst' | head -n 1)
	[ -n "$tarball" ] || die "no cached sid root in build/kroots"
	r=$OUT/sid-newest
	rm -rf "$r"
	mkdir -p "$r"
	tar -C "$r" --zstd -xf "$tarball"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	if ! kroot_run "$r" "$OUT" apt-get -q -o Acquire::Check-Valid-Until=false update >"$OUT/apt.log" 2>&1; then
		indent <"$OUT/apt.log"
		notok "apt-get update in the sid root"
		finish
	fi
	newest=$(kroot_run "$r" "$OUT" apt-cache search --names-only '^linux-headers-[0-9].*-amd64$' |
		awk '{ print $1 }' | grep -vE -- '-(rt|cloud)-amd64$' | sort -V | tail -n 1)
	[ -n "$newest" ] || { notok "no linux-headers-*-amd64 in sid"; finish; }
	kver=${newest#linux-headers-}
	if kroot_run "$r" "$OUT" apt-get -q -y --no-install-recommends install "$newest" >>"$OUT/apt.log" 2>&1; then
		ok "sid's newest headers: $newest"
	else
		tail -n 20 "$OUT/apt.log" | indent
		notok "apt-get install $newest"
		finish
	fi
	build_w1 "$r" "$kver"
	finish
fi

if ! "$ROOT/scripts/kroot.sh" >"$OUT/kroot.log" 2>&1; then
	indent <"$OUT/kroot.log"
	notok "scripts/kroot.sh: the other suites' kernels cannot be had"
	finish
fi
# Not in a process substitution: suite_kvers dies when a kernel cannot be
# had, and that must fail the lane, not shrink the list.
if ! kv=$(suite_kvers); then
	notok "the other suites' kernels cannot all be had (suite_kvers, above)"
	finish
fi
mapfile -t kvers <<<"$kv"
for kver in "${kvers[@]}"; do
	build_w1 "$(kroot_of "$kver")" "$kver"
done
finish
