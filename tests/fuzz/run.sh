#!/bin/bash
# libFuzzer on the pure parts of the driver and on the agent's store reply
# parsers (fuzz/, see fuzz/README.md):
# build every fuzz/<target>_fuzz.c with clang -fsanitize=fuzzer,address,
# undefined, then for each target
#   1. replay fuzz/corpus/<target>/ and fuzz/crashes/<target>/ once
#      (regression: every input ever found must keep passing);
#   2. fuzz it for FUZZ_SECONDS (default 60), starting from a copy of the
#      committed corpus; a crash input lands in build/fuzz/crashes-<target>/.
# Prints "fuzz <target>: N execs, K crashes" per target and ends with
# "fuzz: N passed, M failed" (each replay and each fuzzing run counts one).
#
# Environment: FUZZ_SECONDS=N (0: replay only), FUZZ_TARGETS="core ...",
# FUZZ_JOBS=N (fuzzing runs at once, default one per CPU up to 2),
# FUZZ_MAX_LEN=N (largest input, default 4096), FUZZ_PARSER_SECONDS=N
# (default 15, at most FUZZ_SECONDS): the agent's reply-parser targets
# (small, pure parsers; a short run covers them and keeps the stage short).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_MAX_LEN=${FUZZ_MAX_LEN:-4096}
FUZZ_PARSER_SECONDS=${FUZZ_PARSER_SECONDS:-15}
PARSER_TARGETS=" etcd_reply zookeeper_data mysql_row redis_reply record "
dir=$ROOT/fuzz
out=$BUILD/fuzz
pass=0
fail=0

finish() {
	echo "fuzz: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

mkdir -p "$out"
if ! command -v clang >/dev/null; then
	echo "fuzz: clang is missing (run scripts/deps.sh)" >&2
	fail=1
	finish
fi
if ! make -C "$dir" OUT="$out" ${V:+V="$V"}; then
	echo "fuzz: building the fuzz targets failed" >&2
	fail=1
	finish
fi

# fuzz_one T SECS: fuzz target T for SECS from a copy of its committed
# corpus; its result line goes to $out/result-$T, exit 0 when no crash.
fuzz_one() {
	local t=$1 secs=$2 bin=$out/$1 work=$out/corpus-$1 crashes=$out/crashes-$1
	local log=$out/fuzz-$1.log rc=0 execs ncrash
	rm -rf "$work"
	mkdir -p "$work" "$crashes"
	[ -d "$dir/corpus/$t" ] && cp "$dir/corpus/$t"/* "$work"/ 2>/dev/null
	"$bin" -max_total_time="$secs" -max_len="$FUZZ_MAX_LEN" \
		-print_final_stats=1 -artifact_prefix="$crashes/" "$work" \
		>"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	if [ -z "$execs" ]; then
		execs=$(grep -oE '^#[0-9]+' "$log" | tail -n1 | tr -d '#') || true
	fi
	ncrash=$(grep -c 'Test unit written to' "$log" || true)
	if [ "$rc" -eq 0 ] && [ "$ncrash" -eq 0 ]; then
		echo "fuzz $t: ${execs:-0} execs, 0 crashes (${secs}s, corpus $(find "$work" -type f | wc -l))" >"$out/result-$t"
		return 0
	fi
	{
		grep -E "check '|ERROR: |SUMMARY|Test unit written" "$log" | tail -n 20 || true
		echo "fuzz $t: ${execs:-0} execs, $((ncrash > 0 ? ncrash : 1)) crashes (exit $rc; log in ${log#"$ROOT"/})"
		echo "  fix the driver, then keep the input: cp $crashes/crash-* fuzz/crashes/$t/"
	} >"$out/result-$t"
	return 1
}

# The fuzzing runs go FUZZ_JOBS at a time (default: one per CPU, at most
# 2): each is one single-threaded libFuzzer process for a fixed time, so
# two at once on two CPUs fuzz as much in half the wall time.
FUZZ_JOBS=${FUZZ_JOBS:-$(n=$(nproc); echo $((n < 2 ? 1 : 2)))}
fuzzing=()
targets=${FUZZ_TARGETS:-$(make -s -C "$dir" list)}
for t in $targets; do
	bin=$out/$t
	if [ ! -x "$bin" ]; then
		echo "fuzz $t: no such target"
		fail=$((fail + 1))
		continue
	fi

	# 1. Regression: every committed input, once each.
	inputs=()
	for d in "$dir/corpus/$t" "$dir/crashes/$t"; do
		[ -d "$d" ] || continue
		while IFS= read -r f; do
			inputs+=("$f")
		done < <(find "$d" -maxdepth 1 -type f ! -name '.*' | sort)
	done
	log=$out/replay-$t.log
	if [ "${#inputs[@]}" -eq 0 ]; then
		echo "fuzz replay $t: no committed inputs"
		fail=$((fail + 1))
	elif "$bin" "${inputs[@]}" >"$log" 2>&1; then
		echo "fuzz replay $t: ${#inputs[@]} inputs, 0 failed"
		pass=$((pass + 1))
	else
		grep -E "check '|ERROR|Running:" "$log" | tail -n 20
		echo "fuzz replay $t: an input failed (log in ${log#"$ROOT"/})"
		fail=$((fail + 1))
	fi

	# 2. Fuzz for a while, from the committed corpus (in the background,
	# FUZZ_JOBS at a time; counted below, in the targets' order).
	secs=$FUZZ_SECONDS
	if [[ $PARSER_TARGETS == *" $t "* ]] && [ "$FUZZ_PARSER_SECONDS" -lt "$secs" ]; then
		secs=$FUZZ_PARSER_SECONDS
	fi
	[ "$secs" -gt 0 ] || continue
	while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do
		wait -n || true
	done
	rm -f "$out/result-$t"
	fuzz_one "$t" "$secs" &
	fuzzing+=("$t")
done
wait || true
for t in "${fuzzing[@]}"; do
	if [ -s "$out/result-$t" ]; then
		cat "$out/result-$t"
	else
		echo "fuzz $t: the run gave no result"
	fi
	# fuzz_one's line says "0 crashes" only when the run exited 0 and wrote no crash.
	if tail -n1 "$out/result-$t" 2>/dev/null | grep -qE "^fuzz $t: [0-9]+ execs, 0 crashes \("; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
finish
