#!/bin/bash
# The upgrade stage of `make check` (issue 33): never break userspace.
#
#   1. The previous release (the version below VERSION in
#      debian/changelog), built from its own commit in this repository's
#      history (tests/upgrade/old-release.sh, cached by commit).
#   2. Its uapi header against today's, and every older release's
#      (tests/upgrade/uapi.py): the structures only grow, every
#      SNOWFLAKE_*_SIZE_VER* and ioctl number stays.
#   3. Its libsnowflake.so.1 against today's (abidiff, with the -dbgsym
#      packages' types): no removed or changed symbol or type; the symbols
#      file and the LIBSNOWFLAKE_* nodes agree with the library.
#   4. In a copy of the deb lane's Debian 12 root, its packages installed
#      (DKMS builds its module), three boots with systemd as PID 1
#      (tests/upgrade/guest.sh): the upgrade to today's packages under load
#      with a strict device and its agent, the reboot, the previous
#      release's CLI and selftests on today's module, the downgrade under
#      load (strict=0), the reboot.  Between boots the root gets the same
#      apt-get install on the host (what the guest did to its root in RAM)
#      and the state a disk keeps (tests/upgrade/guest.sh says which).
#
# Today's packages: the deb lane's (build/deb/*.deb; run it first:
# STAGES="deb upgrade").  Prints "figure: upgrade ..." lines and
# "upgrade: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"

OUT=$BUILD/upgrade
R=$OUT/root
VERSION=$(cat "$ROOT/VERSION")
# A boot's limit (a hung guest ends there): phase B (apt-get, the old
# selftests, a reboot's state) ran 449 s of the 600 it had in the run of
# 335683d and was cut at 600 s in the run of 53cb13c, beside vmtest's three
# guests and the debug kernel's; never a bound on how long anything takes.
TIMEOUT=${UPGRADE_TIMEOUT:-1500}
t_start=$(now)

