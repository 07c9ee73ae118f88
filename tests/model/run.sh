#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The model lane (issue 41, item 3): the lease protocol as a Promela model,
# tests/model/lease.pml, checked by spin within a fixed budget.
#   1. the record protocol (issue 40): safety (no two holders' windows of
#      one pair share a timestamp; no two holders serve one pair at once)
#      must hold: no error in the states explored;
#   2. the record protocol: liveness (`ltl live`: every pair is served at
#      some time, weak fairness, finitely many faults): no acceptance cycle;
#   3. today's ZooKeeper raise (-DKEYVER: fenced by the key node's version
#      only) must FAIL safety with a counterexample: spin's trail, replayed
#      and printed as the engine's events.
# The state space of 3 agents with faults does not fit an exhaustive search
# in the budget: runs 1 and 2 are bitstate searches (-DBITSTATE, -w27,
# depth -m3000) stopped after MODEL_SECONDS (20) each; each prints the
# states it explored.  Run 3 searches the same model, 3 agents and the same
# faults, to depth 400 (the shortest counterexample is about 230 steps):
# it must find the violation within MODEL_KEYVER_SECONDS (45; about 3 s
# here).
# Prints "model: N passed, M failed"; `make model` runs it.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
cd "$ROOT"

secs=${MODEL_SECONDS:-20}
ksecs=${MODEL_KEYVER_SECONDS:-45}
src=$ROOT/tests/model/lease.pml
out=$BUILD/model
command -v spin >/dev/null || { notok "spin is installed (make deps)"; echo "model: $pass passed, $fail failed"; exit 1; }

# pan NAME "SPIN DEFINES" "CC DEFINES": spin's verifier of the model, built
# in build/model/NAME/.
pan() {
	local d=$out/$1
	rm -rf "$d"
	mkdir -p "$d"
	cp "$src" "$d/lease.pml"
	# shellcheck disable=SC2086
	(cd "$d" && spin -a $2 lease.pml >spin.log 2>&1 && gcc -O1 -w $3 -o pan pan.c >cc.log 2>&1)
}

# search NAME SECONDS PAN-ARGS...: run it, stopped (SIGINT: pan prints its
# summary) after SECONDS; its output in build/model/NAME/pan.log.
search() {
	local name=$1 d=$out/$1 s=$2 t0
	shift 2
	t0=$(now)
	(cd "$d" && timeout -s INT "$s" ./pan "$@" >pan.log 2>&1) || true	# 130: stopped at the budget
	# shellcheck disable=SC2012
	echo "# $name: $(grep -Eo '[0-9.e+]+ states, stored' "$d/pan.log" | head -n 1) (depth $(grep -Eo 'depth reached [0-9]+' "$d/pan.log" | grep -Eo '[0-9]+$'), $(($(now) - t0)) s$(grep -Eo 'hash factor: [0-9.]+' "$d/pan.log" | sed 's/^/, /')$(grep -q '^Interrupted' "$d/pan.log" && echo ', stopped at the budget'))"
	return 0
}

# 1. The record protocol, safety.
if pan record-safety "" "-DSAFETY -DNOCLAIM -DBITSTATE"; then
	search record-safety "$secs" -E -m3000 -w27
	log=$out/record-safety/pan.log
	if grep -q 'errors: 0' "$log" && ! grep -q 'assertion violated' "$log"; then
		ok "record protocol: safety holds (windows of one pair never overlap; one server a pair)"
	else
		notok "record protocol: safety"
		grep -E 'violated|error' "$log" | head -n 5 | indent
	fi
else
	notok "record protocol: the safety verifier builds"
	tail -n 5 "$out/record-safety/"{spin,cc}.log | indent
fi

# 2. The record protocol, liveness.
if pan record-live "" "-DBITSTATE -DNFAIR=3"; then
	search record-live "$secs" -a -f -N live -m3000 -w27
	log=$out/record-live/pan.log
	if grep -q 'errors: 0' "$log" && grep -q 'acceptance   cycles 	+' "$log"; then
		ok "record protocol: liveness holds (ltl live: every pair is served, weak fairness)"
	else
		notok "record protocol: liveness"
		grep -E 'acceptance|violated|error' "$log" | head -n 5 | indent
	fi
else
	notok "record protocol: the liveness verifier builds"
	tail -n 5 "$out/record-live/"{spin,cc}.log | indent
fi

# 3. Today's ZooKeeper raise: must fail, with its trail.
kdefs="-DKEYVER"
if pan keyver "$kdefs" "-DSAFETY -DNOCLAIM -DBITSTATE"; then
	search keyver "$ksecs" -E -m400 -w27
	d=$out/keyver
	if grep -q 'assertion violated' "$d/pan.log" && [ -s "$d/lease.pml.trail" ]; then
		ok "key-version check (today's ZooKeeper raise): safety fails, with a counterexample"
		echo "# the counterexample (spin -t $kdefs lease.pml, in build/model/keyver/):"
		# shellcheck disable=SC2086
		(cd "$d" && spin -t $kdefs lease.pml 2>&1) | sed -n 's/^ *\(agent\|store\|network\)/\1/p; s/^spin: text of failed assertion: /assertion failed: /p' | indent
	else
		notok "key-version check: safety must fail, no counterexample found in $ksecs s"
	fi
else
	notok "key-version model: the verifier builds"
	tail -n 5 "$out/keyver/"{spin,cc}.log | indent
fi

echo "model: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
