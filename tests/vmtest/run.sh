#!/bin/bash
# Build snowflake.ko and the selftests, boot each guest kernel in QEMU with
# them, run every test binary and count the results.
#
# Environment:
#   KERNELS="KVER ..."   kernels to test (default: every supported one)
#   TESTS="x_test ..."   test binaries to run (default: every *_test)
#   VMTEST_JOBS=1        guests at once (3 on two CPUs: check.sh sets it)
#   VMTEST_MUTANTS=auto  the driver mutants of tests/vmtest/mutants/ (see
#                        test_mutant): 0 never, 1 always, auto unless
#                        KERNELS, TESTS or MODULE_KO is set
#   VM_TIMEOUT=900       seconds a guest may run
#   TEST_TIMEOUT=600     seconds one test binary may run in the guest
#   SNOWFLAKE_KVM=1      use KVM instead of TCG (off: KVM hangs on some hosts)
#   SNOWFLAKE_SKIP_DEPS=1  do not run deps.sh/ksrc.sh first (check.sh did)
#   MODULE_SRC=DIR       module sources (Kbuild, driver/, uapi/); default: repo
#   MODULE_KO=FILE       boot this snowflake.ko (or .ko.xz) instead of building one
#                        (one kernel in KERNELS: tests/deb/run.sh boots the
#                        module DKMS built from the Debian package)
#   SELFTESTS_SRC=DIR    selftests directory; default: selftests/
#   SNOWFLAKE_FUZZ_SEED, SNOWFLAKE_FUZZ_CALLS   passed to fuzz_test in the guest
#                        (unset: 1,000,000 calls on the first kernel,
#                        VMTEST_FUZZ_CALLS_OTHERS=250000 on the others)
#   SNOWFLAKE_TORTURE_IDS  concurrency_test's torture: IDs per process (unset:
#                        1,000,000 on the first kernel and the -rt one,
#                        VMTEST_TORTURE_IDS_OTHERS=250000 on the others)
#
# Prints "vm <KVER>: N passed, M failed" per kernel, then
# "vmtest: N passed, M failed"; exits nonzero when anything failed.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

VM_TIMEOUT=${VM_TIMEOUT:-900}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
SELFTESTS_SRC=${SELFTESTS_SRC:-$ROOT/selftests}
KSFT_DIR=$BUILD/ksrc/$KSFT_SUBDIR
TESTS_OUT=$BUILD/selftests

total_pass=0
total_fail=0
summary=()

finish() {
	local s
	echo
	echo "==== vmtest summary ===="
	for s in "${summary[@]}"; do
		echo "$s"
	done
	echo "vmtest: $total_pass passed, $total_fail failed$(vm_notes)"
	if [ "$total_fail" -eq 0 ]; then
		exit 0
	fi
	exit 1
}

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh"
	"$ROOT/scripts/ksrc.sh"
fi

# Not in a process substitution: vm_kvers dies when a kernel we are meant
# to test cannot be had, and that must end the lane (counted), not shrink
# the list.
if ! kv=$(vm_kvers); then
	total_fail=$((total_fail + 1))
	summary+=("not ok: the kernels to test cannot all be had (vm_kvers, above)")
	finish
fi
mapfile -t kvers <<<"$kv"
if [ -n "${MODULE_KO:-}" ] && [ "${#kvers[@]}" -ne 1 ]; then
	die "MODULE_KO needs exactly one kernel in KERNELS"
fi

# A binary whose source is gone would still be run: drop it.  (Every
# selftests/<name>_test.c builds $(OUT)/<name>_test.)
prune_stale_tests() {
	local t
	mkdir -p "$TESTS_OUT"
	for t in "$TESTS_OUT"/*_test; do
		[ -e "$t" ] || continue
		if [ ! -e "$SELFTESTS_SRC/${t##*/}.c" ]; then
			echo "vmtest: removing ${t#"$ROOT"/}: its source is gone"
			rm -f "$t"
		fi
	done
}

# The test binaries: built once, static, shared by every kernel.
echo "==== building selftests (${SELFTESTS_SRC#"$ROOT"/}) ===="
tests=()
if [ ! -f "$SELFTESTS_SRC/Makefile" ]; then
	echo "vmtest: $SELFTESTS_SRC/Makefile is missing: no tests to run" >&2
