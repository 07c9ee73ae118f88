#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The contract's mutants (tests/contract/mutants/*.patch): every agent
# defect found so far, kept as a small patch that brings it back.  This
# builds them; tests/contract/contract.py --mutants runs every one of its
# scenarios on each of its stores, in the servers the contract already
# started, and prints the table mutant x scenario x store (killed only by
# a failure its Reason matches).
#
#   mutants.sh OUT [PATCH...]
#                         build every mutant (or the PATCHes given) under OUT/NAME/ (the tree's
#                         userspace/, uapi/ and VERSION copied, the patch
#                         applied with git apply, the agent built), two at a
#                         time; OUT/manifest: one line per mutant,
#                         NAME<TAB>STATUS<TAB>AGENT<TAB>STORES<TAB>SCENARIOS<TAB>REASON<TAB>DEFECT
#                         (STATUS: built, no-preamble, no-reason,
#                         not-applying, not-building); OUT/done when all are.
#
# A patch's preamble (the text before its first "diff --git") holds the
# lines "Mutant: <the defect>", "Stores: <etcd redis zookeeper mysql>",
# "Scenarios: <contract scenarios that must kill it>" and "Reason: <a
# python regex>": what the failure message of each of those scenarios must
# match for the cell to count as killed (contract.py checks it is a regex).
# A patch without a Reason is not run: its line says no-reason, a failure.
# An optional "Sim-args: <sim options>" line is tests/sim/run.sh's (the
# simulated world that finds the mutant, e.g. --full-pool).
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=${1:?usage: mutants.sh OUT [PATCH...]}
shift
rm -rf "$OUT"
mkdir -p "$OUT"

# field PATCH KEY: the value of "KEY: ..." in PATCH's preamble.
field() {
	sed -n '/^diff --git /q; s/^'"$2"': *//p' "$1" | head -n1
}

# one PATCH: its line of the manifest.
one() {
	local patch name d defect stores scen reason st=built
	patch=$(realpath "$1")
	name=$(basename "$patch" .patch)
	d=$OUT/$name
	mkdir -p "$d/src"
	defect=$(field "$patch" Mutant)
	stores=$(field "$patch" Stores)
	scen=$(field "$patch" Scenarios)
	reason=$(field "$patch" Reason)
	if [ -z "$defect" ] || [ -z "$stores" ] || [ -z "$scen" ]; then
		st=no-preamble
	elif [ -z "$reason" ] || [[ $reason == *$'\t'* ]]; then
		st=no-reason
	else
		cp -a "$ROOT/VERSION" "$ROOT/userspace" "$ROOT/uapi" "$d/src/"
		rm -rf "$d/src/userspace/build"
		# Not inside this repository's git (build/ is in the worktree):
		# git apply as a plain patch tool on the copy.
		if ! (cd "$d/src" && GIT_CEILING_DIRECTORIES=$d git apply "$patch") >"$d/apply.log" 2>&1; then
			st=not-applying
		elif ! nice make -s -C "$d/src/userspace" OUT="$d/build" agent >"$d/build.log" 2>&1; then
			st=not-building
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$st" "$d/build/snowflake-agent" "$stores" "$scen" \
		"${reason:--}" "$defect" >"$d/line"
}

shopt -s nullglob
patches=("$@")
[ $# -gt 0 ] || patches=("$ROOT"/tests/contract/mutants/*.patch)
running=0
for p in "${patches[@]}"; do
	one "$p" &
	running=$((running + 1))
	if [ "$running" -ge 2 ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
for p in "${patches[@]}"; do
	cat "$OUT/$(basename "$p" .patch)/line"
done >"$OUT/manifest"
touch "$OUT/done"
