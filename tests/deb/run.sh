#!/bin/bash
# The deb stage of `make check`: the Debian packages of debian/, built,
# checked, installed into a fresh Debian 12 root, their module booted.
#
#   1. `dpkg-buildpackage -us -uc -b` on a copy of the tree in build/deb/src
#      (the tree itself stays clean); debian/changelog's version is VERSION's.
#   2. lintian on the .changes: no error; every warning (and info) listed.
#   3. What each package ships: the files that matter are where they belong.
#   4. A fresh Debian 12 root (mmdebstrap, the host's Debian apt sources)
#      with dkms and the headers of the first kernel, cached as
#      build/deb/root-*.tar.zst (rebuilt when its recipe changes; the .debs
#      apt downloads are kept in build/deb/archives).  In a copy of it, with
#      apt: our .debs (DKMS builds snowflake.ko in their postinst), then the
#      headers of the second kernel (DKMS's kernel hook builds it again);
#      the groups, the udev rule's setfacl, /etc/snowflake (0700), the
#      enabled unit, the conffile, the units' exposure scores (at most 2.0);
#      the autopkgtest smoke tests of debian/tests (tests/deb/autopkgtest.sh).
#   5. That very snowflake.ko of the second kernel (the one DKMS's kernel
#      hook built) booted in the QEMU guest (tests/vmtest/run.sh with
#      MODULE_KO=, TESTS: module_test read_test).
#   5b. That root, as it is, booted with systemd as PID 1 on the first
#      kernel: the units as a host runs them (tests/deb/systemd.sh), on the
#      module DKMS built for it in the postinst (so 5 does not boot it
#      again: it did until the budget of issue 42, one guest more).
#   5c. A copy of that root with Debian's podman and runc, booted the same
#      way: real containers against that module, through --device and the
#      CDI spec the package installed, and snowflake-agent as the
#      Kubernetes DaemonSet runs it (tests/deb/containers.sh).
#   6. apt-get purge of our packages (and of the headers installed after
#      them): the root is as it was before, but for what Debian keeps on
#      purpose (the system user and group, dpkg's and apt's own records,
#      dkms's signing key) and the saved floor, which the purge keeps and
#      names (issue 44); the rest of the state the units made (the agent's
#      state, the identity config --save wrote, /etc/snowflake) goes.
#
# Environment: DEB_KERNELS="K1 K2" (default: the first two of all_kvers, the
# second one installed after the packages), DEB_TESTS (default "module_test
# read_test"), DEB_SOURCES (an apt .sources/.list file; default: the host's
# Debian 12 sources).  Prints "deb: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

OUT=$BUILD/deb
SRC=$OUT/src
PKGS=(snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent)
VERSION=$(cat "$ROOT/VERSION")
R=$OUT/root
t_start=$(now)

