#!/bin/bash
# tests/deb/autopkgtest.sh ROOT ARCHIVES: the packages' autopkgtest smoke
# tests (debian/tests/control) in the deb lane's Debian 12 root, where the
# packages are installed, as autopkgtest runs them: each test's Depends
# installed with apt (and purged again at the end), the test run as root
# from a copy of debian/tests with AUTOPKGTEST_TMP set; it passes when it
# exits 0 and, unless allow-stderr, writes nothing to stderr.  The tests
# that need the machine (isolation-machine: the module) run in the upgrade
# lane's guest (tests/upgrade/guest.sh).  Prints "deb-autopkgtest: N
# passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"
# shellcheck disable=SC2034 # DEB_ARCHIVES: read by inroot (tests/deb/lib.sh)
R=$1 DEB_ARCHIVES=$2
t0=$(now)
if ! plan=$(python3 "$ROOT/tests/deb/autopkgtest.py" "$ROOT/debian/tests/control" 2>&1); then
	notok "debian/tests/control: $plan"
	plan=
fi
rm -rf "$R/tmp/autopkgtest"
mkdir -p "$R/tmp/autopkgtest"
cp -a "$ROOT/debian/tests/." "$R/tmp/autopkgtest/"
installed() { inroot dpkg-query -W -f '${Package}\n' | sort; }
added=
while IFS=$'\t' read -r name restr deps; do
	[ -n "$name" ] || continue
	pkgs=()
	IFS=, read -ra ds <<<"$deps"
	for d in "${ds[@]}"; do
		[ "$d" = @ ] || pkgs+=("${d%% *}")
	done
	before=$(installed)
	if [ "${#pkgs[@]}" -gt 0 ] && ! apt_in "${pkgs[@]}" >"$R/tmp/autopkgtest/$name.deps.log" 2>&1; then
		tail -n 10 "$R/tmp/autopkgtest/$name.deps.log" | indent
		notok "autopkgtest $name: its Depends ($deps) do not install"
		continue
	fi
	new=$(comm -13 <(echo "$before") <(installed))
	added="$added $new"
	start=$(now)
	rc=0
	inroot sh -c "cd /tmp/autopkgtest && AUTOPKGTEST_TMP=\$(mktemp -d) ./$name" \
		>"$R/tmp/autopkgtest/$name.out" 2>"$R/tmp/autopkgtest/$name.err" || rc=$?
	indent <"$R/tmp/autopkgtest/$name.out"
	sed 's/^/#   stderr: /' "$R/tmp/autopkgtest/$name.err"
	if [ "$rc" -ne 0 ]; then
		notok "autopkgtest $name: exit $rc"
	elif [ -s "$R/tmp/autopkgtest/$name.err" ] && [[ ",$restr," != *,allow-stderr,* ]]; then
		notok "autopkgtest $name: wrote to stderr (no allow-stderr)"
	else
		ok "autopkgtest $name (${restr:-no restrictions}; $(($(now) - start)) s)"
	fi
done <<<"$plan"
# What the tests' Depends brought goes again: the lane's purge finds the
# root as the packages left it.
# shellcheck disable=SC2086 # one package a word
if [ -n "${added// /}" ] && ! inroot "${APT[@]}" purge $added >"$R/tmp/autopkgtest.purge.log" 2>&1; then
	tail -n 10 "$R/tmp/autopkgtest.purge.log" | indent
	notok "apt-get purge of what the tests' Depends installed:$added"
fi
rm -rf "$R/tmp/autopkgtest" "$R/tmp/autopkgtest.purge.log"
echo "deb-autopkgtest: $pass passed, $fail failed ($(($(now) - t0)) s)"
[ "$fail" -eq 0 ]
