#!/bin/bash
# The piuparts stage of `make check` (issue 33, item 5; Debian 13 since
# issue 44): Debian's installation tester on each of the five packages, in
# a clean trixie chroot (a minbase mmdebstrap tarball from the host's
# mirror, host_mirror, cached in build/piuparts/ by its recipe): install,
# purge, and the upgrade from the previous release (served to the chroot's
# apt as a local repository: piuparts installs that version with apt-get
# first, then upgrades to the .deb, removes and purges it, and fails on
# what is left behind or broken).  A package is tested with those of ours
# it depends on (snowflake-agent with snowflake-tools, libsnowflake-dev
# with libsnowflake1).  Both releases are built on trixie
# (tests/lib/suite-debs.sh: dpkg-buildpackage in an overlay on the
# dkms-trixie root, which has their Build-Depends): today's from this tree
# (cached in build/piuparts/debs-trixie-KEY/, KEY: the tree's content), the
# previous one by tests/upgrade/old-release.sh trixie (cached by its
# commit); the Debian 12 packages do not install there (snowflake-agent
# depends on libhiredis0.14).  Debian 12's install and purge are the deb
# stage's (its systemd guest), its upgrade the upgrade stage's.
# Mostly waits on the mirror: check.sh runs it in the background.
# Prints "piuparts: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/piuparts
VERSION=$(cat "$ROOT/VERSION")
t0=$(now)
finish() {
	echo "piuparts: $pass passed, $fail failed ($(($(now) - t0)) s)"
	[ "$fail" -eq 0 ]
	exit
}
for tool in piuparts mmdebstrap dpkg-scanpackages; do
	command -v "$tool" >/dev/null || { notok "$tool is missing (scripts/deps.sh)"; finish; }