finish() {
	echo "deb: $pass passed, $fail failed ($(($(now) - t_start)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

for tool in dpkg-buildpackage lintian mmdebstrap dh_dkms zstd; do
	if ! command -v "$tool" >/dev/null; then
		notok "$tool is missing (scripts/deps.sh installs it)"
		finish
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	notok "the install test needs root (chroot, mounts)"
	finish
fi

mkdir -p "$OUT"
# ---- 1. build --------------------------------------------------------------
cl_ver=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
check "debian/changelog is version $cl_ver, VERSION is $VERSION" [ "$cl_ver" = "$VERSION" ]

rm -rf "$SRC" "$OUT"/*.deb "$OUT"/*.changes "$OUT"/*.buildinfo
mkdir -p "$SRC"
tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$SRC" -xf -
start=$(now)
if (cd "$SRC" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b ($(($(now) - start)) s)"
else
	tail -n 40 "$OUT/build.log" | indent
	notok "dpkg-buildpackage -us -uc -b (log: ${OUT#"$ROOT"/}/build.log)"
	finish
fi
changes=$OUT/snowflake_${VERSION}_$(dpkg --print-architecture).changes
debs=()
for p in "${PKGS[@]}"; do
	f=$(find "$OUT" -maxdepth 1 -name "${p}_${VERSION}_*.deb" | head -n1)
	if [ -n "$f" ]; then debs+=("$f"); else notok "no ${p}_${VERSION}_*.deb"; fi
done
[ "${#debs[@]}" -eq "${#PKGS[@]}" ] || finish
ok "the ${#PKGS[@]} packages: ${PKGS[*]}"

# ---- 2. lintian ------------------------------------------------------------
lintian -I -E --pedantic "$changes" >"$OUT/lintian.log" 2>&1 || true
lintian_check "$OUT/lintian.log" "lintian: no error" "overrides: debian/*.lintian-overrides"

# ---- 3. contents -----------------------------------------------------------
contents() { dpkg-deb -c "$OUT/${1}_${VERSION}_"*.deb | awk '{ print $6 }' | sed 's|^\./|/|'; }
has() {
	local pkg=$1 f missing=()
	shift
	for f in "$@"; do
		grep -qxF "$f" <<<"$(contents "$pkg")" || missing+=("$f")
	done
	check "$pkg ships $*" [ "${#missing[@]}" -eq 0 ]
	[ "${#missing[@]}" -eq 0 ] || echo "#   missing: ${missing[*]}"
}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has snowflake-dkms /usr/src/snowflake-"$VERSION"/dkms.conf /usr/src/snowflake-"$VERSION"/Kbuild \
	/lib/udev/rules.d/60-snowflake.rules /usr/lib/sysusers.d/snowflake.conf \
	/usr/lib/modules-load.d/snowflake.conf /etc/modprobe.d/snowflake.conf /etc/cdi/snowflake.yaml
has libsnowflake1 /usr/lib/"$ma"/libsnowflake.so.1
has libsnowflake-dev /usr/include/snowflake.h /usr/include/linux/snowflake.h \
	/usr/lib/"$ma"/libsnowflake.so /usr/lib/"$ma"/pkgconfig/snowflake.pc
has snowflake-tools /usr/bin/snowflake /usr/sbin/snowflake-floord \
	/lib/systemd/system/snowflake-floor.service /lib/systemd/system/snowflake-metrics.service \
	/lib/systemd/system/snowflake-metrics.timer /usr/share/bash-completion/completions/snowflake
has snowflake-agent /usr/sbin/snowflake-agent /lib/systemd/system/snowflake-agent.service \
	/usr/lib/tmpfiles.d/snowflake.conf
bad_units=$(for p in snowflake-tools snowflake-agent; do
	dpkg-deb --fsys-tarfile "$OUT/${p}_${VERSION}"_*.deb | tar -xOf - --wildcards './lib/systemd/system/*'
done | grep -n '@[A-Z]*@' || true)
check "the installed units name absolute paths (no @SBINDIR@ left)" [ -z "$bad_units" ]
# The library's ABI is the symbols file's (dh_makeshlibs -c4 enforces it
# at build time; here: it is the one shipped).
check "libsnowflake1 ships a symbols file" \
	sh -c "dpkg-deb -I $OUT/libsnowflake1_${VERSION}_*.deb symbols | grep -q 'snowflake_get_fence@LIBSNOWFLAKE_1.1'"

# ---- 4. install into a fresh Debian 12 root --------------------------------
if [ -n "${DEB_KERNELS:-}" ]; then
	read -ra kvers <<<"$DEB_KERNELS"
else
	mapfile -t kvers < <(all_kvers | head -n 2)
fi
late=("${kvers[@]:1}")

# The cached root (tests/deb/root.sh; check.sh may have started it
# already: then this waits for it).
rootout=$(DEB_KERNELS="${kvers[*]}" "$ROOT/tests/deb/root.sh" 2>&1) || true
tarball=$(sed -n 's/^tarball=//p' <<<"$rootout" | tail -n1)
include=$(sed -n 's/^# \(the cached \)\{0,1\}\(a fresh \)\{0,1\}Debian 12 root with //p' <<<"$rootout" | tail -n1)
if [ -z "$tarball" ] || [ ! -s "$tarball" ]; then
	indent <<<"$rootout"
	notok "mmdebstrap: no Debian 12 root (tests/deb/root.sh; log: ${OUT#"$ROOT"/}/mmdebstrap.log)"
	finish
elif grep -q '^made=' <<<"$rootout"; then
	ok "mmdebstrap: a fresh Debian 12 root with $include ($(sed -n 's/^made=//p' <<<"$rootout") s)"
else
	ok "cached Debian 12 root ${tarball#"$ROOT"/}"
fi

# A copy of the cached root; the chroot runs in its own mount and PID
# namespace (its /proc, /sys and /dev go away with it).
rm -rf "$R"
mkdir -p "$R" "$OUT/archives/partial"
tar -C "$R" --zstd -xf "$tarball"
cp -L /etc/resolv.conf "$R/etc/resolv.conf"
mkdir -p "$R/root/debs"
cp "${debs[@]}" "$R/root/debs/"
DEB_ARCHIVES=$OUT/archives
# Everything but what dpkg, apt and the logs change by themselves: files by
# mode, owner, size and time, but depmod's indexes (rewritten, the same, when
# a module comes and goes) by their contents.
snapshot() {
	(cd "$R" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
		-o -path ./tmp -o -path ./var/log -o -path ./var/cache -o -path ./var/lib/apt \
		-o -path ./var/lib/dpkg -o -path ./root/debs -o -path ./etc/ld.so.cache \) -prune -o \
		\( -type f -path './usr/lib/modules/*/modules.*' -printf '%p %m %u:%g ' \
		-exec sh -c 'md5sum <"$1" | cut -c1-32' _ {} \; \) -o \
		\( -type f -printf '%p %m %u:%g %s %T@\n' \) -o \
		\( ! -type f -printf '%p %m %u:%g %y %l\n' \) | LC_ALL=C sort)
}
before=$(snapshot)