elif ! mkdir -p "$TESTS_OUT" || ! (
	# One build at a time in $TESTS_OUT: the debug-kernel lane runs this
	# script beside vmtest's own run (tests/lib/check.sh).
	flock 9
	prune_stale_tests && make -C "$SELFTESTS_SRC" OUT="$TESTS_OUT" KSFT_DIR="$KSFT_DIR" ${V:+V="$V"}
) 9>"$TESTS_OUT/.build-lock"; then
	echo "vmtest: building the selftests failed" >&2
else
	while IFS= read -r t; do
		if [ -z "${TESTS:-}" ] || [[ " $TESTS " == *" $t "* ]]; then
			tests+=("$t")
		fi
	done < <(find "$TESTS_OUT" -maxdepth 1 -type f -name '*_test' -perm -u+x -printf '%f\n' | sort)
	if [ "${#tests[@]}" -eq 0 ]; then
		echo "vmtest: no executable *_test in ${TESTS_OUT#"$ROOT"/}" >&2
	else
		echo "test binaries: ${tests[*]}"
		for t in "${tests[@]}"; do
			if ! file -L "$TESTS_OUT/$t" | grep -q 'statically linked'; then
				echo "vmtest: warning: $t is not statically linked: it cannot run in the guest" >&2
			fi
		done
	fi
fi
if [ "${#tests[@]}" -eq 0 ]; then
	for kver in "${kvers[@]}"; do
		summary+=("vm $kver: 0 passed, 1 failed (no test binaries)")
		total_fail=$((total_fail + 1))
	done
	finish
fi

