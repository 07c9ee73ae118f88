#!/bin/bash
# The piuparts stage of `make check` (issue 33, item 5): Debian's
# installation tester on each of the five packages, in a clean bookworm
# chroot (a minbase mmdebstrap tarball, cached in build/piuparts/ by its
# recipe): install, purge, and the upgrade from the previous release
# (tests/upgrade/old-release.sh's packages, served to the chroot's apt as a
# local repository: piuparts installs that version with apt-get first,
# then upgrades to the .deb, removes and purges it, and fails on what is
# left behind or broken).  A package is tested with those of ours it
# depends on (snowflake-agent with snowflake-tools, libsnowflake-dev with
# libsnowflake1).  Today's packages: the deb lane's (build/deb/*.deb).
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
# `run.sh --base`: only the clean chroot below (tests/lib/check.sh makes it
# in the background from the start, at nice 10: its mmdebstrap waits on
# the mirror, 291 s of the stage's 520 in the fresh-clone run of e4ceea8,
# and in CI's run of 212cecf the stage, started after the contract, ended
# the run).  Its check line comes with the stage's own run ("the cached
# clean bookworm chroot"); a failure here is made again, and counted,
# there.  One mmdebstrap at a time (flock): the stage waits for this one.
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
sources=$(bookworm_sources "${DEB_SOURCES:-}") || true
[ -n "$sources" ] || { notok "no apt sources for Debian 12 on this host (DEB_SOURCES)"; finish; }
mirror=$(sed -n 's/^\(URIs:\|deb\) *\(\[[^]]*\] *\)\{0,1\}\(http[^ ]*\).*/\3/p' "$sources" | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
key=$(printf '%s\n' minbase "$(cat "$sources")" | sha256sum | cut -c1-12)
base=$OUT/bookworm-$key.tgz
if [ ! -s "$base" ]; then
	start=$(now)
	if mmdebstrap --variant=minbase bookworm "$base.tmp.tar.gz" "$sources" >"$OUT/mmdebstrap.log" 2>&1; then
		mv "$base.tmp.tar.gz" "$base"
		find "$OUT" -maxdepth 1 -name 'bookworm-*.tgz' ! -path "$base" -delete
		ok "a clean bookworm chroot (mmdebstrap --variant=minbase, $(($(now) - start)) s)"
	else
		tail -n 20 "$OUT/mmdebstrap.log" | indent
		notok "mmdebstrap of the base chroot"
		finish
	fi
else
	ok "the cached clean bookworm chroot ${base#"$ROOT"/}"
fi
flock -u 8
[ "$base_only" = 0 ] || finish
if rel=$("$ROOT/tests/upgrade/old-release.sh" 2>&1); then
	OLDV=$(sed -n 's/^old_version=//p' <<<"$rel")
	OLDD=$(sed -n 's/^dir=//p' <<<"$rel")
else
	indent <<<"$rel"
	notok "the previous release (tests/upgrade/old-release.sh)"
	finish
fi
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
deb() { find "$BUILD/deb" -maxdepth 1 -name "${1}_${VERSION}_*.deb" | head -n1; }
declare -A with=([snowflake-dkms]="" [libsnowflake1]="" [libsnowflake-dev]="libsnowflake1"
	[snowflake-tools]="" [snowflake-agent]="snowflake-tools")
declare -A pid=()
# Left by systemd, not by us: snowflake-dkms depends on systemd (for
# sysusers), whose own tmpfiles.d makes these at its installation; piuparts
# purges it with our package and finds them unowned.
ignore=(-I '/root/\.ssh/' -I '/var/(cache|lib|log)/private/' -I '/var/lib/systemd/(coredump|pstore)/')
for p in snowflake-dkms libsnowflake1 libsnowflake-dev snowflake-tools snowflake-agent; do
	files=()
	for q in ${with[$p]} "$p"; do
		f=$(deb "$q")
		[ -n "$f" ] || { notok "no ${q}_$VERSION .deb in build/deb (the deb stage first)"; finish; }
		files+=("$f")
	done
	mkdir -p "$OUT/run-$p"
	rm -f "$OUT/$p.log"
	repo "$p" || { notok "$OLDV's packages as a repository for $p's upgrade test"; continue; }
	# Two at a time: each mostly waits on the mirror and dpkg.
	while [ "$(jobs -rp | wc -l)" -ge "${PIUPARTS_JOBS:-2}" ]; do sleep 1; done
	piuparts -b "$base" -d bookworm -m "$mirror" --tmpdir "$OUT/run-$p" \
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
		notok "piuparts $p (log: ${OUT#"$ROOT"/}/$p.log)"
	fi
done
cleanup
finish
