#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The sim lane (issue 41; tests/README.md, "sim"): the lease engine's
# deterministic simulator, tests/sim/sim.c, built against the real
# userspace/agent/agent.c, on each of the four stores' simulated semantics
# (FLAVORS: Redis, etcd, ZooKeeper, MySQL), within a fixed budget (about
# 60 s of CPU):
#   1. the real engine: on each store, seeds from 1 for SIM_BUDGET_S (24) / 4
#      s, no violation; and the full-pool world (sim --full-pool: a fifth
#      agent whose requests fail at 30 % must say pool_full), seeds 1 to
#      SIM_FULL_SEEDS (300);
#   2. replay: one seed's whole schedule (--trace) twice, byte for byte, on
#      each store;
#   3. its power: every engine mutant of tests/contract/mutants/ (those that
#      patch agent.c, applied to a copy as tests/contract/mutants.sh does)
#      is found on each store within SIM_MUTANT_SEEDS (3000) seeds, with its
#      seeds-to-find printed (in the world its preamble's "Sim-args:" line
#      names, e.g. --full-pool, else the seeds' own); a seed where the real engine fails as well is
#      not counted (skipped); a mutant the simulator (or one store) cannot
#      express is listed in UNEXPRESSIBLE below with why, and not counted;
#   4. the first mutant's failing seed replays exactly (the same violation,
#      the same schedule);
#   5. the seeds that found a defect of the real engine (REGRESSIONS) pass.
# Prints "sim: N passed, M failed".
#
#   tests/sim/run.sh              the lane
#   tests/sim/run.sh SEED         `make sim SEED=n [FLAVOR=f]`: replay one seed, its schedule
#                                 printed (SIM_FLAVOR=f: on store f, else the one the seed draws)
#   SIM_SEEDS=N tests/sim/run.sh search   `make sim [FLAVOR=f]`: N seeds (10000) of the real engine
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
cd "$ROOT" || exit 1

OUTD=$BUILD/sim
mkdir -p "$OUTD"
FLAVORS=(redis etcd zookeeper mysql)
flavor=()
[ -z "${SIM_FLAVOR:-}" ] || flavor=(--flavor "$SIM_FLAVOR")

# Mutants the simulator cannot express, and why (tests/README.md, "sim"):
# NAME on every store, NAME@STORE on that one.
declare -A UNEXPRESSIBLE=(
	[i23-3-quarantine-per-run]="adds a function-level static, which the simulated agents share (one process): what the sim sees is that artefact (one agent's quarantine timer read on another's clock), not the defect"
	[i23-7-sigterm-ignored-in-walks]="every store call of the walk already ends on the stop (ag_wait asks ag_stop_pending), so the walk ends at once anyway; the defect needs --init-store or a walk whose calls all answer in less than the stop check, which the contract's sigterm_walk times on a real store"
	[i31-7-durability-not-rechecked]="backend-level: the durability recheck is store_ops.recheck of Redis and MySQL (a replica added, fsync turned off); the simulated stores have none to lose"
	[i40-1-settle-dropped-on-readopt@redis]="ZooKeeper only: a re-adoption while settling follows the library's report of a lost connection (ag_store_lost()), which Redis never makes"
	[i40-1-settle-dropped-on-readopt@etcd]="ZooKeeper only: a re-adoption while settling follows the library's report of a lost connection (ag_store_lost()), which etcd never makes"
	[i40-1-settle-dropped-on-readopt@mysql]="ZooKeeper only: a re-adoption while settling follows the library's report of a lost connection (ag_store_lost()), which MySQL never makes"
	[i40-1-settle-dropped-on-readopt@zookeeper]="the simulated ZooKeeper reports lost connections and the agent re-adopts while settling, but the early serve overlaps the earlier holder in time only: its floor is above the mark its claim read, and the checker asks for timestamps; the contract's settle_readopt times it on a real ZooKeeper"
	[i31-12-unserved-claim-kept@redis]="a Redis key expires by its TTL: the unserved claim's pair is free a TTL later with or without the engine's offer"
	[i31-12-unserved-claim-kept@mysql]="a MySQL row's lease expires by its TTL: the unserved claim's pair is free a TTL later with or without the engine's offer"
	[i31-12-unserved-claim-kept@zookeeper]="zookeeper.c's claim takes its own session's key back itself (z_claim: our own key, claimed before and not served), so the engine's offer changes nothing the sim can see"
	[i31-8-sigterm-claim-lost@zookeeper]="the clean exit closes the session, and the server deletes its ephemeral key, given back or not"
	[i41-1-readopt-after-undone-claim@redis]="MySQL only: Redis's give-back deletes the key, so the next readopt finds none of this run's"
	[i41-1-readopt-after-undone-claim@etcd]="MySQL only: etcd's give-back deletes the key, so the next readopt finds none of this run's"
	[i41-1-readopt-after-undone-claim@zookeeper]="MySQL only: ZooKeeper's give-back deletes the node, so the next readopt finds none of this run's"
)