start=$(now)
if apt_in "${debs[@]/#"$OUT"/\/root\/debs}" >"$OUT/install.log" 2>&1; then
	ok "apt-get install ./snowflake-*.deb ./libsnowflake*.deb ($(($(now) - start)) s)"
else
	tail -n 40 "$OUT/install.log" | indent
	notok "apt-get install of the packages (log: ${OUT#"$ROOT"/}/install.log)"
	finish
fi
grep -E '^(Building|Installing|Signing|Running|Error|dkms|.*snowflake\.ko)' "$OUT/install.log" | indent || true
for k in "${late[@]}"; do
	start=$(now)
	if apt_in "linux-headers-$k" >"$OUT/headers-$k.log" 2>&1; then
		ok "apt-get install linux-headers-$k after the packages ($(($(now) - start)) s)"
	else
		tail -n 30 "$OUT/headers-$k.log" | indent
		notok "apt-get install linux-headers-$k"
	fi
done
status=$(inroot dkms status snowflake 2>&1 || true)
indent <<<"$status"
kos=()
for k in "${kvers[@]}"; do
	ko=$(find "$R/lib/modules/$k/updates" -name 'snowflake.ko*' 2>/dev/null | head -n1)
	if grep -q "snowflake/$VERSION, $k, .*: installed" <<<"$status" && [ -n "$ko" ]; then
		ok "$k: DKMS built and installed ${ko#"$R"}"
		mkdir -p "$OUT/ko/$k"
		rm -f "$OUT/ko/$k"/*
		cp "$ko" "$OUT/ko/$k/"
		kos+=("$k=$OUT/ko/$k/${ko##*/}")
		name=$(modinfo -F name "$ko") vermagic=$(modinfo -F vermagic "$ko") ver=$(modinfo -F version "$ko")
		good=0
		[ "$name" = snowflake ] && [ "$ver" = "$VERSION" ] && [[ $vermagic == "$k "* ]] && good=1
		check "$k: modinfo: $name $ver, vermagic ${vermagic%% *}" [ "$good" = 1 ]
	else
		notok "$k: no snowflake.ko installed by DKMS"
	fi
done
check "sysusers: the group snowflake exists" grep -q '^snowflake:' "$R/etc/group"
check "sysusers: the group snowflake-admin, with snowflake-daemon in it" \
	grep -q '^snowflake-admin:x:[0-9]*:snowflake-daemon$' "$R/etc/group"
# The udev rule's ACL entry for the readers: its RUN program is there
# (snowflake-dkms depends on acl).
run=$(sed -n 's/.*RUN+="\([^ "]*\) .*/\1/p' "$R/lib/udev/rules.d/60-snowflake.rules")
check "the udev rule's RUN program is installed: ${run:-none} (the package acl)" \
	test -n "$run" -a -x "$R$run"