finish() {
	[ -z "${R:-}" ] || [ -n "${UPGRADE_KEEP:-}" ] || rm -rf "$R"
	echo "upgrade: $pass passed, $fail failed ($(($(now) - t_start)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}
rm -rf "$OUT"
mkdir -p "$OUT"

# ---- 0. the lane's own checks, fed the failures they exist for --------------
# (the verdict on the old selftests, the readers' open gap:
# tests/upgrade/verdict-test.sh)
if out=$(bash "$ROOT/tests/upgrade/verdict-test.sh" 2>&1); then
	ok "the lane's own checks fail on what they exist for ($(tail -n 1 <<<"$out" | sed 's/^# //'))"
else
	indent <<<"$out"
	notok "the lane's own checks fail on what they exist for"
fi

# ---- 1. the previous release ------------------------------------------------
start=$(now)
if rel=$("$ROOT/tests/upgrade/old-release.sh" 2>&1); then
	grep '^#' <<<"$rel"
	OLDV=$(sed -n 's/^old_version=//p' <<<"$rel")
	OLDD=$(sed -n 's/^dir=//p' <<<"$rel")
	ok "the previous release $OLDV built from $(sed -n 's/^old_commit=//p' <<<"$rel" | cut -c1-12) ($(($(now) - start)) s)"
else
	indent <<<"$rel"
	notok "the previous release could not be built from history"
	finish
fi
new_debs=() old_debs=()
for p in snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent; do
	f=$(find "$BUILD/deb" -maxdepth 1 -name "${p}_${VERSION}_*.deb" | head -n1)
	[ -n "$f" ] && new_debs+=("$f")
	f=$(find "$OLDD/debs" -maxdepth 1 -name "${p}_${OLDV}_*.deb" | head -n1)
	[ -n "$f" ] && old_debs+=("$f")
done
if [ "${#new_debs[@]}" -ne 5 ] || [ "${#old_debs[@]}" -ne 5 ]; then
	notok "the five packages of $VERSION (build/deb: the deb stage first) and of $OLDV"
	finish
fi

# ---- 2. the uapi structures only grow ----------------------------------------
if python3 "$ROOT/tests/upgrade/uapi.py" "$ROOT" >"$OUT/uapi.log" 2>&1; then
	ok "uapi: every older release's structures, sizes and ioctls kept ($(grep -c '^# release' "$OUT/uapi.log") releases)"
else
	notok "uapi: an older release's structure, size or ioctl changed"
fi
indent <"$OUT/uapi.log"
# The comparison itself, fed one planted change at a time (a STATE_* bit,
# a device name, an ioctl in another form...): each must be found.
if python3 "$ROOT/tests/upgrade/uapi.py" --self-test "$ROOT" >"$OUT/uapi-self.log" 2>&1; then
	ok "uapi: every planted change of a macro is found ($(grep -c '^ok' "$OUT/uapi-self.log") cases)"
else
	notok "uapi: a planted change of a macro went unseen"
fi
indent <"$OUT/uapi-self.log"

# ---- 3. the library's ABI ----------------------------------------------------
"$ROOT/tests/upgrade/abi.sh" "$OUT/abi" "$OLDD/debs" "$BUILD/deb" "$OLDV" "$VERSION" >"$OUT/abi.log" 2>&1 || true
while read -r res line; do
	if [ "$res" = ok ]; then ok "$line"; else notok "$line"; fi
done < <(sed -n 's/^\(ok\|notok\) /\1 /p' "$OUT/abi.log")
grep '^#' "$OUT/abi.log" || true
grep -q '^ok ' "$OUT/abi.log" || notok "abi.sh printed no result"

# ---- 4. the guest: upgrade, reboot, old binaries, downgrade, reboot ------------
mapfile -t kvers < <(all_kvers | head -n 1)
K=${kvers[0]}
rootout=$(DEB_KERNELS="$K" "$ROOT/tests/deb/root.sh" 2>&1) || true
tarball=$(sed -n 's/^tarball=//p' <<<"$rootout" | tail -n1)
if [ -z "$tarball" ] || [ ! -s "$tarball" ]; then
	indent <<<"$rootout"
	notok "no Debian 12 root (tests/deb/root.sh)"
	finish
fi
# root_apt WHAT LOG CMD...: CMD (apt in the root) logged in OUT/LOG.log:
# ok WHAT with its time, or its log's end and the end of the stage.
root_apt() {
	local what=$1 log=$OUT/$2.log start
	shift 2
	start=$(now)
	if "$@" >"$log" 2>&1; then
		ok "$what ($(($(now) - start)) s)"
	else
		tail -n 30 "$log" | indent
		notok "$what (log: ${log#"$ROOT"/})"
		finish
	fi
}
start=$(now)
mkdir -p "$R" "$BUILD/deb/archives/partial"
tar -C "$R" --zstd -xf "$tarball"
cp -L /etc/resolv.conf "$R/etc/resolv.conf"
DEB_ARCHIVES=$BUILD/deb/archives
mkdir -p "$R/root/debs-new" "$R/root/debs-old"
cp "${new_debs[@]}" "$R/root/debs-new/"
cp "${old_debs[@]}" "$R/root/debs-old/"
in_old=()
for f in "${old_debs[@]}"; do in_old+=("/root/debs-old/${f##*/}"); done
root_apt "$OLDV's packages installed into a copy of the root, DKMS built its module" \
	install-old apt_in "${in_old[@]}"
# The module DKMS built for it: the guest, which has no kernel headers,
# gets it at the downgrade (tests/upgrade/guest.sh).
rm -rf "$OUT/ko-old"
mkdir -p "$OUT/ko-old"
find "$R/lib/modules/$K/updates" -name 'snowflake.ko*' -exec cp {} "$OUT/ko-old/" \;
# The guest has no network: the new dependencies of today's packages
# (downloaded here, as apt would there) go beside them.
in_new=()
for f in "${new_debs[@]}"; do in_new+=("/root/debs-new/${f##*/}"); done
inroot "${APT[@]}" install --download-only "${in_new[@]}" >"$OUT/download.log" 2>&1 || true
for p in $(inroot "${APT[@]}" -s install "${in_new[@]}" 2>/dev/null | sed -n 's/^Inst \([^ ]*\) .*/\1/p'); do
	case $p in snowflake-* | libsnowflake*) continue ;; esac
	f=$(find "$DEB_ARCHIVES" -maxdepth 1 -name "${p}_*.deb" | head -n1)
	[ -n "$f" ] && cp "$f" "$R/root/debs-new/" && echo "# a new dependency of $VERSION, beside its packages: ${f##*/}"
done

