# shellcheck shell=bash
# QEMU guest helpers for vmtest.sh and run.sh.  Source it after lib.sh.
#
# The guest is the distribution kernel booted with an initramfs that holds a
# static busybox, our /init, the module and whatever the caller adds.
# TCG by default: KVM is opt-in with SNOWFLAKE_KVM=1.
#
# How a guest boots (every guest lane: vm_boot, vm_boot_systemd, and the
# vmclone and restart lanes' own command lines take vm_accel_args).
#
# A kernel patches its own text while it runs (text_poke_bp(): static
# keys, static calls, jump labels): an int3 first, then the new bytes.
# Under QEMU's multi-threaded TCG another vCPU may keep a translation of
# the page made between the two writes and execute the int3 after the
# patch is done: an "Oops: int3" in whatever function was patched
# (crng_make_state at the first getrandom(), static_key_enable at boot),
# more often on a busy host.  With one TCG thread every vCPU runs in turn
# in that thread and a write invalidates the translations before any vCPU
# runs again: the race cannot happen.  So:
#
#   VM_MODE=single (the default): -accel tcg,thread=single.  All vCPUs
#     (VM_CPUS, 2) run in one host thread, interleaved; a lane that boots
#     two guests at once still uses both host CPUs.
#   VM_MODE=parallel: for the tests that need vCPUs running at the same
#     time (the concurrency and torture tests, the benchmark's readers):
#     -accel tcg,thread=multi, but the kernel boots with one CPU online
#     (maxcpus=1), so that every text patch of the boot (the jump labels,
#     the RNG's crng_is_ready key, the clocksource) is made while no other
#     vCPU runs.  The RNG is ready before the second CPU starts (a CPU
#     model with RDRAND and random.trust_cpu=on), the TSC is trusted
#     (tsc=reliable: no watchdog that marks it unstable and patches
#     sched_clock's keys later).  The guest brings the other CPUs up itself
#     (vm_cpus_online, tests/lib/init-common.sh) with sf-textpoke
#     (tests/lib/textpoke.c) recording every text patch from then on; the
#     host checks that there was none in kernel text (vm_textpoke).
#
# A guest whose kernel reported a problem is never booted again: a retry
# would hide our own bugs as well.  vm_problems says where the problem was
# (in snowflake, or outside it: the function the kernel was in), and the
# guest lanes put that on their summary line (vm_notes).

# The guests boot "quiet loglevel=4": the console shows error and above as
# it happens (every message through the emulated serial port slows a TCG
# guest), so a WARN, refcount_t or lockdep report (level warning) is not
# on it then.  Every guest, busybox or systemd, prints the kernel's
# warning-and-above messages at its end, then the check's canary
# (tests/lib/kernel-log.sh, sf_kernel_log), where vm_problems sees them;
# VM_APPEND=sf_canary_report makes such a report first, to test that.
#
# Kernel messages that make a run fail wherever they appear on the console.
# ("module verification failed: signature and/or required key missing" of
# an unsigned module matches none of them, on purpose.)
KERNEL_PROBLEMS='Oops|BUG:|WARNING:|Call Trace|Kernel panic|general protection fault|kernel BUG|UBSAN|KASAN|possible circular locking|possible recursive locking|inconsistent lock state|sleeping function called from invalid context|hung_task|blocked for more than|soft lockup|hard LOCKUP|detected stall|list_add corruption|list_del corruption|refcount_t:|Unable to handle kernel|Kernel memory leak detector disabled|kmemleak: Cannot'

