# What the per-store adapter tests of tests/contract/ (adapter-*.sh) share:
# sourced, never run.  The script sets NAME first (its result line,
# "NAME: N passed, M failed"); then need_cmds, build_agent, make_tmp.
# Agents' pids go in agent_pids (index I: agent I, $tmp/agent.I.log),
# servers' in servers, and cleanup_pids (if the script defines it) prints
# more; the EXIT trap stops them all and removes $tmp.
# shellcheck shell=bash
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check DESCRIPTION CMD...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
	echo "$NAME: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

# need_cmds HINT CMD...: each CMD on PATH, or a failure naming it (and
# HINT, e.g. ": mariadb-server") and the end.
need_cmds() {
	local hint=$1 cmd
	shift
	for cmd in "$@"; do
		command -v "$cmd" >/dev/null || { bad "$cmd is missing (scripts/deps.sh$hint)"; finish; }
	done
}

# build_agent: $AGENT, the agent of this tree.
build_agent() {
	make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" agent || { bad "building snowflake-agent"; finish; }
	# shellcheck disable=SC2034 # used by the sourcing script
	AGENT=$BUILD/userspace/snowflake-agent
}

agent_pids=()
servers=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local p
	# shellcheck disable=SC2046 # cleanup_pids prints a list
	for p in "${agent_pids[@]}" "${servers[@]}" $(declare -F cleanup_pids >/dev/null && cleanup_pids); do
		[ -n "$p" ] || continue
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
# make_tmp NAME: $tmp, a new directory under $BUILD, removed at the end.
make_tmp() {
	mkdir -p "$BUILD"
	tmp=$(mktemp -d "$BUILD/$1.XXXXXX")
	trap cleanup EXIT
}

# wait_log FILE PATTERN SECONDS: until FILE has PATTERN (1: not within SECONDS)
wait_log() {
	local deadline=$(($(ms) + $3 * 1000))
	until grep -q -- "$2" "$1" 2>/dev/null; do
		[ "$(ms)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}
# stop PID: SIGTERM, wait (at most 15 s, then SIGKILL: rc=KILLED); its exit code in $rc.
stop() {
	local deadline=$(($(ms) + 15000))
	kill -TERM "$1" 2>/dev/null
	while kill -0 "$1" 2>/dev/null && [ "$(ms)" -lt "$deadline" ]; do sleep 0.05; done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1" 2>/dev/null
		rc=KILLED
		return
	fi
	wait "$1"
	rc=$?
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ms() { date +%s%3N; }
boot_ns() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_BOOTTIME))'; }

size_of() { stat -c %s "$tmp/agent.$1.log" 2>/dev/null || echo 0; }
# claimed_pair I [OFFSET]: the last "event=claimed" pair of agent I after
# byte OFFSET of its log: "DC:W".
claimed_pair() {
	tail -c +"$((${2:-0} + 1))" "$tmp/agent.$1.log" |
		sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1:\2/p' | tail -n1
}
owner_of() { sed -n 's/.*event=start owner=\([^ ]*\).*/\1/p' "$tmp/agent.$1.log" | tail -n1; }
# wait_one I PATTERN SECONDS [OFFSET]: agent I's log after OFFSET has PATTERN.
wait_one() {
	local deadline=$(($(ms) + $3 * 1000))
	until grep -q -- "$2" <(tail -c +"$((${4:-0} + 1))" "$tmp/agent.$1.log"); do
		[ "$(ms)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}
# hist_of OWNER FIELD first|last: a field of the owner's first or last
# interval in $HIST.
hist_of() {
	awk -v o="$1" -v f="$2" -v w="$3" '$1 == "interval" && index($0, " owner=" o " ") {
		for (i = 2; i <= NF; i++) if (index($i, f "=") == 1) { v = substr($i, length(f) + 2) }
		if (w == "first" && !seen) { print v; seen = 1 } last = v
	} END { if (w == "last") print last }' "$HIST"
}
# run_bounded SECONDS LOG CMD...: an agent that should exit by itself; its
# exit status (KILLED when it had to be killed).
run_bounded() {
	local secs=$1 log=$2 pid t
	shift 2
	"$@" 2>"$log" &
	pid=$!
	agent_pids[99]=$pid
	t=$(($(ms) + secs * 1000))
	while kill -0 "$pid" 2>/dev/null && [ "$(ms)" -lt "$t" ]; do sleep 0.05; done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		echo KILLED
	else
		wait "$pid"
		echo $?
	fi
	agent_pids[99]=
}