check "/etc/snowflake made at installation (tmpfiles.d): $(stat -c '%a %U:%G' "$R/etc/snowflake" 2>&1)" \
	test "$(stat -c '%a %U:%G' "$R/etc/snowflake" 2>/dev/null)" = "700 root:root"
check "snowflake-floor.service is enabled (sysinit.target.wants)" \
	test -L "$R/etc/systemd/system/sysinit.target.wants/snowflake-floor.service"
check "snowflake-metrics.timer is enabled (timers.target.wants)" \
	test -L "$R/etc/systemd/system/timers.target.wants/snowflake-metrics.timer"
check "snowflake-agent.service is not enabled (it needs agent.conf first)" \
	sh -c "! find '$R/etc/systemd/system' -name snowflake-agent.service | grep -q ."
check "the installed CLI runs: snowflake decode --bits 41/5/5/12 (offline)" \
	sh -c "chroot '$R' snowflake decode --bits 41/5/5/12 2124240299256590336 | grep -q 'worker='"
# The installed units, as systemd sees them in that root.
for u in snowflake-floor.service snowflake-agent.service snowflake-metrics.service \
	snowflake-metrics.timer; do
	if MANPATH=$R/usr/share/man systemd-analyze verify --root="$R" "/lib/systemd/system/$u" \
		>"$OUT/verify.log" 2>&1 &&
		[ ! -s "$OUT/verify.log" ]; then
		ok "systemd-analyze verify $u: clean"
	else
		notok "systemd-analyze verify $u"
		indent <"$OUT/verify.log"
	fi
