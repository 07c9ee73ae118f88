#!/bin/bash
# tests/upgrade/old-release.sh: the previous release, built from its own
# commit in this repository's history, the way a user had it; cached in
# build/old-release/<commit>/ (a commit never changes, so neither does its
# build; a build that failed is made again).
#
# The previous release is the version below VERSION in debian/changelog;
# its commit, the last one whose VERSION file said so (the commit that
# changed VERSION to today's version is its child).  From a git archive of
# that commit (the working tree is not touched):
#   debs/       its five packages (dpkg-buildpackage -us -uc -b), with the
#               -dbgsym ones (abidiff reads libsnowflake's types from them)
#   selftests/  its static selftests and static CLI (selftests/Makefile,
#               the kselftest harness of build/ksrc: scripts/ksrc.sh)
#   uapi.h      its uapi header, include/snowflake.h its library header
# Prints "# ..." lines, then "old_version=V", "old_commit=C", "dir=DIR";
# exits nonzero (with the reason) when the commit is not in this clone or
# the build failed.  tests/lease/run.sh builds its legacy agent the same
# way (git archive of a commit).  Two runs at once: the second waits (flock).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

SUITE=${1:-}
if [ $# -gt 1 ] || [[ ! $SUITE =~ ^[a-z]*$ ]]; then
	die "usage: tests/upgrade/old-release.sh [SUITE]"
fi

new=$(cat "$ROOT/VERSION")
old=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -c 1 -o 1 -S Version)
[ -n "$old" ] || die "debian/changelog has no version before $new"
if [ "$(git -C "$ROOT" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
	echo "# a shallow clone: $old's commit may be missing (git fetch --unshallow)"
fi
# The commit that made VERSION say something else than $old, newest first:
# its parent is $old's last commit.
commit=
for c in $(git -C "$ROOT" log --format=%H -- VERSION); do
	if [ "$(git -C "$ROOT" show "$c^:VERSION" 2>/dev/null)" = "$old" ] &&
		[ "$(git -C "$ROOT" show "$c:VERSION")" != "$old" ]; then
		commit=$(git -C "$ROOT" rev-parse "$c^")
		break
	fi
done
[ -n "$commit" ] || die "no commit with VERSION $old in this clone's history (a shallow clone? git fetch --unshallow)"
short=${commit:0:12}
OUT=$BUILD/old-release/$short${SUITE:+-$SUITE}
mkdir -p "$BUILD/old-release"
# A lock per suite: the trixie build waits for its root, the upgrade stage
# for this host's build.
exec 9>"$BUILD/old-release/lock${SUITE:+-$SUITE}"
flock -w 1800 9 || die "another old-release.sh held the lock for 30 minutes"
echo "# the previous release: $old, commit $short ($(git -C "$ROOT" log -1 --format=%s "$commit" | cut -c1-70))"
# The machine cache (lib.sh's mcache_*), keyed as here by the commit (and
# the suite): another clone's build, within its max age.
kind=old-release${SUITE:+-$SUITE}
if [ ! -e "$OUT/done" ] && mcache_get_dir "$kind" "$commit" "$OUT" && [ -e "$OUT/done" ]; then
	echo "# from the machine cache ($(mcache_age "$kind" "$commit") old)"
fi
if [ -e "$OUT/done" ]; then
	echo "# cached in ${OUT#"$ROOT"/}"
elif [ -n "$SUITE" ]; then
	start=$(now)
	rm -rf "$OUT"
	mkdir -p "$OUT/src"
	git -C "$ROOT" archive "$commit" | tar -x -C "$OUT/src"
	[ "$(cat "$OUT/src/VERSION")" = "$old" ] || die "$short's VERSION is $(cat "$OUT/src/VERSION"), not $old"
	if ! "$ROOT/tests/lib/suite-debs.sh" "$SUITE" "$OUT/src" "$OUT/debs" >"$OUT/suite-debs.out" 2>&1; then
		cat "$OUT/suite-debs.out"
		die "the packages of $old ($short) on $SUITE (tests/lib/suite-debs.sh)"
	fi
	rm -rf "$OUT/src"
	echo "$commit" >"$OUT/done"
	mcache_put_dir "$kind" "$commit" "$OUT" || echo "# (not stored in the machine cache)"
	echo "# built $old's packages on $SUITE in $(($(now) - start)) s"
else
	start=$(now)
	rm -rf "$OUT"
	mkdir -p "$OUT/src" "$OUT/debs" "$OUT/selftests"
	git -C "$ROOT" archive "$commit" | tar -x -C "$OUT/src"
	[ "$(cat "$OUT/src/VERSION")" = "$old" ] || die "$short's VERSION is $(cat "$OUT/src/VERSION"), not $old"
	# The packages, in a copy (dpkg-buildpackage writes beside the tree).
	if ! (cd "$OUT/src" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1; then
		tail -n 30 "$OUT/build.log" | sed 's/^/#   /'
		die "dpkg-buildpackage of $old ($short) failed (log: ${OUT#"$ROOT"/}/build.log)"
	fi
	mv "$OUT"/*.deb "$OUT/debs/"
	rm -f "$OUT"/*.changes "$OUT"/*.buildinfo
	# Its static selftests and CLI, with today's kselftest harness (the
	# kernel's, not ours).
	[ -e "$BUILD/ksrc/$KSFT_SUBDIR/kselftest_harness.h" ] || "$ROOT/scripts/ksrc.sh" >/dev/null
	if ! make -C "$OUT/src/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" OUT="$OUT/selftests" \
		LIB_OUT="$OUT/lib" >"$OUT/selftests.log" 2>&1; then
		tail -n 30 "$OUT/selftests.log" | sed 's/^/#   /'
		die "the selftests of $old ($short) did not build (log: ${OUT#"$ROOT"/}/selftests.log)"
	fi
	cp "$OUT/src/uapi/linux/snowflake.h" "$OUT/uapi.h"
	mkdir -p "$OUT/include"
	cp "$OUT/src/userspace/include/snowflake.h" "$OUT/include/snowflake.h"
	echo "$commit" >"$OUT/done"
	mcache_put_dir "$kind" "$commit" "$OUT" || echo "# (not stored in the machine cache)"
	echo "# built $old's packages and selftests in $(($(now) - start)) s"
fi
echo "old_version=$old"
echo "old_commit=$commit"
echo "dir=$OUT"