# overlay PHASE: the guest's files for that phase.
overlay() {
	local phase=$1 ov=$OUT/ov-$1 d
	rm -rf "$ov"
	mkdir -p "$ov/etc/snowflake" "$ov/usr/local/old/selftests" "$ov/root"
	deb_guest_unit "$ov" sfup "$ROOT/tests/upgrade/guest.sh" \
		"snowflake: upgrade, reboot, downgrade (tests/upgrade/run.sh)" \
		"snowflake-floor.service systemd-udev-settle.service network.target"
	deb_agent_conf sfup 'state-file = /var/lib/snowflake/agent.state' >"$ov/etc/snowflake/agent.conf"
	chmod 0700 "$ov/etc/snowflake"
	chmod 0600 "$ov/etc/snowflake/agent.conf"
	deb_guest_redis "$ov" "$R" || return 1
	# depmod in the guest indexes updates/ (DKMS's module) and leaves out
	# the kernel's own 4230 modules (kernel/, the root's linux-image, each
	# .ko.xz decompressed under the emulated CPU): the prerm's `dkms
	# remove` runs depmod -a at the upgrade (phase A) and the downgrade
	# (phase B), and guest.sh once more in B.  The depmod of the upgrade
	# took 87 s of phase A's apt-get (221 s) in the run of 9bf8e23 (on the
	# host, the same depmod: 6.5 CPU-s; with this file: 0.00 s); the
	# guests' qemu went from 175 to 114 CPU-s in A, 358 to 185 in B.  Sound
	# because this index is only read after the packages changed, when
	# nothing loads a module but snowflake, which depends on none (modinfo
	# -F depends: empty); each boot's modules (udev's, systemd's: kvm_amd,
	# ata_piix, autofs4...) come from the index of the root on the host,
	# made by its own apt-get without this file, so the boots and what
	# the packages' scripts run are unchanged.
	mkdir -p "$ov/etc/depmod.d"
	echo 'exclude kernel' >"$ov/etc/depmod.d/sfup-guest.conf"
	gcc -static -O2 -Wall -Wextra -Werror -o "$ov/usr/local/bin/sf-upgrade-reader" \
		"$ROOT/tests/upgrade/reader.c" || return 1
	echo "$phase" >"$ov/etc/sfup-phase"
	echo "$OLDV" >"$ov/etc/sfup-old-version"
	echo "$VERSION" >"$ov/etc/sfup-new-version"
	grep -v '^#' "$ROOT/tests/upgrade/expected-fail" >"$ov/etc/sfup-expected-fail" || true
	# Its README (readme_test reads its examples from it).
	cp "$OLDD/src/README.md" "$ov/usr/local/old/README.md"
	# The previous release's CLI (from its package; its libsnowflake linked
	# in statically) and its
	# selftests whose source differs from today's.
	dpkg-deb --fsys-tarfile "$OLDD/debs/snowflake-tools_${OLDV}_"*.deb | tar -xOf - ./usr/bin/snowflake >"$ov/usr/local/old/snowflake"
	chmod 0755 "$ov/usr/local/old/snowflake"
	# Every listed selftest is copied, or the overlay fails (it runs under
	# `||`, where set -e does not stop it); the guest runs the list, and a
	# binary missing there is a failure, not a skip.
	for d in $(cat "$OUT/old-selftests"); do
		cp "$OLDD/selftests/$d" "$ov/usr/local/old/selftests/" || return 1
	done
	cp "$OUT/old-selftests" "$ov/etc/sfup-old-selftests" || return 1
	install -D -m 0644 "$ROOT/tests/upgrade/verdict.sh" "$ov/usr/local/lib/sfup-verdict.sh" || return 1
	cp "$OUT"/ko-old/snowflake.ko* "$ov/usr/local/old/"
	# A program built against the previous release's library (abi.sh).
	[ ! -x "$OUT/abi/old-client" ] || install -m 0755 "$OUT/abi/old-client" "$ov/usr/local/old/old-client"
	# DKMS's sources stay (the initramfs leaves /usr/src out: the kernel
	# headers): the maintainer scripts' dkms remove reads them.
	for d in "$R"/usr/src/snowflake-*; do
		[ -d "$d" ] || continue
		mkdir -p "$ov/usr/src"
		cp -a "$d" "$ov/usr/src/"
	done
	# The autopkgtest smoke tests that need the machine (the others run
	# in the deb lane's root: tests/deb/autopkgtest.sh).
	mkdir -p "$ov/usr/local/debian-tests"
	python3 "$ROOT/tests/deb/autopkgtest.py" --machine "$ROOT/debian/tests/control" >"$ov/usr/local/debian-tests/machine"
	for d in $(cat "$ov/usr/local/debian-tests/machine"); do
		install -m 0755 "$ROOT/debian/tests/$d" "$ov/usr/local/debian-tests/$d"
	done
	if [ -s "$OUT/state.tgz" ]; then
		cp "$OUT/state.tgz" "$ov/root/sfup-state.tgz"
		# The state directory and Redis's data, back before the floor unit.
		printf '%s\n' '[Unit]' 'Description=snowflake: the state the last boot kept (tests/upgrade/run.sh)' \
			'DefaultDependencies=no' 'Before=snowflake-floor.service sysinit.target' \
			'After=local-fs.target systemd-sysusers.service' '' '[Service]' 'Type=oneshot' \
			'ExecStart=/bin/tar -xpzf /root/sfup-state.tgz -C /' \
			>"$ov/etc/systemd/system/sfup-restore.service"
		mkdir -p "$ov/etc/systemd/system/sysinit.target.wants"
		ln -s ../sfup-restore.service "$ov/etc/systemd/system/sysinit.target.wants/sfup-restore.service"
	fi
}
# boot PHASE: the root and that overlay booted; its results counted;
# the state it wrote to its second serial port into OUT/state.tgz.
boot() {
	local phase=$1 ov=$OUT/ov-$1 img=$OUT/root.cpio log=$OUT/console-$1.log
	overlay "$phase" || { notok "phase $phase: the overlay"; return 1; }
	deb_guest_initramfs "$R" "$ov" "$img"
	echo "# phase $phase: initramfs $(($(stat -c %s "$img") >> 20)) MiB"
	rm -f "$OUT/serial-$phase.txt"
	# shellcheck disable=SC2034 # read by vm_boot_systemd (tests/lib/vm.sh)
	VM_SYSTEMD_ARGS=(-serial "file:$OUT/serial-$phase.txt")
	vm_boot_systemd "$K" "$img" "$log" "$TIMEOUT" || return 1
	rm -f "$img"
	deb_guest_results SFUP "upgrade $phase" "$log" "$OUT"
	tr -d '\r' <"$log" | sed -n 's/^SFUP figure /figure: upgrade /p'
	rm -f "$OUT/state.tgz"
	if [ "$phase" != C ]; then
		tr -d '\r' <"$OUT/serial-$phase.txt" | sed -n '/^SFUP-STATE-BEGIN/,/^SFUP-STATE-END/p' |
			sed '1d;$d' | base64 -d >"$OUT/state.tgz" 2>/dev/null || true
		check "phase $phase: the state a reboot keeps came out ($(tar -tzf "$OUT/state.tgz" 2>/dev/null | grep -c .) entries)" \
			tar -tzf "$OUT/state.tgz" var/lib/snowflake/floor var/lib/sfup-prev-max
	fi
}
# The previous release's selftests whose source (or whose headers) differ
# from today's; the others are today's own, which vmtest runs on this
# module already.
: >"$OUT/old-selftests"
oldc=$(sed -n 's/^old_commit=//p' <<<"$rel")
# (The uapi header's comments do not go into a binary: compared without them.)
nocomment() { git -C "$ROOT" show "$1:uapi/linux/snowflake.h" | gcc -fpreprocessed -dD -E -P - 2>/dev/null; }
common=$(git -C "$ROOT" diff --name-only "$oldc" HEAD -- selftests/snowflake_util.h || true)
[ "$(nocomment "$oldc")" = "$(nocomment HEAD)" ] || common="$common uapi/linux/snowflake.h"
for f in "$OLDD"/selftests/*_test; do
	n=${f##*/}
	if [ -n "$common" ] || ! git -C "$ROOT" diff --quiet "$oldc" HEAD -- "selftests/$n.c"; then
		echo "$n" >>"$OUT/old-selftests"
	fi
