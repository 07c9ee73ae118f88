#!/bin/bash
# Install what building and testing snowflake needs on Debian 12, and fetch
# the guest kernel images (those of the other Debian suites, with their
# roots: scripts/kroot.sh).
#
# Packages are installed only when missing (apt-get update + install run only
# then).  The guest kernels are the ones the headers meta-packages point at;
# their bzImage comes from /boot when that kernel is installed, otherwise from
# the linux-image package downloaded (not installed) into build/kernels/.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"

PKGS=(
	build-essential gcc make libc6-dev
	qemu-system-x86 busybox-static cpio kmod sparse
	"${KERNEL_META_PKGS[@]}" "$KSRC_PKG"
	xz-utils perl file bc cppcheck clang-tidy
	clang libclang-rt-dev
	flex bison libelf-dev libssl-dev
	pkg-config man-db groff-base
	python3 php-cli
	gnuplot-nox valgrind
	dkms systemd udev acl e2fsprogs util-linux libhiredis-dev redis-server
	qemu-utils
	dpkg-dev debhelper dh-dkms lintian mmdebstrap zstd prometheus python3-yaml
	nodejs openjdk-17-jdk-headless golang-go
	# The clients as packages (tests/clients/run.sh): pip into a venv,
	# pytest; Composer, PHPUnit; tsc for the Node.js types; Maven offline
	# against Debian's repository (its plugins and JUnit 5).
	python3-venv python3-pip python3-setuptools python3-pytest
	composer phpunit node-typescript
	maven libmaven-resources-plugin-java libmaven-compiler-plugin-java libsurefire-java
	libmaven-jar-plugin-java libmaven-install-plugin-java junit5
	libcurl4-openssl-dev libjson-c-dev etcd-server etcd-client iproute2 openssl
	mariadb-server libmariadb-dev zookeeperd libzookeeper-mt-dev zookeeper-bin
	# The database functions (clients/postgresql, clients/mariadb): PGXS and
	# pg_buildext, MariaDB's UDF headers.
	postgresql-15 postgresql-server-dev-15 postgresql-server-dev-all libmariadbd-dev
	# The upgrade lane (tests/upgrade/): abidiff, piuparts, autopkgtest.
	abigail-tools piuparts autopkgtest
	# The model lane (tests/model/): the SPIN model checker.
	spin
)

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-q -y -o Dpkg::Use-Pty=0 -o APT::Color=0)
apt_updated=0

apt_update() {
	[ "$apt_updated" -eq 1 ] && return 0
	msg "apt-get update"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq update
	apt_updated=1
}

# npm: Debian's nodejs leaves it to the package npm; a nodejs built
# elsewhere (NodeSource's) ships it and conflicts with that package.
command -v npm >/dev/null || PKGS+=(npm)

mkdir -p "$BUILD"
missing=()
for p in "${PKGS[@]}"; do
	pkg_installed "$p" || missing+=("$p")
done

# apt_install PKG...: apt-get install of PKG, its log in $BUILD/apt.log.
apt_install() {
	msg "installing: $*"
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get "${APT_OPTS[@]}" install --no-install-recommends "$@" \
		>>"$BUILD/apt.log" 2>&1 || {
		tail -n 40 "$BUILD/apt.log" >&2
		die "apt-get install failed (log above)"
	}
	for p in "$@"; do
		pkg_installed "$p" || die "$p is still not installed"
	done
}

# The other suites' kernels (5.10, 7.2, 7.2-rt, Debian 13's 6.12): their
# roots, headers and images (scripts/kroot.sh; fails when one cannot be
# had).  Three mmdebstraps that wait mostly on the mirror: started as soon
# as the tools they need are here (installed first, alone), beside the
# install of everything else and the kernel images' downloads; their
# messages are printed when they end.  (After the big install, they added
# their 91 s to a fresh machine's deps; the fresh-clone run of e4ceea8.)
KROOT_PKGS=(mmdebstrap zstd kmod util-linux dpkg)
kroot_pid=
kroot_start() {
	bg_start "$BUILD/kroot.rc" "$ROOT/scripts/kroot.sh" >"$BUILD/kroot.log" 2>&1
	kroot_pid=$!
}
# A failure before kroot_wait still waits for the roots (no mmdebstrap
# left running after deps.sh).
trap '[ -z "$kroot_pid" ] || wait "$kroot_pid" 2>/dev/null || true' EXIT
kroot_wait() {
	local rc=0
	bg_wait "$kroot_pid" "$BUILD/kroot.rc" || rc=$?
	kroot_pid=
	cat "$BUILD/kroot.log"
	[ "$rc" -eq 0 ] || die "scripts/kroot.sh failed (exit $rc; its log above)"
}

: >"$BUILD/apt.log"
if [ "${#missing[@]}" -gt 0 ]; then
	if ! can_be_root; then
		die "missing packages: ${missing[*]}
  not root and no sudo: as root, run
    apt-get update && apt-get install -y ${missing[*]}"
	fi
	apt_update
	first=() rest=()
	for p in "${missing[@]}"; do
		if [[ " ${KROOT_PKGS[*]} " == *" $p "* ]]; then first+=("$p"); else rest+=("$p"); fi
	done
	[ "${#first[@]}" -eq 0 ] || apt_install "${first[@]}"
	kroot_start
	[ "${#rest[@]}" -eq 0 ] || apt_install "${rest[@]}"
else
	kroot_start
fi

# The busybox in the guest must be the static one.
command -v busybox >/dev/null || die "busybox not found after installing busybox-static"
file -L "$(command -v busybox)" | grep -q 'statically linked' ||
	die "$(command -v busybox) is not statically linked (install busybox-static)"

# Guest kernels: one bzImage per kernel release.
fetch_kernel() {
	local kver=$1 ver dir tmp pkg deb
	dir="$BUILD/kernels/$kver"
	ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null) ||
		die "linux-headers-$kver is not installed"
	tmp="$dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# Prefer the exact version of the headers; then whatever apt offers.
	for pkg in "linux-image-$kver=$ver" "linux-image-$kver-unsigned=$ver" \
		"linux-image-$kver" "linux-image-$kver-unsigned"; do
		if (cd "$tmp" && apt-get -q download "$pkg") >"$tmp/download.log" 2>&1; then
			break
		fi
		if [ "$apt_updated" -eq 0 ] && can_be_root; then
			apt_update
			if (cd "$tmp" && apt-get -q download "$pkg") >"$tmp/download.log" 2>&1; then
				break
			fi
		fi
	done
	deb=$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n1)
	if [ -z "$deb" ]; then
		cat "$tmp/download.log" >&2
		die "cannot download linux-image-$kver (or -unsigned)"
	fi
	msg "extracting boot/vmlinuz-$kver from ${deb##*/}"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./boot/vmlinuz-$kver"
	[ -s "$tmp/boot/vmlinuz-$kver" ] || die "no boot/vmlinuz-$kver in $deb"
	rm -f "$deb" "$tmp/download.log"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

for kver in $(all_kvers); do
	[ -f "$(kdir_of "$kver")/Makefile" ] || die "headers for $kver are not in $(kdir_of "$kver")"
	if vmlinuz_of "$kver" >/dev/null; then
		continue
	fi
	fetch_kernel "$kver"
done

kroot_wait

for kver in $(vm_kvers); do
	msg "kernel $kver: headers $(kdir_of "$kver"), guest $(vmlinuz_of "$kver")"
done
msg "all dependencies are present"
