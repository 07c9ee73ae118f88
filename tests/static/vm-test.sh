#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Tests of the guests' console checks (tests/lib/vm.sh), each fed the
# failure it exists for (issue 42): vm_problems (a kernel report in the
# log, the end step's kernel log missing, its canary missing or not
# found, the canary's report not taken for the guest's), vm_clock_check
# (no TSC line), vm_textpoke (a CPU without a recorder, an event that
# failed to open).  Run by the static stage.  Prints "vm-test: N passed,
# M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
VM_NOTES=$tmp/notes
: >"$VM_NOTES"
khz=
if vm_tsc_khz 2>/dev/null; then khz=$VM_TSC_KHZ; fi
mhz=$((${khz:-2000000} / 1000))

# console PARTS...: a console as the guests print it, \r\n line ends:
# boot, tsc, main, canary (each present when named), with "problem" in
# main or "quiet" canary as named.
console() {
	{
		echo "[    0.000000] Linux version 6.12.0"
		case " $* " in *" tsc "*) echo "[    0.000000] tsc: Detected $mhz.000 MHz processor" ;; esac
		echo "SNOWFLAKE-VM-DONE-NOT-YET test output"
		case " $* " in *" main "*)
			echo "---- kernel log, warning and above (dmesg) ----"
			echo "KMSG [    1.0] some warning that is no problem"
			case " $* " in *" problem "*) echo "KMSG [    2.0] WARNING: CPU: 0 PID: 1 at driver/snowflake_main.c:10 sf_x+0x1/0x2 [snowflake]" ;; esac
			echo "---- end of kernel log ----"
			;;
		esac
		case " $* " in *" canary "*)
			echo "---- canary kernel log ----"
			echo "KCANARY [    3.0] sysrq: Show backtrace of all active CPUs"
			case " $* " in *" quiet "*) ;; *) echo "KCANARY [    3.1] Call Trace:" ;; esac
			echo "---- end of canary kernel log ----"
			;;
		esac
		echo "SNOWFLAKE-VM-DONE"
	} | sed 's/$/\r/' >"$tmp/console.log"
}
# expect pass|fail WHAT PARTS...: vm_problems on that console.
expect() {
	local want=$1 what=$2 got=fail
	shift 2
	console "$@"
	if vm_problems "$tmp/console.log" >"$tmp/out" 2>&1; then got=pass; fi
	check "vm_problems $want: $what${VM_PROBLEM_WHERE:+ ($VM_PROBLEM_WHERE)}" test "$got" = "$want"
}
expect pass "a clean guest with its kernel log and canary" tsc main canary
expect fail "a WARN in the kernel log" tsc main problem canary
expect fail "no kernel log (the end step did not run)" tsc canary
expect fail "no canary section" tsc main
expect fail "a canary whose report did not reach the check" tsc main canary quiet
if [ -n "$khz" ]; then
	expect fail "no TSC line: the guest's clock cannot be checked" main canary
else
	check "the host's TSC rate is measured (tests/lib/tsc-khz.c), for vm_clock_check's case" false
fi

# textpoke LINE CPUS-LINE: vm_textpoke on a console with that end line.
textpoke() {
	printf '%s\r\n' "$2" "SNOWFLAKE-TEXTPOKE-END $1" >"$tmp/tp.log"
	vm_textpoke "$tmp/tp.log" >"$tmp/out" 2>&1
}
rc=0; textpoke "pokes=0 core=0 module=0 lost=0 cpus=2 failed=0 online=2" "SNOWFLAKE-CPUS online=2 followed=2 (0-1)" || rc=$?
check "vm_textpoke passes: both CPUs followed, no poke" test "$rc" = 0
rc=0; textpoke "pokes=0 core=0 module=0 lost=0 cpus=1 failed=0 online=2" "SNOWFLAKE-CPUS online=2 followed=1 (0-1)" || rc=$?
check "vm_textpoke fails: a CPU without a recorder ($(tail -n1 "$tmp/out" | sed 's/^ *//'))" test "$rc" = 1
rc=0; textpoke "pokes=0 core=0 module=0 lost=0 cpus=2 failed=1 online=2" "SNOWFLAKE-CPUS online=2 followed=2 (0-1)" || rc=$?
check "vm_textpoke fails: an event that failed to open" test "$rc" = 1
rc=0; textpoke "pokes=0 core=0 module=0 lost=0 cpus=2" "SNOWFLAKE-CPUS online=2 (0-1)" || rc=$?
check "vm_textpoke fails: a recorder that does not say what it followed" test "$rc" = 1
rc=0; textpoke "pokes=1 core=1 module=0 lost=0 cpus=2 failed=0 online=2" "SNOWFLAKE-CPUS online=2 followed=2 (0-1)" || rc=$?
check "vm_textpoke fails: a poke of kernel text" test "$rc" = 1
echo "vm-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