done
case " $(cat "$OUT/old-selftests" | tr '\n' ' ') " in *" libsnowflake_test "* | *" cli_test "*) ;; *)
	# The library's tests link the old library: always.
	printf '%s\n' libsnowflake_test cli_test >>"$OUT/old-selftests" ;;
esac
echo "# $OLDV's selftests run in the guest (the source differs from today's): $(sort -u "$OUT/old-selftests" | paste -sd ' ')"
sort -u -o "$OUT/old-selftests" "$OUT/old-selftests"

boot A || finish
# The reboot: the root gets what apt-get did in the guest.
in_new=()
for f in "$R"/root/debs-new/*.deb; do in_new+=("/root/debs-new/${f##*/}"); done
root_apt "the root, for the reboot: apt-get install of $VERSION's packages, as in the guest" \
	install-new apt_in "${in_new[@]}"
check "the root: DKMS built $VERSION's module for $K" \
	sh -c "modinfo -F version \$(find '$R/lib/modules/$K/updates' -name 'snowflake.ko*' | head -n1) | grep -qx '$VERSION'"
boot B || finish
root_apt "the root, for the reboot: apt-get install --allow-downgrades of $OLDV's packages, as in the guest" \
	install-down inroot "${APT[@]}" install --allow-downgrades "${in_old[@]}"
check "the root: DKMS built $OLDV's module for $K" \
	sh -c "modinfo -F version \$(find '$R/lib/modules/$K/updates' -name 'snowflake.ko*' | head -n1) | grep -qx '$OLDV'"
boot C || finish
finish
