#!/bin/bash
# `make check`: every test of the project, in order
#   deps -> ksrc -> style -> sparse -> kernels -> dkms -> unit -> fuzz -> userspace
#   -> packaging -> deb -> quickstart -> dkms-sid -> static -> docs -> clients -> contract
#   -> agent-guest -> handoff
#   -> lease -> bench-smoke -> vmtest -> vmclone -> restart
#   -> debug-kernel
# (kernels: the module built W=1 inside a Debian 11 root for 5.10 and a sid
# root for 7.2 and 7.2-rt, each with its suite's gcc, tests/kernels/run.sh;
# vmtest boots those too, scripts/kroot.sh makes and caches the roots)
# (fuzz: libFuzzer on the pure core, committed inputs replayed, then each
# target fuzzed for FUZZ_SECONDS=60, tests/fuzz/run.sh)
# (docs: tests/docs/run.sh, when it exists; userspace: libsnowflake's
# unit tests and an install into a temporary DESTDIR, tests/userspace/run.sh;
# debug-kernel: the guest suite again on a tinyconfig 6.12 with lockdep,
# KASAN, UBSAN and kmemleak, tests/debug-kernel/run.sh: its first run
# builds that kernel, ~7 min on 2 cores, cached in build/debug-kernel/;
# dkms: dkms add/build for every kernel in a private tree, tests/dkms/run.sh;
# packaging: the udev rule, units, modules-load.d/modprobe.d/sysusers.d files
# installed into a DESTDIR and checked, tests/packaging/run.sh; deb: the
# Debian packages of debian/ built with dpkg-buildpackage, lintian, installed
# with apt into a fresh Debian 12 root (mmdebstrap, cached in build/deb/)
# where DKMS builds the module, that module booted in guests, containers
# run against it with podman (tests/deb/containers.sh), the packages
# purged, tests/deb/run.sh; quickstart: README.md's Quick start and
# docs/reference.md's install-from-source blocks, read from those files and
# run command by command as a newcomer types them, each block in a fresh
# Debian 12 root (mmdebstrap, cached in build/quickstart/), the commands
# that need the running system in that root booted in a guest,
# tests/quickstart/run.sh; clients: the Python, PHP, Node.js, Java and Go
# clients of clients/ installed as packages with pip, Composer, npm, go and
# mvn -o, tested with pytest, PHPUnit, node --test, go test and JUnit 5
# against recorded ID and UUID streams, tests/clients/run.sh; contract:
# snowflake-agent's contract, one scenario list against etcd (3 members),
# Redis, ZooKeeper (3 servers) and MariaDB through a fault proxy, and each
# store's adapter tests, tests/contract/run.sh;
# agent-guest: one end-to-end scenario in a 6.12 guest (the module with
# strict=1, the store's server, the agent), run once per store (Redis,
# ZooKeeper, MariaDB), tests/agent-guest/run.sh; handoff: one pair handed from
# host A to host B whose wall clock is behind (5 minutes; then a few seconds,
# reading in every millisecond), the module, the agent and Redis in a guest,
# every ID of B above every ID of A, on 6.12, 6.1, 6.12-rt and 7.2, ~35 s each,
# tests/handoff/run.sh; lease: the fault-injection proof of
# snowflake-agent against a 3-member etcd cluster, one redis-server, a
# 3-server ZooKeeper ensemble and one mariadbd, ~3.5 min per store,
# tests/lease/run.sh; restart: the crash +
# clock-back-a-day proof of snowflake-floord in guests with a persistent
# disk, tests/restart/run.sh)
# Each stage prints "<stage>: N passed, M failed"; this script ends with the
# one aggregated line "N passed, M failed" and exits nonzero when anything
# failed.  A stage that cannot run counts as failed.  Counting: each style
# file, each build, each TAP test case is one.
#
# STAGES="style sparse" runs only those stages (deps and ksrc always run).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$ROOT"
mkdir -p "$BUILD"

total_pass=0
total_fail=0
table=()
failed_stages=()
t0=$(now)

# run_stage NAME CMD...: run CMD, streaming its output; take its counts from
# its "NAME: N passed, M failed" line, or count the stage itself as one.
run_stage() {
	local name=$1 log start rc
	shift
	log=$BUILD/check-stage-$name.log
	start=$(now)
	echo
	echo "======== $name ========"
	rc=0
	"$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
	count_stage "$name" "$rc" "$(($(now) - start))"
}

# bg_stage NAME CMD...: start a stage in the background, its output only in
# its log; join_stage NAME waits for it, then prints that log and counts it
# as run_stage does (its time: from its start to its end).  For a lane that
# mostly waits (on the network, on timers) beside the stages that use the
# CPUs; what it checks does not depend on how fast it runs.
declare -A bg_pid=() bg_start=()
bg_stage() {
	local name=$1
	shift
	bg_start[$name]=$(now)
	echo
	echo "======== $name: started in the background (log: ${BUILD#"$ROOT"/}/check-stage-$name.log) ========"
	(
		rc=0
		"$@" >"$BUILD/check-stage-$name.log" 2>&1 </dev/null || rc=$?
		now >"$BUILD/check-stage-$name.end"
		exit "$rc"
	) &
	bg_pid[$name]=$!
}
join_stage() {
	local name=$1 rc=0 end
	[ -n "${bg_pid[$name]:-}" ] || return 0
	wait "${bg_pid[$name]}" || rc=$?
	end=$(cat "$BUILD/check-stage-$name.end" 2>/dev/null || now)
	echo
	echo "======== $name (ran in the background) ========"
	cat "$BUILD/check-stage-$name.log"
	count_stage "$name" "$rc" "$((end - ${bg_start[$name]}))"
	unset "bg_pid[$name]"
}

