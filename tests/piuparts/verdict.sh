# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
# piu_verdict LOG: the run's verdict from its log: the install and purge
# test passed, and the upgrade from the previous release ran and passed
# for every package of the run (piuparts skips it, "Can't test upgrade",
# when apt does not know the old packages, and still ends "PASS: All
# tests"; when apt knows some of them it upgrades only those, says "the
# following packages are not in the archive" of the others, and passes the
# upgrade test): tests/piuparts/verdict-test.sh.
piu_verdict() {
	grep -q 'PASS: Installation and purging test\.' "$1" &&
		grep -q 'PASS: Installation, upgrade and purging tests\.' "$1" &&
		! grep -q "Can't test upgrade" "$1" &&
		! grep -q 'the following packages are not in the archive' "$1" &&
		grep -q 'PASS: All tests' "$1"
}
