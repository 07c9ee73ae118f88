# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0
# The one end-of-guest step of every guest, busybox and systemd alike
# (issue 42): sourced by tests/lib/init-common.sh (vm_done calls it) and
# installed in every systemd guest as /usr/local/lib/sf-kernel-log.sh,
# which sf-kernel-log.service runs at the guest's shutdown
# (tests/deb/lib.sh, deb_guest_unit; the quickstart's guest calls it
# itself).  The host reads both sections (tests/lib/vm.sh, vm_problems).
#
# sf_kernel_log: the kernel's own messages of level warning and above
# (kernel facility only: not what user space wrote to /dev/kmsg), every
# one since the boot, each line "KMSG ...", between
#   ---- kernel log, warning and above (dmesg) ----
#   ---- end of kernel log ----
# The guests boot quiet loglevel=4 (tests/lib/vm.sh): the console shows
# only error and above as it happens, and a WARN, refcount_t or lockdep
# report (level warning) never reaches it; printed here at the end, it
# reaches the host's check without every boot message crossing the emulated
# serial port.  Then the check's own canary, in every guest: a backtrace at
# warning level (sysrq l, a "Call Trace" the console never shows), and the
# messages the kernel logged since the first section, the same way but
# each line "KCANARY ...", between
#   ---- canary kernel log ----
#   ---- end of canary kernel log ----
# The host fails the guest when the first section has a problem, when a
# section is missing, or when the canary's report is not found in the
# second: the path from the kernel's log to the host's verdict is shown to
# work in each guest that relies on it.  With sf_canary_report on the
# kernel's command line the backtrace comes first, in the first section:
# the guest must then fail (tests/README.md, "How the guests boot").
sf_kernel_log() {
	if grep -qw sf_canary_report /proc/cmdline; then
		echo l >/proc/sysrq-trigger
	fi
	_sf_kl=/run/sf-kernel-log.$$
	dmesg -r >"$_sf_kl" 2>/dev/null
	_sf_n=$(wc -l <"$_sf_kl")
	echo "---- kernel log, warning and above (dmesg) ----"
	sf_kernel_log_filter KMSG <"$_sf_kl"
	echo "---- end of kernel log ----"
	# The TSC rate the kernel found, whatever the log level (the host's
	# vm_clock_check compares it with its own: a guest whose clocks run
	# wrong fails).
	grep -E 'tsc: (Refined TSC clocksource calibration:|Detected) ' "$_sf_kl" | sed 's/^/KTSC /'
	echo l >/proc/sysrq-trigger
	# (the backtrace of the other CPUs comes by NMI: give it a moment)
	sleep 1
	echo "---- canary kernel log ----"
	dmesg -r 2>/dev/null | tail -n "+$((_sf_n + 1))" | sf_kernel_log_filter KCANARY
	echo "---- end of canary kernel log ----"
	rm -f "$_sf_kl"
}
# sf_kernel_log_filter PREFIX: dmesg -r lines of level warning and above of
# the kernel facility, the level stripped, PREFIX before each.
sf_kernel_log_filter() {
	awk -v p="$1" 'match($0, /^<[0-9]+>/) {
		n = substr($0, 2, RLENGTH - 2) + 0
		if (n < 8 && n % 8 <= 4) print p " " substr($0, RLENGTH + 1)
	}'
}