# vm_stage DIR INIT: a fresh initramfs tree in DIR with busybox and its applet
# links, the common init prelude, and INIT as /init.
vm_stage() {
	local dir=$1 init=$2 bb applet
	bb=$(command -v busybox) || die "busybox is missing (run scripts/deps.sh)"
	file -L "$bb" | grep -q 'statically linked' ||
		die "$bb is not statically linked (install busybox-static)"
	rm -rf "$dir"
	mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root}
	cp "$bb" "$dir/bin/busybox"
	while read -r applet; do
		if [ -n "$applet" ] && [ ! -e "$dir/$applet" ]; then
			ln -s /bin/busybox "$dir/$applet"
		fi
	done < <("$bb" --list-full)
	[ -e "$dir/bin/sh" ] || ln -s /bin/busybox "$dir/bin/sh"
	install -m 0644 "$ROOT/tests/lib/init-common.sh" "$dir/etc/init-common.sh"
	install -m 0644 "$ROOT/tests/lib/kernel-log.sh" "$dir/etc/sf-kernel-log.sh"
	install -m 0644 "$ROOT/tests/lib/agent-common.sh" "$dir/etc/agent-common.sh"
	install -m 0755 "$init" "$dir/init"
	vm_textpoke_bin || die "building sf-textpoke (tests/lib/textpoke.c) failed"
	install -m 0755 "$BUILD/textpoke/sf-textpoke" "$dir/usr/bin/sf-textpoke"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		>"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
}

# vm_textpoke_bin: $BUILD/textpoke/sf-textpoke, static, built when older
# than its source.  Background jobs may stage at once: built under a lock.
vm_textpoke_bin() {
	local src=$ROOT/tests/lib/textpoke.c bin=$BUILD/textpoke/sf-textpoke
	mkdir -p "$BUILD/textpoke"
	(
		flock 9
		if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
			gcc -static -O2 -std=gnu11 -Wall -Wextra -Werror -o "$bin.tmp" "$src" &&
				mv "$bin.tmp" "$bin"
		fi
	) 9>"$BUILD/textpoke/lock"
}

# vm_tsc_khz: $VM_TSC_KHZ, the host's TSC rate in kHz, which is the rate of
# a TCG guest's TSC (tests/lib/tsc-khz.c), measured once and exported to
# the lane's other scripts.  Returns 1, with a warning, when it cannot be
# measured: the guests then calibrate it themselves.
vm_tsc_khz() {
	local src=$ROOT/tests/lib/tsc-khz.c bin=$BUILD/tsc-khz/sf-tsc-khz
	[ -z "${VM_TSC_KHZ:-}" ] || return 0
	mkdir -p "$BUILD/tsc-khz"
	(
		flock 9
		if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
			gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$bin.tmp" "$src" &&
				mv "$bin.tmp" "$bin"
		fi
	) 9>"$BUILD/tsc-khz/lock"
	if ! VM_TSC_KHZ=$("$bin"); then
		echo "warning: the host's TSC rate could not be measured (tests/lib/tsc-khz.c): the guests calibrate their own" >&2
		VM_TSC_KHZ=
		return 1
	fi
	export VM_TSC_KHZ
}

# vm_clock_check LOG: 1, with a message, when the guest's kernel runs its TSC
# at a rate more than 15 % from the host's (its last "Refined TSC" or
# "Detected ... MHz" line of the boot messages, which vmtest's guests print:
# SNOWFLAKE-BOOT-DMESG; every guest's end step prints them too as "KTSC",
# tests/lib/kernel-log.sh): every clock of such a guest runs wrong, and what
# its tests measure in time means nothing.  0 when it agrees, or when the
# host's rate cannot be measured; 1 when the console has no such line (the
# check would be blind: issue 42, finding 13).
vm_clock_check() {
	local log=$1 mhz
	vm_tsc_khz 2>/dev/null || return 0
	mhz=$(tr -d '\r' <"$log" | sed -nE 's/.*tsc: (Refined TSC clocksource calibration:|Detected) ([0-9]+)\.[0-9]+ MHz.*/\2/p' | tail -n1)
	if [ -z "$mhz" ]; then
		echo "  guest clock unknown: the console has no \"tsc: Detected\" or \"Refined TSC\" line (${log#"$ROOT"/})"
		echo "guest clock unknown: no TSC line on the console" >>"$VM_NOTES"
		return 1
	fi
	# ("Detected" is the CPU's rate, which the kernel keeps only within
	# 10 % of the TSC's.)
	if [ $((mhz * 1000 * 100)) -lt $((VM_TSC_KHZ * 85)) ] || [ $((mhz * 1000 * 100)) -gt $((VM_TSC_KHZ * 115)) ]; then
		echo "  guest clock wrong: its TSC runs at $mhz MHz by its kernel, the host's at $((VM_TSC_KHZ / 1000)) MHz (${log#"$ROOT"/})"
		echo "guest clock wrong: TSC $mhz MHz, host $((VM_TSC_KHZ / 1000)) MHz" >>"$VM_NOTES"
		return 1
	fi
}