# Seeds that found a defect of the real engine: each must pass once it is fixed (tests/README.md, "sim").
REGRESSIONS=(
	"mysql 81 a claim whose reply was lost had committed and was given back (the row keeps its owner), then re-adopted with the floor of an earlier tenure of the pair: its window overlaps the holder in between"
)

# build OUT AGENT_C: the simulator against that agent.c.
build() {
	${CC:-cc} -O2 -g -std=gnu11 -Wall -Wextra "-DAGENT_C=\"$2\"" \
		"-DRECORD_C=\"$(dirname "$2")/record.c\"" '-DSNOWFLAKE_VERSION="sim"' \
		-Iuserspace/agent -Iuserspace/include -Iuapi tests/sim/sim.c \
		userspace/agent/conf.c userspace/agent/validate.c userspace/agent/backoff.c \
		userspace/lib/*.c -o "$1"
}

if ! build "$OUTD/sim" "$ROOT/userspace/agent/agent.c" 2>"$OUTD/build.log"; then
	cat "$OUTD/build.log"
	echo "sim: 0 passed, 1 failed"
	exit 1
fi
if [ -s "$OUTD/build.log" ]; then
	cat "$OUTD/build.log"	# -Wall -Wextra clean, or the lane fails
	echo "sim: 0 passed, 1 failed"
	exit 1
fi

case "${1:-}" in
search)
	exec "$OUTD/sim" --seeds "${SIM_SEEDS:-10000}" "${flavor[@]}" --quiet
	;;
[0-9]*)
	exec "$OUTD/sim" --seed "$1" "${flavor[@]}" --trace
	;;
"") ;;
*)
	echo "usage: tests/sim/run.sh [SEED | search]" >&2
	exit 2
	;;
esac

pass=0
fail=0
ok() {
	pass=$((pass + 1))
	echo "ok   $*"
}
bad() {
	fail=$((fail + 1))
	echo "FAIL $*"
}

# 1. the real engine, on each store
per=$(awk -v b="${SIM_BUDGET_S:-24}" -v n="${#FLAVORS[@]}" 'BEGIN { printf "%.2f", b / n }')
for f in "${FLAVORS[@]}"; do
	# Seeds 1 to SIM_SEEDS (3000) at most, within the budget: the lane
	# sees the same seeds on any machine fast enough (seeds 1 to 8000
	# pass on every store: tests/README.md, "sim").
	if out=$("$OUTD/sim" --flavor "$f" --seeds "${SIM_SEEDS:-3000}" --budget-s "$per" 2>&1); then
		ok "the real engine on $f: $(tail -n1 <<<"$out")"
	else
		bad "the real engine on $f: $(grep -E 'FAILED|replay' <<<"$out" | paste -sd ' ')"
		grep -B40 -E 'VIOLATION' <<<"$out" | tail -n 60
	fi
done

# 1b. the full-pool world, on each store
for f in "${FLAVORS[@]}"; do
	if out=$("$OUTD/sim" --full-pool --flavor "$f" --seeds "${SIM_FULL_SEEDS:-300}" 2>&1); then
		ok "the real engine on $f, --full-pool: $(tail -n1 <<<"$out")"
	else
		bad "the real engine on $f, --full-pool: $(grep -E 'FAILED|replay' <<<"$out" | paste -sd ' ')"
		grep -B40 -E 'VIOLATION' <<<"$out" | tail -n 60
	fi
done

# 1c. the record design's engine (record.c, issue 40: sim --record), on
# each store, in its own budget, and its full-pool world
per=$(awk -v b="${SIM_RECORD_BUDGET_S:-12}" -v n="${#FLAVORS[@]}" 'BEGIN { printf "%.2f", b / n }')
for f in "${FLAVORS[@]}"; do
	if out=$("$OUTD/sim" --record --flavor "$f" --seeds "${SIM_SEEDS:-3000}" --budget-s "$per" 2>&1); then
		ok "the record engine on $f: $(tail -n1 <<<"$out")"
	else
		bad "the record engine on $f: $(grep -E 'FAILED|replay' <<<"$out" | paste -sd ' ')"
		grep -B40 -E 'VIOLATION' <<<"$out" | tail -n 60
	fi
	if out=$("$OUTD/sim" --record --full-pool --flavor "$f" --seeds "${SIM_FULL_SEEDS:-300}" 2>&1); then
		ok "the record engine on $f, --full-pool: $(tail -n1 <<<"$out")"
	else
		bad "the record engine on $f, --full-pool: $(grep -E 'FAILED|replay' <<<"$out" | paste -sd ' ')"
	fi
done

# 2. replay, byte for byte
s=${SIM_REPLAY_SEED:-7}
for f in "${FLAVORS[@]}"; do
	"$OUTD/sim" --seed "$s" --flavor "$f" --trace >"$OUTD/replay1.out" 2>"$OUTD/replay1.err"
	"$OUTD/sim" --seed "$s" --flavor "$f" --trace >"$OUTD/replay2.out" 2>"$OUTD/replay2.err"
	# (the closing line's wall time, "..., 0.1 s", is the one thing a
	# replay may change: 0.0 s against 0.1 s failed the lane once)
	sed -i -E '$ s/, [0-9.]+ s$//' "$OUTD/replay1.out" "$OUTD/replay2.out"
	if [ -s "$OUTD/replay1.out" ] && cmp -s "$OUTD/replay1.out" "$OUTD/replay2.out" &&
		cmp -s "$OUTD/replay1.err" "$OUTD/replay2.err"; then
		ok "seed $s on $f replayed: its schedule and the engine's log, $(wc -l <"$OUTD/replay1.out") lines, identical"
	else
		bad "seed $s on $f replayed differently (build/sim/replay[12].{out,err})"
	fi
done

# first_found SIM FLAVOR FROM N [SIM-ARGS...]: the mutant's first failing seed in
# [FROM, FROM + N) at which the real engine does not fail: "SKIPPED SEED MESSAGE", or
# "SKIPPED" when none; SKIPPED counts the failing seeds where the real engine fails too
# (not the mutant's)
first_found() {
	local sim=$1 f=$2 from=$3 n=$4 out seed skipped=0
	shift 4
	while [ "$n" -gt 0 ]; do
		out=$("$sim" "$@" --flavor "$f" --from "$from" --seeds "$n" --quiet 2>&1)
		seed=$(sed -nE 's/^sim: seed ([0-9]+) FAILED: .*/\1/p' <<<"$out" | head -n1)
		[ -n "$seed" ] || break
		if "$OUTD/sim" "$@" --flavor "$f" --seed "$seed" >/dev/null 2>&1; then
			echo "$skipped $(sed -nE 's/^sim: seed ([0-9]+) FAILED: (.*)/\1 \2/p' <<<"$out" | head -n1)"
			return 0
		fi
		skipped=$((skipped + 1))
		n=$((n - (seed + 1 - from)))
		from=$((seed + 1))
	done
	echo "$skipped"
}