done
mkdir -p "$OUT"
# `run.sh --base`: only the clean chroot below and the two builds on trixie
# (tests/lib/check.sh makes them in the background from the start, at
# nice 10: its mmdebstrap waits on the mirror, 291 s of the stage's 520 in
# the fresh-clone run of e4ceea8, and in CI's run of 212cecf the stage,
# started after the contract, ended the run; the builds' CPU is better
# spent beside the first stages than beside the contract).  Their check
# lines come with the stage's own run ("the cached clean trixie chroot");
# a failure here is made again, and counted, there.  One mmdebstrap and
# one build at a time (flock): the stage waits for this one.
base_only=0
[ "${1:-}" = --base ] && base_only=1
exec 8>"$OUT/base.lock"
flock 8
# A run killed midway leaves its chroot's mounts: gone first, then its files.
cleanup() {
	local m
	for m in $(awk -v o="$OUT/run-" 'index($2, o) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" || true
	done
	rm -rf --one-file-system "$OUT"/run-* "$OUT"/repo-*
}
[ "$base_only" = 1 ] || cleanup
SUITE=trixie
# The host's mirror, as scripts/kroot.sh's and the quickstart lane's roots.
mirror=${KROOT_MIRROR:-$(host_mirror)}
sources="deb $mirror $SUITE main"
key=$(printf '%s\n' minbase "$sources" | sha256sum | cut -c1-12)
base=$OUT/$SUITE-$key.tgz
# The machine cache (lib.sh's mcache_*): another clone's chroot of the
# same recipe, within its max age.
if [ ! -s "$base" ] && mcache_get "piuparts-$SUITE" "$key" "$base"; then
	find "$OUT" -maxdepth 1 \( -name 'bookworm-*.tgz' -o -name "$SUITE-*.tgz" \) ! -path "$base" -delete
	echo "# the clean $SUITE chroot from the machine cache ($(mcache_age "piuparts-$SUITE" "$key") old)"
fi
if [ ! -s "$base" ]; then
	start=$(now)
	if mmdebstrap --variant=minbase "$SUITE" "$base.tmp.tar.gz" "$sources" >"$OUT/mmdebstrap.log" 2>&1; then
		mv "$base.tmp.tar.gz" "$base"
		find "$OUT" -maxdepth 1 \( -name 'bookworm-*.tgz' -o -name "$SUITE-*.tgz" \) ! -path "$base" -delete
		mcache_put "piuparts-$SUITE" "$key" "$base" || echo "# (not stored in the machine cache)"
		ok "a clean $SUITE chroot (mmdebstrap --variant=minbase, $(($(now) - start)) s)"
	else
		tail -n 20 "$OUT/mmdebstrap.log" | indent
		notok "mmdebstrap of the base chroot"
		finish
	fi
else
	ok "the cached clean $SUITE chroot ${base#"$ROOT"/}"
fi
flock -u 8
# Today's packages built on trixie, cached by the tree's content (a run of
# make check builds them once, in --base): DEBS, and a check line.
exec 7>"$OUT/debs.lock"
flock 7
tkey=$(tar -C "$ROOT" --exclude=./build --exclude=./.git --sort=name --mtime=@0 --owner=0 --group=0 \
	--numeric-owner -cf - . | sha256sum | cut -c1-12)
DEBS=$OUT/debs-$SUITE-$tkey
if [ -f "$DEBS.done" ]; then
	ok "today's packages built on $SUITE, cached in ${DEBS#"$ROOT"/}"
else
	start=$(now)
	rm -rf "$OUT/src-$SUITE" "$DEBS" "$DEBS.done"
	mkdir -p "$OUT/src-$SUITE"
	tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$OUT/src-$SUITE" -xf -
	if out=$("$ROOT/tests/lib/suite-debs.sh" "$SUITE" "$OUT/src-$SUITE" "$DEBS" 2>&1); then
		touch "$DEBS.done"
		find "$OUT" -maxdepth 1 -name "debs-$SUITE-*" ! -path "$DEBS" ! -path "$DEBS.done" \
			! -path "$DEBS.log" -exec rm -rf --one-file-system {} +
		ok "today's packages built on $SUITE (tests/lib/suite-debs.sh: dpkg-buildpackage -us -uc -b, $(($(now) - start)) s)"
	else
		indent <<<"$out"
		notok "today's packages built on $SUITE (tests/lib/suite-debs.sh)"
	fi
	rm -rf "$OUT/src-$SUITE"
fi
flock -u 7
if rel=$("$ROOT/tests/upgrade/old-release.sh" "$SUITE" 2>&1); then
	OLDV=$(sed -n 's/^old_version=//p' <<<"$rel")
	OLDD=$(sed -n 's/^dir=//p' <<<"$rel")
else
	indent <<<"$rel"
	notok "the previous release built on $SUITE (tests/upgrade/old-release.sh $SUITE)"
	finish
fi
[ "$base_only" = 0 ] || finish
# The previous release as a local repository the chroot's apt reads, one
# copy per run (piuparts fails a run when a process of another one has a
# file of its bind mount open).
repo() {
	mkdir -p "$OUT/repo-$1"
	cp "$OLDD"/debs/*.deb "$OUT/repo-$1/"
	rm -f "$OUT/repo-$1"/*-dbgsym_*
	(cd "$OUT/repo-$1" && dpkg-scanpackages . /dev/null >Packages 2>"$OUT/repo-$1.err") || {
		indent <"$OUT/repo-$1.err"
		return 1
	}
	# Every package of the previous release is in the index, at its version:
	# else piuparts "can't test upgrade" and says PASS all the same.
	local q
	for q in snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent; do
		awk -v p="$q" -v v="$OLDV" '$1 == "Package:" { n = $2 } $1 == "Version:" && n == p && $2 == v { f = 1 }
			END { exit !f }' "$OUT/repo-$1/Packages" || { echo "# $q $OLDV is not in the repository's index"; return 1; }
	done
}
# shellcheck source=tests/piuparts/verdict.sh
. "$ROOT/tests/piuparts/verdict.sh"
if out=$(bash "$ROOT/tests/piuparts/verdict-test.sh" 2>&1); then
	ok "the lane's verdict fails a run whose upgrade was skipped or failed ($(tail -n 1 <<<"$out" | sed 's/^# //'))"
else
	indent <<<"$out"
	notok "the lane's verdict fails a run whose upgrade was skipped or failed"
fi
deb() { find "$DEBS" -maxdepth 1 -name "${1}_${VERSION}_*.deb" 2>/dev/null | head -n1; }
declare -A with=([snowflake-dkms]="" [libsnowflake1]="" [libsnowflake-dev]="libsnowflake1"
	[snowflake-tools]="" [snowflake-agent]="snowflake-tools")
declare -A pid=()
# Left by systemd, not by us: snowflake-dkms depends on systemd (for
# sysusers), whose own tmpfiles.d makes these at its installation, and
# trixie's systemd links /etc/default/locale and /etc/vconsole.conf;
# piuparts purges it with our package and finds them unowned.  Purged
# together, systemd and udev (snowflake-tools' dependency, for its rule)
# leave /usr/lib/udev/ itself, which they both own.  /var/cache/debconf/tmp.ci/
# is trixie's debconf's, which the host's piuparts (Debian 12's 1.1.7)
# does not know.  Each pattern matches that path only (piuparts anchors
# them): a file of ours left in one of those directories still fails.
ignore=(-I '/root/\.ssh/' -I '/var/(cache|lib|log)/private/' -I '/var/lib/systemd/(coredump|pstore)/'
	-I '/etc/default/locale' -I '/etc/vconsole\.conf' -I '/usr/lib/udev/' -I '/var/cache/debconf/tmp\.ci/')
for p in snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent; do
	files=()
	for q in ${with[$p]} "$p"; do
		f=$(deb "$q")
		[ -n "$f" ] || { notok "no ${q}_$VERSION .deb built on $SUITE in ${DEBS#"$ROOT"/}"; finish; }
		files+=("$f")
	done
	mkdir -p "$OUT/run-$p"
	rm -f "$OUT/$p.log"
	repo "$p" || { notok "$OLDV's packages as a repository for $p's upgrade test"; continue; }
	# Two at a time: each mostly waits on the mirror and dpkg.
	while [ "$(jobs -rp | wc -l)" -ge "${PIUPARTS_JOBS:-2}" ]; do sleep 1; done
	piuparts -b "$base" -d "$SUITE" -m "$mirror" --tmpdir "$OUT/run-$p" \
		--bindmount "$OUT/repo-$p" --extra-repo "deb [trusted=yes] file://$OUT/repo-$p ./" \
		--no-adequate "${ignore[@]}" -l "$OUT/$p.log" "${files[@]}" >/dev/null 2>&1 &
	pid[$p]=$!
done
for p in snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent; do
	rc=0
	[ -z "${pid[$p]:-}" ] || wait "${pid[$p]}" || rc=$?
	[ -n "${pid[$p]:-}" ] || continue
	if [ "$rc" -eq 0 ] && piu_verdict "$OUT/$p.log"; then
		ok "piuparts $p${with[$p]:+ (with ${with[$p]})}: install, upgrade from $OLDV, remove, purge ($(grep -o 'PASS: .*' "$OUT/$p.log" | tail -n1))"
	else
		grep -E '^[0-9:.]* (ERROR|FAIL)|^  ' "$OUT/$p.log" | tail -n 25 | indent
		grep -E "Can't test upgrade|not in the archive" "$OUT/$p.log" | indent || true
		notok "piuparts $p (log: ${OUT#"$ROOT"/}/$p.log)"
	fi
done
cleanup
finish
