# shellcheck shell=bash
# How tests/lib/check.sh counts a stage: sourced by it (and by
# tests/static/stages-test.sh, which checks it), never run.  Needs $BUILD
# and the totals check.sh keeps: total_pass, total_fail, table,
# failed_stages.

# The stages that print no count line (their exit status is their one
# result); every other stage must end with "<stage>: N passed, M failed",
# N + M > 0, or it counts as failed (a lane that stopped early, or ran
# nothing, passes nothing).  tests/static/stages-test.sh checks the list.
UNCOUNTED_STAGES="deps ksrc bench-smoke"
uncounted() { [[ " $UNCOUNTED_STAGES " == *" $1 "* ]]; }

# count_stage NAME RC SECS: NAME's counts from its log, into the totals.
count_stage() {
	local name=$1 rc=$2 secs=$3 log=$BUILD/check-stage-$1.log line p f note
	# A guest lane's note of a kernel problem (tests/lib/vm.sh,
	# vm_problems and vm_notes): where it was, in snowflake or outside it,
	# on the stage's row too (from its log: a lane that prints no count,
	# bench-smoke, says it in its last message).
	note=$(tr -d '\r' <"$log" | grep -oE 'kernel (problem (in|outside) snowflake: [A-Za-z0-9_.]+|text patched while two CPUs ran)' |
		sort -u | paste -sd ';' | sed 's/;/; /g') || true
	line=$(tr -d '\r' <"$log" | grep -E "^$name: [0-9]+ passed, [0-9]+ failed" | tail -n1) || true
	if [ -n "$line" ]; then
		p=$(sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$line")
		f=$(sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$line")
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			echo "$name: exited $rc although it counted no failure"
			f=1
		fi
		if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
			echo "$name: counted nothing (0 passed, 0 failed): it checked nothing"
			f=1
		fi
	elif ! uncounted "$name"; then
		# A counting lane that ended without its count line (exit 0 or not)
		# did not finish what it checks.
		p=0 f=1
		echo "$name: $p passed, $f failed (no \"$name: N passed, M failed\" line; exit $rc${note:+; $note})"
	elif [ "$rc" -eq 0 ]; then
		p=1 f=0
		echo "$name: $p passed, $f failed"
	else
		p=0 f=1
		echo "$name: $p passed, $f failed (exit $rc${note:+; $note})"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	# Wall seconds, then the CPU seconds of its processes ($STAGE_CPU, set
	# by check.sh's run_stage and join_stage; "?" where unknown).
	# and how busy the machine's CPUs were meanwhile ($STAGE_BUSY, percent),
	# and when it ran, in seconds from the start of the run ($STAGE_SPAN,
	# "FROM-TO": which stages overlapped, which one ended the run).
	table+=("$(printf '  %-12s %4d passed, %4d failed  %5ss  %5s cpu-s %4s%% busy  at %9s%s' "$name" "$p" "$f" "$secs" "${STAGE_CPU:-?}" "${STAGE_BUSY:-?}" "${STAGE_SPAN:-?}" "${note:+  ($note)}")")
	STAGE_CPU=''
	STAGE_BUSY=''
	STAGE_SPAN=''
	[ "$f" -eq 0 ] || failed_stages+=("$name")
	return 0
}