done
for u in snowflake-floor.service snowflake-agent.service snowflake-metrics.service; do
	score=$(systemd-analyze security --offline=true --root="$R" "$u" 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	check "systemd-analyze security --offline=true $u: ${score:-none} (at most 2.0)" \
		awk -v s="${score:-9}" 'BEGIN { exit !(s <= 2.0) }'
done
check "the installed library is in ld.so's cache" \
	sh -c "chroot '$R' ldconfig -p | grep -q 'libsnowflake.so.1 .*=> .*/$ma/libsnowflake.so.1\$'"

# The packages' autopkgtest smoke tests (debian/tests/control) that run in
# this root; those that need the module run in the upgrade lane's guest.
deb_part autopkgtest deb-autopkgtest "$OUT/autopkgtest.log" "$ROOT/tests/deb/autopkgtest.sh" "$R" "$DEB_ARCHIVES"

# ---- 5. the DKMS-built module in the guest ----------------------------------
# The second kernel's: the first kernel's module is the one 5b's guest loads.
for kk in "${kos[@]}"; do
	k=${kk%%=*} ko=${kk#*=}
	[ "$k" != "${kvers[0]}" ] || continue
	if KERNELS=$k MODULE_KO=$ko TESTS=${DEB_TESTS:-module_test read_test} SNOWFLAKE_SKIP_DEPS=1 \
		VM_TIMEOUT=${VM_TIMEOUT:-300} "$ROOT/tests/vmtest/run.sh" >"$OUT/vm-$k.log" 2>&1; then
		ok "$k: the DKMS-built snowflake.ko boots and passes ${DEB_TESTS:-module_test read_test} ($(grep -o "^vm $k: .*" "$OUT/vm-$k.log" | tail -n1))"
	else
		grep -E '^(not ok|vm |  )' "$OUT/vm-$k.log" | tail -n 30 | indent
		notok "$k: the DKMS-built snowflake.ko in the guest (log: ${OUT#"$ROOT"/}/vm-$k.log)"
	fi
done

# ---- 5b. the units under systemd ------------------------------------------
# The root booted with systemd as PID 1 on the first kernel: the units as a
# host runs them (tests/deb/systemd.sh; the root is not changed).
if [ -n "${kos[0]:-}" ]; then
	deb_part "the units under systemd" deb-systemd "$OUT/systemd.log" \
		"$ROOT/tests/deb/systemd.sh" "$R" "${kos[0]%%=*}" "$OUT/systemd"
else
	notok "the units under systemd: no DKMS-built module to boot"
fi

# ---- 5c. containers ----------------------------------------------------------
# podman and runc in a copy of the root (the root itself is not changed),
# booted on the first kernel (tests/deb/containers.sh).
if [ -n "${kos[0]:-}" ]; then
	deb_part containers deb-containers "$OUT/containers.log" \
		"$ROOT/tests/deb/containers.sh" "$R" "${kos[0]%%=*}" "$OUT/containers" "$OUT/archives"
else
	notok "containers: no DKMS-built module to boot"
fi

# ---- 6. purge ---------------------------------------------------------------
# What the units and the CLI leave on a running host (no systemd runs in
# this root): the state directory with the floor and the agent's state,
# /etc/snowflake, the identity `snowflake config --save` records.
mkdir -p "$R/var/lib/snowflake" "$R/etc/snowflake"
printf 'snowflake-floor 1\n' >"$R/var/lib/snowflake/floor"
printf 'datacenter=1 worker=3\n' >"$R/var/lib/snowflake/agent.state"
chroot "$R" chown -R snowflake-daemon:snowflake /var/lib/snowflake
chmod 0700 "$R/etc/snowflake"
printf 'options snowflake datacenter_id=1 worker_id=3\n' >"$R/etc/modprobe.d/snowflake.identity.conf"
if inroot "${APT[@]}" purge "${PKGS[@]}" >"$OUT/purge.log" 2>&1 &&
	{ [ "${#late[@]}" -eq 0 ] || inroot "${APT[@]}" purge "${late[@]/#/linux-headers-}" >>"$OUT/purge.log" 2>&1; } &&
	inroot "${APT[@]}" autoremove --purge >>"$OUT/purge.log" 2>&1; then
	ok "apt-get purge ${PKGS[*]}"
else
	tail -n 30 "$OUT/purge.log" | indent
	notok "apt-get purge"
fi
after=$(snapshot)
# The purge's own account of it (debian/*.postrm), one line each.
grep -E '^snowflake-(tools|agent): ' "$OUT/purge.log" | indent || true
check "purge kept the saved floor and said so, with the rm that forgets it" \
	sh -c "test -s '$R/var/lib/snowflake/floor' &&
		grep -qF 'snowflake-tools: kept /var/lib/snowflake/floor' '$OUT/purge.log' &&
		grep -qF 'rm /var/lib/snowflake/floor' '$OUT/purge.log'"
check "purge said it removed the identity (with what it held) and the agent's state" \
	sh -c "grep -qF 'removed /etc/modprobe.d/snowflake.identity.conf (options snowflake datacenter_id=1 worker_id=3)' '$OUT/purge.log' &&
		grep -qF 'removed /var/lib/snowflake/agent.state' '$OUT/purge.log'"
# Kept on purpose: the saved floor and its directory (issue 44: it keeps a
# reinstall on a host whose clock is behind from issuing the same IDs; the
# test above), the system user and group (Debian never removes them: files
# may still be owned by them), the signing key DKMS made for itself, and
# depmod's index of a kernel that has headers but no image (dkms's depmod
# writes it; no package owns it).
keep='^> \./var/lib/snowflake(/floor)? |^[<>] \./etc/(passwd|shadow|group|gshadow)-? |^> \./var/lib/dkms/mok\.(key|pub) |^> \./var/lib/dkms '
for k in "${late[@]}"; do
	[ -e "$R/usr/lib/modules/$k/kernel" ] && continue
	keep="$keep|^> \./usr/lib/modules/${k//./\\.}(/modules\.[a-z.]*)? "
done
left=$(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | grep -vE "$keep" || true)
if [ -z "$left" ]; then
	ok "purge leaves nothing behind (but the saved floor, the user and group, dkms's own key, depmod's indexes)"
else
	notok "left behind after the purge:"
	indent <<<"$left"
fi
for f in group passwd; do
	check "the user and group snowflake* are all that changed in /etc/$f" \
		bash -c "diff <(grep -v '^snowflake' '$R/etc/$f') <(tar --zstd -xOf '$tarball' ./etc/$f)"
done
rm -rf "$R"
finish