# vm_pack DIR OUT: newc cpio, gzip.
vm_pack() {
	local dir=$1 out=$2
	(cd "$dir" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) | gzip -1 >"$out.tmp"
	mv "$out.tmp" "$out"
}

# vm_accel_args [MODE]: the accelerator, CPU model and kernel arguments of
# every guest, for MODE (default $VM_MODE, else single; see the top of
# this file) into the arrays VM_ACCEL (qemu arguments) and VM_KARGS (kernel
# command line words: every guest's command line takes them).
vm_accel_args() {
	local mode=${1:-${VM_MODE:-single}}
	# no_timer_check: the kernel's boot-time check that the IO-APIC timer
	# ticks, which an emulated CPU on a busy host can fail ("Kernel panic -
	# not syncing: IO-APIC + timer doesn't work!", seen in a quickstart
	# guest); hypervisors' guests skip it the same way.
	VM_KARGS=(no_timer_check)
	if [ "${SNOWFLAKE_KVM:-0}" = 1 ]; then
		VM_ACCEL=(-accel kvm -cpu host)
		return 0
	fi
	# tsc_early_khz: the TSC's rate, the host's (vm_tsc_khz), so that no
	# guest calibrates it against the emulated PIT, which a busy host can
	# throw 60 % off for good (tests/lib/tsc-khz.c; vm_clock_check).
	vm_tsc_khz && VM_KARGS+=("tsc_early_khz=$VM_TSC_KHZ")
	case $mode in
	single)
		# shellcheck disable=SC2054 # one qemu argument with commas
		VM_ACCEL=(-accel tcg,thread=single)
		;;
	parallel)
		# shellcheck disable=SC2054
		VM_ACCEL=(-accel tcg,thread=multi -cpu qemu64,+rdrand)
		VM_KARGS+=(maxcpus=1 random.trust_cpu=on tsc=reliable no_ipi_broadcast=1)
		;;
	*) die "VM_MODE=$mode: not a guest mode (single, parallel)" ;;
	esac
}

# vm_boot KVER INITRD LOG TIMEOUT [FILTER]: boot the guest; the console goes
# to LOG and to stdout (through FILTER, a command, when given).  Returns
# qemu's status (124 on timeout).  VM_MODE, VM_CPUS, VM_MEM, VM_APPEND.
vm_boot() {
	local kver=$1 initrd=$2 log=$3 limit=$4 filter=${5:-cat} kernel rc
	kernel=$(vmlinuz_of "$kver") || die "no guest kernel for $kver (run scripts/deps.sh)"
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (run scripts/deps.sh)"
	vm_accel_args
	set +e
	timeout -k 10 "$limit" qemu-system-x86_64 "${VM_ACCEL[@]}" \
		-smp "${VM_CPUS:-2}" -m "${VM_MEM:-1024}" \
		-nographic -no-reboot -nodefaults -serial mon:stdio \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 oops=panic panic_on_warn=0 quiet loglevel=4 ${VM_KARGS[*]} ${VM_APPEND:-}" \
		</dev/null 2>&1 | tee "$log" | $filter
	rc=${PIPESTATUS[0]}
	set -e
	return "$rc"
}

