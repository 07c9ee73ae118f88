#!/bin/bash
# tests/deb/root.sh: the deb stage's fresh Debian 12 root, made once and
# cached as build/deb/root-<recipe>.tar.zst: the base system (mmdebstrap
# --variant=apt from the host's Debian 12 apt sources, no Recommends), dkms,
# systemd, the agent's hiredis and the headers of the first kernel.  Its
# name carries its recipe (the options and the sources), so a changed
# recipe makes a new one.
#
# tests/deb/run.sh calls it; tests/lib/check.sh also starts it in the
# background at the beginning of `make check` (mmdebstrap mostly waits on
# the mirror while the first stages use the CPUs).  Two runs at once: the
# second waits for the first (flock) and then finds its tarball.
#
# Environment: DEB_KERNELS (the first is the one whose headers the root
# gets; default: the first of all_kvers), DEB_SOURCES (as tests/deb/run.sh).
# Prints "# ..." lines, then "tarball=PATH" and "made=SECONDS" (or
# "cached=1"); exits nonzero when no root could be made.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/deb
mkdir -p "$OUT"
if [ -n "${DEB_KERNELS:-}" ]; then
	read -ra kvers <<<"$DEB_KERNELS"
else
	mapfile -t kvers < <(all_kvers | head -n 1)
fi
k1=${kvers[0]:?no kernel for the Debian root}

sources=$(bookworm_sources "${DEB_SOURCES:-}") || true
if [ -z "$sources" ]; then
	echo "# no apt sources for Debian 12 (bookworm) on this host: set DEB_SOURCES"
	exit 1
fi
include=dkms,systemd,libhiredis0.14,ca-certificates,linux-headers-$k1
# No Recommends (dkms's would bring a kernel image and an initramfs).
mmopts=(--variant=apt --skip=cleanup/apt/lists --aptopt='APT::Install-Recommends "false"'
	--include="$include")
key=$(printf '%s\n' "${mmopts[@]}" "$(cat "$sources")" | sha256sum | cut -c1-12)
tarball=$OUT/root-$key.tar.zst

exec 9>"$OUT/root.lock"
flock -w 1800 9 || {
	echo "# another tests/deb/root.sh held $OUT/root.lock for 30 minutes"
	exit 1
}
if [ -s "$tarball" ]; then
	echo "# the cached Debian 12 root with $include"
	echo "tarball=$tarball"
	echo "cached=1"
	exit 0
fi
start=$(now)
# The machine cache (lib.sh's mcache_*): a fresh clone takes the root of
# the same recipe another clone made, within its max age.
if mcache_get deb-root "$key" "$tarball"; then
	find "$OUT" -maxdepth 1 -name 'root-*.tar.zst' ! -path "$tarball" -delete
	echo "# from the machine cache ($(mcache_age deb-root "$key") old, $(($(now) - start)) s)"
	echo "# the cached Debian 12 root with $include"
	echo "tarball=$tarball"
	echo "cached=1"
	exit 0
fi
echo "# mmdebstrap bookworm (first run: a few minutes), sources: $sources"
if ! mmdebstrap "${mmopts[@]}" bookworm "$tarball.tmp.tar.zst" "$sources" \
	>"$OUT/mmdebstrap.log" 2>&1; then
	tail -n 30 "$OUT/mmdebstrap.log" | sed 's/^/#   /'
	rm -f "$tarball.tmp.tar.zst"
	echo "# mmdebstrap failed (log: ${OUT#"$ROOT"/}/mmdebstrap.log)"
	exit 1
fi
mv "$tarball.tmp.tar.zst" "$tarball"
# Roots of other recipes go only once this one exists.
find "$OUT" -maxdepth 1 -name 'root-*.tar.zst' ! -path "$tarball" -delete
mcache_put deb-root "$key" "$tarball" || echo "# (not stored in the machine cache)"
echo "# a fresh Debian 12 root with $include"
echo "tarball=$tarball"
echo "made=$(($(now) - start))"
