#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In a Debian root of tests/quickstart/run.sh, booted with systemd as
# PID 1 (quickstart.service, once the system is up): the documentation's
# commands that need the running kernel, each as its user would type it in
# a login shell, in the source tree, "y" answered to any question.
#
# /etc/quickstart/commands: "N<TAB>USER<TAB>COMMAND" lines; /etc/quickstart/dir:
# the source tree.  Console lines: "QS N| OUTPUT", "QS time N SECONDS",
# "QS rc N STATUS", then
# "QS done" and a poweroff.  run.sh judges them.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=$(cat /etc/quickstart/dir)
# Ordinary services (the floor unit among them) have started by now
# (quickstart.service is ordered after multi-user.target); udev's events of
# the boot are done.
udevadm settle --timeout=60 || true
# On a line of its own: the console's reset sequences land before it.
echo "QS begin"
while IFS=$'\t' read -r n user cmd; do
	[ -n "$n" ] || continue
	rc=0 t0=$(date +%s)
	yes 2>/dev/null | timeout -k 5 "${QS_CMD_TIMEOUT:-180}" \
		runuser -l "$user" -c "cd '$dir' && $cmd" >/tmp/qs.out 2>&1 || rc=$?
	sed "s/^/QS $n| /" /tmp/qs.out
	echo "QS time $n $(($(date +%s) - t0))"
	echo "QS rc $n $rc"
done </etc/quickstart/commands
# The kernel's messages of level warning and above, and the check's
# canary (tests/lib/kernel-log.sh): the host's console check
# (vm_problems) reads them.
# shellcheck source=tests/lib/kernel-log.sh
. /usr/local/lib/sf-kernel-log.sh
sf_kernel_log
echo "QS done"
systemctl poweroff --no-block