# count_stage NAME RC SECS: NAME's counts from its log, into the totals.
count_stage() {
	local name=$1 rc=$2 secs=$3 log=$BUILD/check-stage-$1.log line p f
	line=$(tr -d '\r' <"$log" | grep -E "^$name: [0-9]+ passed, [0-9]+ failed" | tail -n1) || true
	if [ -n "$line" ]; then
		p=$(sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$line")
		f=$(sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$line")
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "$name: exited $rc although it counted no failure"
			f=1
		fi
	elif [ "$rc" -eq 0 ]; then
		p=1 f=0
		echo "$name: $p passed, $f failed"
	else
		p=0 f=1
		echo "$name: $p passed, $f failed (exit $rc)"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	table+=("$(printf '  %-12s %4d passed, %4d failed  %5ss' "$name" "$p" "$f" "$secs")")
	[ "$f" -eq 0 ] || failed_stages+=("$name")
	return 0
}

# failures: what failed, from the logs of the stages that counted a
# failure (their "not ok" and "FAIL" lines and the harness' own messages,
# at most 10 a stage; else the stage's last lines), printed just above the
# closing line so that a CI log cut to its end still says what failed.
failures() {
	local name log lines
	for name in "${failed_stages[@]}"; do
		log=$BUILD/check-stage-$name.log
		lines=$(tr -d '\r' <"$log" | grep -E '^(not ok [0-9]|FAIL )|^  [^ ].*( failed| missing|never | differ)' |
			grep -vE '# *(SKIP|TODO)| 0 failed' | cut -c1-160 | head -n 10) || true
		[ -n "$lines" ] || lines=$(tr -d '\r' <"$log" | tail -n 4 | cut -c1-160)
		printf '  %s:\n' "$name"
		printf '%s\n' "$lines" | sed 's/^/    /'
	done
}

want() {
	[ -z "${STAGES:-}" ] && return 0
	[[ " $STAGES " == *" $1 "* ]]
}

run_stage deps scripts/deps.sh
run_stage ksrc scripts/ksrc.sh
# The debug kernel's build (about 14 CPU-minutes on a fresh clone, cached in
# build/debug-kernel/) starts now, in the background at the lowest
# priority: it takes the CPU the stages leave idle (the contract's and the
# lease's agents waiting between renewals, the deb stage's downloads) and
# yields it to everything else.  The debug-kernel stage waits for it; a
# build that failed is made again there, where its failure is counted.
prebuild_pid=
if want debug-kernel; then
	nice -n 19 scripts/debug-kernel.sh >"$BUILD/debug-kernel-build.log" 2>&1 &
	prebuild_pid=$!
fi
# The deb stage's Debian 12 root (mmdebstrap, cached in build/deb/): made
# now, in the background, while the first stages use the CPUs; mmdebstrap
# mostly waits on the mirror.  The deb stage waits for it (a lock) and
# counts its result; one that failed here is made again there.
if want deb; then
	nice -n 10 tests/deb/root.sh >"$BUILD/deb-root-prefetch.log" 2>&1 &
fi
export SNOWFLAKE_SKIP_DEPS=1
# The quickstart lane mostly waits on the Debian mirror (apt in fresh
# roots) and on its guests: it runs in the background from here and is
# joined before the contract, whose liveness figures want quiet CPUs.
want quickstart && bg_stage quickstart tests/quickstart/run.sh
want style && run_stage style tests/style/run.sh
want sparse && run_stage sparse tests/sparse/run.sh
want kernels && run_stage kernels tests/kernels/run.sh
want dkms && run_stage dkms tests/dkms/run.sh
want unit && run_stage unit tests/unit/run.sh
want fuzz && run_stage fuzz tests/fuzz/run.sh
want userspace && run_stage userspace tests/userspace/run.sh
want packaging && run_stage packaging tests/packaging/run.sh
want deb && run_stage deb tests/deb/run.sh
# snowflake-dkms installed with apt into a fresh Debian sid root: DKMS
# builds the module for 7.2 (tests/dkms-sid/run.sh, the deb stage's .deb).
want dkms-sid && run_stage dkms-sid tests/dkms-sid/run.sh
want static && run_stage static tests/static/run.sh
if want docs && [ -f tests/docs/run.sh ]; then
	run_stage docs bash tests/docs/run.sh
fi
want clients && run_stage clients tests/clients/run.sh
join_stage quickstart
want contract && run_stage contract tests/contract/run.sh
want agent-guest && run_stage agent-guest tests/agent-guest/run.sh
want handoff && run_stage handoff tests/handoff/run.sh
want lease && run_stage lease tests/lease/run.sh
# Every part of `make bench` once, a few iterations, nothing timed
# (scripts/bench.sh, BENCHMARKS.md): the benchmarks keep working.
want bench-smoke && run_stage bench-smoke env BENCH_SMOKE=1 SNOWFLAKE_SKIP_DEPS=1 scripts/bench.sh
want vmtest && run_stage vmtest tests/vmtest/run.sh
want vmclone && run_stage vmclone tests/vmclone/run.sh
want restart && run_stage restart tests/restart/run.sh
if want debug-kernel; then
	[ -z "$prebuild_pid" ] || wait "$prebuild_pid" || true
	run_stage debug-kernel tests/debug-kernel/run.sh
fi

# lane_figures: the figures of each reliability lane, from the stage logs:
# which kernel, what was checked, how much.  (What passed or failed is in
# the counts above; this only names the work done.)
lane_figures() {
	local f
	for f in "$BUILD"/check-stage-{kernels,dkms-sid,fuzz,vmtest,vmclone,debug-kernel,contract,agent-guest,handoff,lease,restart}.log; do
		[ -f "$f" ] || continue
		tr -d '\r' <"$f" | awk -v stage="$(basename "$f" .log | sed 's/^check-stage-//')" '
			/^==== vm [^ ]+: booting/ { k = $3; sub(/:$/, "", k) }
			/^==== restart [^ ]+ ====/ { k = $3 }
			function say(lane, what) { printf "  %-14s %-28s %s\n", lane, k ? k : "host", what }
			/^figure: kernel [^ ]+: / { k = $3; sub(/:$/, "", k); w = $0; sub(/^figure: kernel [^ ]+: /, "", w); say("kernel build", w) }
			/^vm [^ ]+: [0-9]+ passed, [0-9]+ failed/ && !seen[$0]++ { k = $2; sub(/:$/, "", k); say("guest suite", substr($0, index($0, ": ") + 2)) }
			/^fuzz [a-z_]+: [0-9]+ execs/ { say("libfuzzer", $0) }
			/^# fuzz: [0-9]+ calls \(/ { sub(/^# /, ""); say("guest fuzz", $0) }
			/torture_8x1M_clock_steps:[0-9]+ IDs in/ { sub(/.*torture_8x1M_clock_steps:/, ""); sub(/: unique.*/, ""); say("torture", $0) }
			/torture_8x1M_clock_steps:[0-9]+ wall clock steps/ { sub(/.*torture_8x1M_clock_steps:/, ""); say("torture", $0) }
			/uuid_test\.c:[0-9]+:eight_processes_4M:[0-9]+ reads, / { sub(/.*eight_processes_4M:/, ""); say("uuidv7", $0) }
			/uuid_test\.c:[0-9]+:wall_clock_steps:[0-9]+ (wall clock steps|reads, )/ { sub(/.*wall_clock_steps:/, ""); say("uuidv7 steps", $0) }
			/^# load\/unload: / { sub(/^# /, ""); say("load/unload", $0) }
			/^# failslab: [0-9]+ allocation failure points/ { sub(/^# /, ""); say("failslab", $0) }
			/^figures: [0-9]+ agents/ { say("agent", substr($0, 10)) }
			/^figures: mysql: / { say("agent mysql", substr($0, 17)) }
			/^figures: lease / { say("lease", substr($0, 16)) }
			/^figure: [a-z]+ guest: .*(fence_latency|deadline_to_refused)_ms=/ { kk = k; k = "guest"; w = $0; sub(/^figure: [a-z]+ guest: /, "", w); say("agent " $2, w); k = kk }
			/^contract: / && !/^contract: [0-9]+ passed, / { say("contract", substr($0, 11)) }
			/^figures: contract / { say("contract", substr($0, 19)) }
			/^figure: handoff [^ ]+ / { k = $3; w = $0; sub(/^figure: handoff [^ ]+ /, "", w); say("handoff", w) }
			/^# new - old / { sub(/^# new - old +/, "new min ID - old max ID: "); say("restart", $0) }
			/^==== vmclone [^ ]+ [a-z]+ ====/ { k = $3 }
			/^# parent: [0-9]+ IDs; clone/ { sub(/^# /, ""); say("vm clone", $0) }
			/^# poll: [0-9]+ reads before the snapshot/ { sub(/^# /, ""); say("vm clone agent", $0) }
		'
	done
}

# A background stage not joined yet is joined here.
for name in "${!bg_pid[@]}"; do
	join_stage "$name"
done

echo
echo "======== lanes ========"
lane_figures || true
echo
echo "======== summary ($(($(now) - t0))s) ========"
printf '%s\n' "${table[@]}"
if [ "${#failed_stages[@]}" -gt 0 ]; then
	echo "failed:"
	failures || true
fi
echo "$total_pass passed, $total_fail failed"
if [ "$total_fail" -ne 0 ]; then
	exit 1
fi