# vm_problems LOG: print every kernel problem of the console with context,
# and where the first one was (vm_problem_where), which also goes to the
# lane's notes (vm_notes) and to $VM_PROBLEM_WHERE for the caller's own
# line; returns 0 when there is none.
vm_problems() {
	local log=$1 main canary
	VM_PROBLEM_WHERE=
	if ! vm_clock_check "$log"; then
		VM_PROBLEM_WHERE="guest clock wrong or unknown"
		return 1
	fi
	# The console without the canary's section (tests/lib/kernel-log.sh):
	# its report must be found there, and only there.
	main=$(mktemp) canary=$(mktemp)
	tr -d '\r' <"$log" | awk -v c="$canary" '
		/^---- canary kernel log ----$/ { on = 1 }
		on { if (sub(/^KCANARY /, "KMSG ")) print >c; if (/^---- end of canary kernel log ----$/) { on = 0; seen = 1 }; next }
		{ print }
		END { if (seen) print "---- canary section seen ----" >c }' >"$main"
	if ! grep -q '^---- end of kernel log ----$' "$main"; then
		VM_PROBLEM_WHERE="the guest printed no kernel log (its end step, tests/lib/kernel-log.sh, did not run)"
	elif ! grep -q '^---- canary section seen ----$' "$canary"; then
		VM_PROBLEM_WHERE="the guest printed no canary section (tests/lib/kernel-log.sh)"
	elif ! log_has "$canary" "$KERNEL_PROBLEMS"; then
		VM_PROBLEM_WHERE="the canary's planted report did not reach the check (no problem found in its section)"
	elif log_has "$main" "$KERNEL_PROBLEMS"; then
		echo "---- kernel problems in ${log#"$ROOT"/} ----"
		grep -n -E -B 4 -A 30 "$KERNEL_PROBLEMS" "$main"
		echo "---- end of kernel problems ----"
		VM_PROBLEM_WHERE=$(vm_problem_where "$main")
	fi
	rm -f "$main" "$canary"
	[ -n "$VM_PROBLEM_WHERE" ] || return 0
	echo "  $VM_PROBLEM_WHERE (${log#"$ROOT"/})"
	echo "$VM_PROBLEM_WHERE" >>"$VM_NOTES"
	return 1
}