# 3. the mutants, on each store
cap=${SIM_MUTANT_SEEDS:-3000}
first=
rows=()
shopt -s nullglob
# (tests/sim/mutants/: the record engine's, which no real backend runs yet)
for patch in "$ROOT"/tests/contract/mutants/*.patch "$ROOT"/tests/sim/mutants/*.patch; do
	grep -qE '^diff --git a/userspace/agent/(agent|record).c ' "$patch" || continue
	name=$(basename "$patch" .patch)
	# shellcheck disable=SC2207 # the preamble's words, e.g. --full-pool
	sargs=($(sed -n 's/^Sim-args: //p' "$patch"))
	d=$OUTD/mutants/$name
	rm -rf "$d"
	mkdir -p "$d/src/userspace/agent"
	cp userspace/agent/agent.c userspace/agent/record.c "$d/src/userspace/agent/"
	if ! (cd "$d/src" && GIT_CEILING_DIRECTORIES=$d git apply --include=userspace/agent/agent.c \
		--include=userspace/agent/record.c "$patch") >"$d/apply.log" 2>&1; then
		bad "$name: does not apply to agent.c or record.c"
		continue
	fi
	if ! build "$d/sim" "$d/src/userspace/agent/agent.c" >"$d/build.log" 2>&1; then
		bad "$name: does not build"
		continue
	fi
	for f in "${FLAVORS[@]}"; do
		why=${UNEXPRESSIBLE[$name]:-${UNEXPRESSIBLE[$name@$f]:-}}
		# one that cannot be expressed: a short look, to show what the sim sees
		n=$cap
		[ -z "$why" ] || n=200
		read -r skipped seed msg <<<"$(first_found "$d/sim" "$f" 1 "$n" "${sargs[@]}")"
		found=$seed
		sk=
		[ "$skipped" -eq 0 ] || sk=" ($skipped seed(s) where the real engine fails too skipped)"
		if [ -n "$why" ]; then
			echo "--   $name on $f: not counted (${found:+seed $seed: $msg; }$why)"
			rows+=("$name	$f	-	$why")
		elif [ -n "$found" ]; then
			ok "$name on $f: found at seed $seed of $cap${sargs[*]:+ (${sargs[*]})}$sk: $msg"
			rows+=("$name	$f	$seed${sargs[*]:+ (${sargs[*]})}	$msg")
			# (replayed below in the seeds' own world)
			[ -n "$first" ] || [ "${#sargs[@]}" -gt 0 ] || first="$d $f $seed"
		else
			bad "$name on $f: survived $cap seeds$sk"
			rows+=("$name	$f	SURVIVED	$sk")
		fi
	done
done
echo "seeds-to-find (mutant, store, seed, violation):"
printf '  %s\n' "${rows[@]}"

# 4. a failing seed replays exactly
if [ -n "$first" ]; then
	read -r d f s <<<"$first"
	"$d/sim" --seed "$s" --flavor "$f" >"$d/replay1" 2>&1
	"$d/sim" --seed "$s" --flavor "$f" >"$d/replay2" 2>&1
	sed -i -E '$ s/, [0-9.]+ s$//' "$d/replay1" "$d/replay2"	# (the wall time: see 2.)
	if grep -q "seed $s FAILED" "$d/replay1" && cmp -s "$d/replay1" "$d/replay2" &&
		grep -q "replay: make sim SEED=$s FLAVOR=$f" "$d/replay1"; then
		ok "$(basename "$d")'s failing seed $s on $f replays: the same violation and schedule ($(wc -l <"$d/replay1") lines)"
	else
		bad "$(basename "$d")'s failing seed $s on $f does not replay exactly"
	fi
else
	bad "no mutant found: no failing seed to replay"
fi

# 5. the engine's own defects the simulator found: their seeds pass once fixed
for r in "${REGRESSIONS[@]}"; do
	read -r f s what <<<"$r"
	if out=$("$OUTD/sim" --flavor "$f" --seed "$s" 2>&1); then
		ok "seed $s on $f (the engine's defect: $what): no violation"
	else
		bad "seed $s on $f, the engine's defect ($what): $(grep -E 'FAILED' <<<"$out")"
	fi
done

echo "sim: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