test_kernel() {
	local kver=$1 moddir stage initrd log start secs rc counts pass fail skip vmdone insmod nrun rmmod t
	local note=
	local tag=$kver${MODULE_KO:+-ko}${VMTEST_TAG:+-$VMTEST_TAG}
	moddir=$BUILD/mod-$kver${VMTEST_TAG:+-$VMTEST_TAG}
	stage=$BUILD/initramfs-$tag
	initrd=$BUILD/initramfs-$tag.cpio.gz
	log=$BUILD/vm-$tag.log
	start=$(now)

	if [ -n "${MODULE_KO:-}" ]; then
		echo "==== vm $kver: the given ${MODULE_KO#"$ROOT"/} ===="
		vm_stage "$stage" "$ROOT/tests/vmtest/init.sh"
		case $MODULE_KO in
		*.xz) xz -dc "$MODULE_KO" >"$stage/snowflake.ko" ;;
		*.zst) zstd -qdc "$MODULE_KO" >"$stage/snowflake.ko" ;;
		*) cp "$MODULE_KO" "$stage/snowflake.ko" ;;
		esac
	else
		echo "==== vm $kver: building snowflake.ko in ${moddir#"$ROOT"/} ===="
		if ! (build_module "$kver" "$moddir"); then
			summary+=("vm $kver: 0 passed, 1 failed (module build failed)")
			total_fail=$((total_fail + 1))
			return 0
		fi
		vm_stage "$stage" "$ROOT/tests/vmtest/init.sh"
		cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
	fi
	mkdir -p "$stage/selftests"
	for t in "${tests[@]}"; do
		cp "$TESTS_OUT/$t" "$stage/selftests/"
	done
	# The static CLI (selftests/Makefile builds it) and the README, whose
	# examples cli_test and readme_test run.
	if [ -x "$TESTS_OUT/snowflake" ]; then
		install -m 0755 "$TESTS_OUT/snowflake" "$stage/usr/bin/snowflake"
	fi
	install -D -m 0644 "$ROOT/README.md" "$stage/usr/share/doc/snowflake/README.md"
	printf 'TEST_TIMEOUT=%s\n' "$TEST_TIMEOUT" >"$stage/etc/snowflake-vm.conf"
	# The debug kernel has failslab: there fault_test must run, not skip.
	if is_debug_kver "$kver"; then
		echo 'export SNOWFLAKE_REQUIRE_FAILSLAB=1' >>"$stage/etc/snowflake-vm.conf"
	fi
	# fuzz_test's knobs, when set here.  Unset, the first kernel gets the
	# test's own 1,000,000 calls (about 40 s of one CPU under TCG) and the
	# others 250,000 each (VMTEST_FUZZ_CALLS_OTHERS): the calls are the
	# driver's, alike on every kernel, each guest from a seed of its own;
	# the debug kernel's lane makes its 250,000 under KASAN.
	for v in SNOWFLAKE_FUZZ_SEED SNOWFLAKE_FUZZ_CALLS; do
		if [ -n "${!v:-}" ]; then
			printf 'export %s=%q\n' "$v" "${!v}" >>"$stage/etc/snowflake-vm.conf"
		fi
	done
	if [ -z "${SNOWFLAKE_FUZZ_CALLS:-}" ] && [ "$kver" != "${kvers[0]}" ]; then
		printf 'export SNOWFLAKE_FUZZ_CALLS=%s\n' "${VMTEST_FUZZ_CALLS_OTHERS:-250000}" >>"$stage/etc/snowflake-vm.conf"
	fi
	# concurrency_test's torture likewise: 8 x 1,000,000 IDs on the first
	# kernel and on PREEMPT_RT's (its spinlock is a sleeping lock), 8 x
	# 250,000 on the others (VMTEST_TORTURE_IDS_OTHERS): 8 processes on
	# both emulated CPUs, about 25 s a kernel at the full count.
	if [ -n "${SNOWFLAKE_TORTURE_IDS:-}" ]; then
		printf 'export SNOWFLAKE_TORTURE_IDS=%q\n' "$SNOWFLAKE_TORTURE_IDS" >>"$stage/etc/snowflake-vm.conf"
	elif [ "$kver" != "${kvers[0]}" ] && [[ $kver != *-rt-* ]]; then
		printf 'export SNOWFLAKE_TORTURE_IDS=%s\n' "${VMTEST_TORTURE_IDS_OTHERS:-250000}" >>"$stage/etc/snowflake-vm.conf"
	fi
	vm_pack "$stage" "$initrd"

	echo "==== vm $kver: booting $(vmlinuz_of "$kver") (timeout ${VM_TIMEOUT}s, console in ${log#"$ROOT"/}) ===="
	rc=0
	# The parallel boot (tests/lib/vm.sh): one CPU until the tests that
	# need two (tests/vmtest/init.sh).  A guest whose kernel crashed is
	# not booted again: its problem is counted and said (vm_problems).
	VM_MODE=parallel vm_boot "$kver" "$initrd" "$log" "$VM_TIMEOUT" || rc=$?
	counts=$(awk -f "$ROOT/tests/lib/vmlog.awk" "$log")
	secs=$(($(now) - start))

	echo "==== vm $kver: results ===="
	grep -v '^COUNTS \|^SKIPPED ' <<<"$counts" || true
	read -r _ pass fail skip vmdone insmod nrun rmmod < <(grep '^COUNTS ' <<<"$counts")
	# A skip is not a pass (vmlog.awk counts it apart): each one must be
	# one tests/vmtest/allowed-skips allows for this kind of kernel, else
	# it fails.
	local kind=debian line bin why
	is_debug_kver "$kver" && kind=debug
	while read -r _ bin line; do
		why=${line#*# SKIP}
		if awk -v k="$kind" -v b="$bin" -v r="$why" '$1 == k && $2 == b && r ~ $3 { f = 1 } END { exit !f }' \
			"$ROOT/tests/vmtest/allowed-skips"; then
			echo "  skipped, as allowed for a $kind kernel: $bin $line"
		else
			echo "  skipped, not allowed (tests/vmtest/allowed-skips): $bin $line"
			fail=$((fail + 1))
		fi
	done < <(grep '^SKIPPED ' <<<"$counts")

	if [ "$insmod" = - ]; then
		echo "  insmod /snowflake.ko never returned"
		fail=$((fail + 1))
	elif [ "$insmod" != 0 ]; then
		echo "  insmod /snowflake.ko failed (rc=$insmod)"
		fail=$((fail + 1))
	fi
	if [ "$rmmod" = 0 ]; then
		pass=$((pass + 1))
	elif [ "$vmdone" = 1 ]; then
		echo "  the final rmmod snowflake failed ($rmmod)"
		fail=$((fail + 1))
	fi
	if [ "$nrun" -lt "${#tests[@]}" ]; then
		echo "  $((${#tests[@]} - nrun)) test binaries never ran"
		fail=$((fail + ${#tests[@]} - nrun))
	fi
	if [ "$vmdone" != 1 ]; then
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "  the guest did not finish within ${VM_TIMEOUT}s (hang?): no SNOWFLAKE-VM-DONE"
		else
			echo "  the guest stopped before SNOWFLAKE-VM-DONE (panic or crash; qemu exit $rc)"
		fi
		tail -n 40 "$log" | tr -d '\r' | sed 's/^/    | /'
		fail=$((fail + 1))
	fi
	# The guest's Prometheus expositions (tests/vmtest/init.sh):
	# promtool's lint, and the same metrics through sysfs as through the device.
	if [ -x "$stage/usr/bin/snowflake" ]; then
		local src prom names=()
		for src in device sysfs; do
			prom=$BUILD/vm-$tag.$src.prom
			tr -d '\r' <"$log" | sed -n "/^SNOWFLAKE-PROM-BEGIN $src\$/,/^SNOWFLAKE-PROM-END $src/p" |
				sed '1d;$d' >"$prom"
			if ! log_has "$log" "^SNOWFLAKE-PROM-END $src rc=0"; then
				echo "  snowflake stats --prometheus ($src) failed in the guest"
				fail=$((fail + 1))
			elif ! command -v promtool >/dev/null; then
				echo "  promtool is missing (Debian's prometheus; scripts/deps.sh)"
				fail=$((fail + 1))
			elif promtool check metrics <"$prom" >"$prom.check" 2>&1 && [ -s "$prom" ]; then
				echo "  promtool check metrics: the exposition through the $src is clean"
				pass=$((pass + 1))
			else
				echo "  promtool check metrics ($src):"
				sed 's/^/    | /' "$prom.check"
				fail=$((fail + 1))
			fi
			# (|| true: an empty exposition, a guest that crashed, must
			# not end this script under set -e, only count as failed.)
			names+=("$(grep -v '^#' "$prom" | sed 's/[{ ].*//' | sort | tr '\n' ' ' || true)")
		done
		if [ -n "${names[0]}" ] && [ "${names[0]}" = "${names[1]}" ]; then
			pass=$((pass + 1))
		else
			echo "  the metrics through sysfs differ from those through the device"
			fail=$((fail + 1))
		fi
	fi
	# The device's UUIDv7s, read by Python's uuid module: version 7, the
	# RFC variant, and the top 48 bits equal to the CLI's decode.
	if [ -x "$TESTS_OUT/snowflake" ]; then
		if tr -d '\r' <"$log" | sed -n '/^SNOWFLAKE-UUIDS-BEGIN$/,/^SNOWFLAKE-UUIDS-END$/p' |
			sed '1d;$d' | python3 -c '
import sys, uuid
rows = [l.split() for l in sys.stdin if l.strip()]
bad = [r for r in rows if len(r) != 2 or uuid.UUID(hex=r[0]).version != 7
       or uuid.UUID(hex=r[0]).variant != uuid.RFC_4122 or int(r[0][:12], 16) != int(r[1])]
ordered = all(rows[i][0] < rows[i + 1][0] for i in range(len(rows) - 1))
print("  python3 uuid: %d UUIDv7s from /dev/uuidv7: %d wrong, in order: %s" % (len(rows), len(bad), ordered))
sys.exit(0 if rows and len(rows) == 32 and not bad and ordered else 1)'; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
		fi
	fi
	# The other CPUs came up for the parallel tests, and no kernel text
	# was patched while they ran (vm_textpoke).
	if log_has "$log" '^SNOWFLAKE-CPUS-UP rc=0'; then
		echo "  $(tr -d '\r' <"$log" | grep -m1 '^SNOWFLAKE-CPUS online=' | sed 's/^SNOWFLAKE-CPUS //') CPUs online for the parallel tests"
		pass=$((pass + 1))
	else
		echo "  the guest did not bring its other CPUs up: $(tr -d '\r' <"$log" | grep -m1 '^SNOWFLAKE-CPUS ' || echo 'no SNOWFLAKE-CPUS line')"
		fail=$((fail + 1))
	fi
	if vm_textpoke "$log"; then
		pass=$((pass + 1))
	else
		note="$note; kernel text patched while two CPUs ran"
		fail=$((fail + 1))
	fi
	if ! vm_problems "$log"; then
		note="$note; $VM_PROBLEM_WHERE"
		fail=$((fail + 1))
	fi
	# The debug kernel (scripts/debug-kernel.sh) also looks for leaks.
	if is_debug_kver "$kver"; then
		if vm_kmemleak "$log"; then
			pass=$((pass + 1))
		else
			note="$note; kmemleak, see above"
			fail=$((fail + 1))
		fi
	fi
	summary+=("vm $kver: $pass passed, $fail failed ($skip skipped; ${secs}s$note)")
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	echo "vm $kver: $pass passed, $fail failed ($skip skipped; ${secs}s$note)"
}

# Mutants (tests/vmtest/mutants/*.patch): the driver with a defect put
# back, on the first kernel, with only the tests that must catch it (the
# parallel ones, VM_PARALLEL_TESTS of tests/vmtest/init.sh).  Each must be
# killed by its defect: the module loaded (insmod rc=0), concurrency_test
# printed a failing case, and the console has a line that matches the
# patch's "# Killed-by: ERE" line (what its defect prints: a duplicate, a
# read out of order), not merely any failure (a timeout, no TAP output, an
# insmod that failed).  A mutant that survives, or does not build, fails
# the lane: the suite has lost the power to see that defect (for
# unlocked-reserve, the guests' second CPU, see tests/lib/vm.sh).  Its
# console is removed first: a log left by an earlier run is never read.
# The lane's canary (the last job): a patch that does not build must come
# out "not killed".  VMTEST_MUTANTS=0 skips them, VMTEST_MUTANTS=1 runs
# them always; by default a run with KERNELS, TESTS or MODULE_KO set skips
# them.
#
# mutant_verdict PATCH KVER: 0 killed by its reason, 1 not (one line why).
mutant_verdict() {
	local patch=$1 kver=$2 name src mlog line failed ere counts insmod
	name=$(basename "$patch" .patch)
	src=$BUILD/mutant-$name
	mlog=$BUILD/vm-$kver-mutant-$name.log
	rm -f "$mlog"
	ere=$(sed -n 's/^# Killed-by: //p' "$patch" | head -n 1)
	if [ -z "$ere" ]; then
		echo "${patch#"$ROOT"/} has no '# Killed-by: ERE' line"
		return 1
	fi
	sync_module_src "$src"
	if ! patch -s -d "$src" -p1 <"$patch"; then
		echo "${patch#"$ROOT"/} does not apply"
		return 1
	fi
	# Its guest's own counts are expected to fail: shown indented, not
	# counted.
	(
		summary=()
		MODULE_SRC=$src VMTEST_TAG=mutant-$name
		export MODULE_SRC
		tests=(concurrency_test)
		test_kernel "$kver"
	) 2>&1 | sed 's/^/    | /' >&2 || true
	if [ ! -s "$mlog" ]; then
		echo "no guest ran (the mutant did not build, or its guest did not boot)"
		return 1
	fi
	counts=$(awk -f "$ROOT/tests/lib/vmlog.awk" "$mlog" | grep '^COUNTS ') || true
	insmod=$(awk '{ print $6 }' <<<"$counts")
	line=$(awk -f "$ROOT/tests/lib/vmlog.awk" "$mlog" | grep -E '^  concurrency_test ' | head -n1) || true
	failed=$(grep -c '^not ok [0-9]' < <(tr -d '\r' <"$mlog" | sed -n '/^SNOWFLAKE-TEST-BEGIN concurrency_test/,/^SNOWFLAKE-TEST-END/p')) || true
	if [ "$insmod" != 0 ]; then
		echo "the module did not load (insmod rc=${insmod:-none})"
		return 1
	elif [ "${failed:-0}" -eq 0 ]; then
		echo "concurrency_test failed no case: ${line:-no result}"
		return 1
	elif ! tr -d '\r' <"$mlog" | grep -qE -- "$ere"; then
		echo "concurrency_test failed $failed cases, but none as its defect does (no line matches $ere): ${line:-}"
		return 1
	fi
	echo "concurrency_test failed $failed cases, as its defect does: $(tr -d '\r' <"$mlog" | grep -m1 -oE -- "$ere")"
}
test_mutant() {
	local patch=$1 kver=$2 name why
	name=$(basename "$patch" .patch)
	echo "==== mutant $name on $kver: ${patch#"$ROOT"/} ===="
	if why=$(mutant_verdict "$patch" "$kver"); then
		echo "  mutant $name killed: $why"
		summary+=("mutant $name: 1 passed, 0 failed (killed: $why)")
		total_pass=$((total_pass + 1))
	else
		echo "  mutant $name SURVIVED: $why (console: $BUILD/vm-$kver-mutant-$name.log)"
		summary+=("mutant $name: 0 passed, 1 failed (survived: $why)")
		total_fail=$((total_fail + 1))
	fi
}
# The canary: a mutant that does not build is never "killed" (its guest
# never boots; a console an earlier run left is not read).
test_canary() {
	local kver=$1 patch=$BUILD/vmtest-canary-nobuild.patch why
	cat >"$patch" <<'PATCH'
# The canary of test_mutant: the driver does not build.
# Killed-by: .
diff --git a/driver/snowflake_main.c b/driver/snowflake_main.c
--- a/driver/snowflake_main.c
+++ b/driver/snowflake_main.c
@@ -1,1 +1,2 @@
+#error "vmtest canary: this mutant does not build"
PATCH
	sed -n 1p "$ROOT/driver/snowflake_main.c" | sed 's/^/ /' >>"$patch"
	# A stale console of the same name, as an earlier run would leave.
	printf 'SNOWFLAKE-INSMOD rc=0\nSNOWFLAKE-TEST-BEGIN concurrency_test\nnot ok 1 conc.processes\nSNOWFLAKE-TEST-END concurrency_test rc=1 secs=1\n' \
		>"$BUILD/vm-$kver-mutant-vmtest-canary-nobuild.log"
	echo "==== the canary: a mutant that does not build ===="
	if why=$(mutant_verdict "$patch" "$kver" 2>/dev/null); then
		echo "  the canary was counted killed: $why"
		summary+=("canary nobuild: 0 passed, 1 failed (a mutant that does not build counted as killed)")
		total_fail=$((total_fail + 1))
	else
		echo "  the canary is not killed: $why"
		summary+=("canary nobuild: 1 passed, 0 failed (not killed: $why)")
		total_pass=$((total_pass + 1))
	fi
}
mutants=()
if [ "${VMTEST_MUTANTS:-auto}" = 1 ] ||
	{ [ "${VMTEST_MUTANTS:-auto}" = auto ] && [ -z "${KERNELS:-}${TESTS:-}${MODULE_KO:-}" ]; }; then
	for m in "$ROOT"/tests/vmtest/mutants/*.patch; do
		[ -e "$m" ] && mutants+=("$m")
	done
fi

# VMTEST_JOBS=N guests at once (default 1).  A guest of the suite uses
# about 70 CPU seconds in its 160 s (most tests read from one process,
# several wait on timers and ticks): two side by side left 48 % of two
# host CPUs idle, so check.sh runs one more guest than there are CPUs.  Each kernel's output is
# then printed whole, in the kernels' order, when its guest has ended.
VMTEST_JOBS=${VMTEST_JOBS:-1}
if [ "$VMTEST_JOBS" -le 1 ] || [ "${#kvers[@]}" -le 1 ]; then
	for kver in "${kvers[@]}"; do
		test_kernel "$kver"
	done
	for m in "${mutants[@]}"; do
		test_mutant "$m" "${kvers[0]}"
	done
	[ "${#mutants[@]}" -eq 0 ] || test_canary "${kvers[0]}"
	finish
fi
# The jobs: every kernel, then every mutant (on the first kernel).
jobs_list=("${kvers[@]}")
for m in "${mutants[@]}"; do
	jobs_list+=("mutant:$m")
done
[ "${#mutants[@]}" -eq 0 ] || jobs_list+=("canary:nobuild")
for job in "${jobs_list[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$VMTEST_JOBS" ]; do
		wait -n || true
	done
	id=${job##*/}
	echo "==== vm $id: started ($VMTEST_JOBS guests at once; its output follows when it ends) ===="
	rm -f "$BUILD/vmtest-$id.res"
	(
		summary=()
		total_pass=0
		total_fail=0
		case $job in
		mutant:*) test_mutant "${job#mutant:}" "${kvers[0]}" ;;
		canary:*) test_canary "${kvers[0]}" ;;
		*) test_kernel "$job" ;;
		esac
		printf '%s %s\n' "$total_pass" "$total_fail" >"$BUILD/vmtest-$id.res"
		printf '%s\n' "${summary[@]}" >>"$BUILD/vmtest-$id.res"
	) >"$BUILD/vmtest-$id.out" 2>&1 &
done
wait || true
for job in "${jobs_list[@]}"; do
	id=${job##*/}
	cat "$BUILD/vmtest-$id.out"
	if [ -s "$BUILD/vmtest-$id.res" ]; then
		read -r p f <"$BUILD/vmtest-$id.res"
		total_pass=$((total_pass + p))
		total_fail=$((total_fail + f))
		mapfile -t -O "${#summary[@]}" summary < <(tail -n +2 "$BUILD/vmtest-$id.res")
	else
		summary+=("vm $id: 0 passed, 1 failed (its run gave no result)")
		total_fail=$((total_fail + 1))
	fi
done
finish