# vm_problem_where LOG: "kernel problem in snowflake: FUNCTION" when the
# first problem's report (its line and the 40 after it) has a frame of the
# module, else "kernel problem outside snowflake: FUNCTION", FUNCTION being
# where the kernel was (RIP, or the function a WARNING or BUG names).
vm_problem_where() {
	tr -d '\r' <"$1" | awk -v re="$KERNEL_PROBLEMS" '
		!found && $0 ~ re { found = NR; first = $0 }
		found && NR <= found + 40 {
			if ($0 ~ /\[snowflake/ || $0 ~ /snowflake(_[a-z]+)?\.(c|h):/) inmod = 1
			if (fn == "" && match($0, /RIP: [0-9a-f]*:?[A-Za-z_.][A-Za-z0-9_.]*\+0x/)) {
				fn = substr($0, RSTART + 5, RLENGTH - 8); sub(/^[0-9a-f]*:/, "", fn)
			}
		}
		END {
			if (!found) exit
			if (fn == "" && match(first, / (at|in) [^ ]*[A-Za-z_][A-Za-z0-9_.]*\+0x/)) {
				fn = substr(first, RSTART, RLENGTH - 3); sub(/^ (at|in) /, "", fn); sub(/.* /, "", fn)
			}
			if (fn == "") { fn = first; sub(/^(KMSG |QS kmsg\| )/, "", fn); sub(/^\[[ 0-9.]*\] */, "", fn); fn = substr(fn, 1, 60) }
			printf "kernel problem %s snowflake: %s\n", inmod ? "in" : "outside", fn
		}'
}

# The guest lanes' notes, one line each (vm_problems adds them), for their
# summary line: vm_notes prints " (NOTE; NOTE)", or nothing when there is
# none.  One file per lane run, made by the first script of the lane that
# sources this file; its background jobs and the lane scripts it runs
# share it (exported).
if [ -z "${VM_NOTES:-}" ]; then
	mkdir -p "$BUILD/vm-notes"
	VM_NOTES=$BUILD/vm-notes/$$
	: >"$VM_NOTES"
	export VM_NOTES
fi
vm_notes() {
	[ -s "$VM_NOTES" ] || return 0
	printf ' (%s)' "$(sort -u "$VM_NOTES" | paste -sd ';' | sed 's/;/; /g')"
}

# vm_textpoke LOG: the text patches sf-textpoke recorded in a VM_MODE=parallel
# guest after its other CPUs came up (vm_cpus_online).  Returns 0 when it
# reported, followed every CPU the guest brought up (cpus= equal to online=
# and to the guest's "SNOWFLAKE-CPUS online=N", no event that failed to
# open) and none was in kernel text (a patch of a module's text is made
# while that module loads, before anything runs it); 1, with the patches
# printed, when there were, or when a CPU went unfollowed; 2 when the guest
# printed no report.  tests/static/vm-test.sh feeds it each case.
vm_textpoke() {
	local log=$1 end n cpus online failed
	end=$(tr -d '\r' <"$log" | grep -E '^SNOWFLAKE-TEXTPOKE-END ' | tail -n1) || true
	if [ -z "$end" ] || [[ "$end" != *" core="* ]]; then
		echo "  sf-textpoke gave no report (${end:-no SNOWFLAKE-TEXTPOKE-END line})"
		return 2
	fi
	echo "  text patches while more than one CPU was up: ${end#SNOWFLAKE-TEXTPOKE-END }"
	n=$(tr -d '\r' <"$log" | sed -n 's/^SNOWFLAKE-CPUS online=\([0-9]*\).*/\1/p' | tail -n1)
	cpus=$(sed -n 's/.* cpus=\([0-9]*\).*/\1/p' <<<"$end")
	online=$(sed -n 's/.* online=\([0-9]*\).*/\1/p' <<<"$end")
	failed=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' <<<"$end")
	if [ -z "$n" ] || [ "$cpus" != "$n" ] || [ "$online" != "$n" ] || [ "$failed" != 0 ]; then
		echo "  sf-textpoke did not follow every CPU: followed ${cpus:-?}, online ${online:-?} at its end, ${n:-?} brought up, ${failed:-?} events failed to open"
		echo "a CPU without a text-patch recorder" >>"$VM_NOTES"
		return 1
	fi
	if [[ "$end" == *" core=0 "* ]] && [[ "$end" == *" lost=0 "* ]]; then
		return 0
	fi
	tr -d '\r' <"$log" | grep -E '^SNOWFLAKE-TEXTPOKE poke ' | head -n 20 | sed 's/^/    | /'
	echo "kernel text patched while two CPUs ran" >>"$VM_NOTES"
	return 1
}

# vm_kmemleak LOG: the kmemleak reports the debug kernel's guest printed
# between SNOWFLAKE-KMEMLEAK-BEGIN/END (tests/vmtest/init.sh).  A
# suspect whose backtrace names snowflake, or has a frame in unloaded module
# text (a bare address: snowflake is the only module), fails.  Returns 0 when
# there is none; 1 (and prints them) otherwise; 2 when the log has no report.
vm_kmemleak() {
	local log=$1 rep
	rep=$(tr -d '\r' <"$log" | awk '
		/^SNOWFLAKE-KMEMLEAK-BEGIN / { on = 1; print; next }
		/^SNOWFLAKE-KMEMLEAK-END / { on = 0; print; next }
		on')
	if ! grep -q '^SNOWFLAKE-KMEMLEAK-END unloaded' <<<"$rep"; then
		echo "---- no kmemleak report after the unload in ${log#"$ROOT"/} ----"
		return 2
	fi
	if grep -qE 'unreferenced object' <<<"$rep"; then
		echo "---- kmemleak suspects in ${log#"$ROOT"/} ----"
		printf '%s\n' "$rep"
		echo "---- end of kmemleak suspects ----"
	fi
	# Backtrace frames are "func+0x1/0x2 [module]", or a bare "0xADDR" in
	# text no longer loaded (older kernels prefix "[<ADDR>] ").
	if awk '
		/^unreferenced object / { bt = 0; next }
		/^ *backtrace/ { bt = 1; next }
		bt && (/snowflake/ || /(^ *|\] )0x[0-9a-f]+[ \t]*$/) { bad = 1 }
		END { exit !bad }' <<<"$rep"; then
		echo "---- kmemleak: snowflake leaked memory (backtraces above) ----"
		return 1
	fi
	return 0
}

# vm_add_agent STAGE OUT: a static snowflake-agent (the Redis store, and
# ZooKeeper's when libzookeeper_mt.a is there; no static libcurl for etcd,
# no MySQL) and Debian's redis-server and redis-cli with the shared
# libraries ldd names, into the initramfs tree STAGE (the static
# library comes from userspace/; OUT holds the build log).  Returns 1, with
# the log printed, when something could not be built.
vm_add_agent() {
	local stage=$1 out=$2 hiredis_a zk_a zk b lib
	mkdir -p "$out"
	make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/libsnowflake.a" ||
		return 1
	hiredis_a=$(find /usr/lib /usr/lib64 -name libhiredis.a 2>/dev/null | head -n1)
	# The ZooKeeper store too, when its static library is there.
	zk_a=$(find /usr/lib /usr/lib64 -name libzookeeper_mt.a 2>/dev/null | head -n1)
	zk=(-DAG_NO_ZOOKEEPER)
	[ -n "$zk_a" ] && zk=(-pthread "$zk_a")
	# hiredis resolves the address with getaddrinfo(), which static glibc
	# supports for numeric addresses.
	if [ -z "$hiredis_a" ] ||
		! gcc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -DAG_NO_ETCD -DAG_NO_MYSQL \
			-I"$ROOT/userspace/include" -I"$ROOT/uapi" -o "$out/snowflake-agent" \
			"$ROOT"/userspace/agent/*.c "$BUILD/userspace/libsnowflake.a" "$hiredis_a" "${zk[@]}" \
			2>"$out/agent-build.log"; then
		cat "$out/agent-build.log"
		echo "building a static snowflake-agent failed (libhiredis.a: ${hiredis_a:-missing})"
		return 1
	fi
	install -m 0755 "$out/snowflake-agent" "$stage/usr/sbin/snowflake-agent"
	# redis-server (Debian: a link to redis-check-rdb, which acts on its
	# name) and redis-cli, with their shared libraries and the loader.
	for b in redis-server redis-cli; do
		install -m 0755 "$(readlink -f "$(command -v "$b")")" "$stage/usr/bin/$b"
		ldd "$(command -v "$b")" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
	done | sort -u | while read -r lib; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
	mkdir -p "$stage/lib64"
	cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
}

# vm_module_stage KVER DIR STAGE INIT LOG: snowflake.ko built for KVER into
# DIR/mod (its output in LOG: the last lines shown and 1 when it failed),
# then the initramfs tree STAGE with INIT as /init and the module.
vm_module_stage() {
	local kver=$1 dir=$2 stage=$3 init=$4 blog=$5
	if ! (build_module "$kver" "$dir/mod") >"$blog" 2>&1; then
		tail -n 20 "$blog"
		return 1
	fi
	vm_stage "$stage" "$init"
	cp "$dir/mod/snowflake.ko" "$stage/snowflake.ko"
}

# vm_guest_results CONSOLE WHO TAG TAIL FROM TO FIGURE...: what a guest
# script printed on its console (CONSOLE, its text with \r stripped): each
# "ok   WHAT" and "FAIL WHAT" counted as "WHO: WHAT" (ok, or the caller's
# bad), indented details shown, each "TAG-FIGURE LINE" given to FIGURE...
# LINE; then that the guest finished (SNOWFLAKE-VM-DONE, else its last TAIL
# lines shown; qemu's exit in $rc) after its "TAG-GUEST-COUNTS" line; on a
# failure, the console between the lines matching the sed addresses FROM
# and TO (the guest's agent log).
vm_guest_results() {
	local console=$1 who=$2 tag=$3 tailn=$4 from=$5 to=$6 line
	shift 6
	while IFS= read -r line; do
		case $line in
		"ok   "*) ok "$who: ${line#ok   }" ;;
		"FAIL "*) bad "$who: ${line#FAIL }" ;;
		"$tag-FIGURE "*) "$@" "${line#"$tag"-FIGURE }" ;;
		"  "*) echo "$line" ;;
		esac
	done < <(grep -E "^(ok   |FAIL |$tag-FIGURE |  )" <<<"$console")
	if ! grep -q '^SNOWFLAKE-VM-DONE' <<<"$console"; then
		bad "$who: the guest did not finish (qemu exit $rc)"
		tail -n "$tailn" <<<"$console" | sed 's/^/    | /'
	elif ! grep -q "^$tag-GUEST-COUNTS " <<<"$console"; then
		bad "$who: the guest script stopped early"
	fi
	if grep -q '^FAIL ' <<<"$console"; then
		sed -n "/$from/,/$to/p" <<<"$console" | sed 's/^/    | /'
	fi
}

# vm_boot_systemd KVER IMG LOG TIMEOUT: boot IMG on KVER with systemd as PID
# 1, the console into LOG; qemu's exit code in $rc.  notok and 1 when there
# is no guest kernel.  One CPU (VM_SYSTEMD_CPUS), one TCG thread (vm_accel_args); the
# initramfs is unpacked into RAM.  The
# deb lane's systemd and containers guests and the quickstart guest.
# VM_SYSTEMD_ARGS (an array): more qemu arguments (the upgrade lane's
# second serial port); VM_SYSTEMD_CPUS: vCPUs (default 1; the db lane's
# concurrent sessions take 2, still one TCG thread); VM_SYSTEMD_MEM: MiB
# of RAM (default 3072; the rootfs the initramfs is unpacked into may hold
# half of what the initramfs itself leaves).
vm_boot_systemd() {
	local kver=$1 img=$2 log=$3 timeout=$4 kernel start
	kernel=$(vmlinuz_of "$kver") || {
		notok "no guest kernel for $kver"
		return 1
	}
	echo "# booting $kver with systemd as PID 1 (console in ${log#"$ROOT"/})"
	start=$(now)
	rc=0
	vm_accel_args single
	timeout -k 10 "$timeout" qemu-system-x86_64 "${VM_ACCEL[@]}" -smp "${VM_SYSTEMD_CPUS:-1}" -m "${VM_SYSTEMD_MEM:-3072}" \
		-nographic -no-reboot -nodefaults -serial mon:stdio \
		-kernel "$kernel" -initrd "$img" "${VM_SYSTEMD_ARGS[@]}" \
		-append "console=ttyS0 rdinit=/lib/systemd/systemd panic=-1 quiet loglevel=4 systemd.show_status=false ${VM_KARGS[*]} ${VM_APPEND:-}" \
		</dev/null >"$log" 2>&1 || rc=$?
	echo "# the guest ran $(($(now) - start)) s (qemu exit $rc)"
}
