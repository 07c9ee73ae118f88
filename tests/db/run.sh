#!/bin/bash
# The db stage of `make check` (issue 32): the database functions as a user
# installs them, on the real module, in a guest.
#
#   0. On this Debian 12 host, without the module (tests/db/host.sh,
#      db_host): the MariaDB functions built against this tree's
#      libsnowflake in a private mariadbd (10.11): the server lives through
#      a call, DROP FUNCTION and the caller's disconnect (issue 43); the
#      mutants whose check that is (tests/db/mutants, Check: host-drop)
#      built the same way, each killed by it (signal 11).  Then
#      (db_bookworm) postgresql-15-snowflake and mariadb-plugin-snowflake
#      built for Debian 12 with dpkg-buildpackage on this host (its
#      PostgreSQL 15 and MariaDB 10.11 development packages, the deb stage's
#      libsnowflake-dev in overlays of a mount namespace), checked by
#      lintian; no guest.
#   1. The guest's root (tests/db/lib.sh, db_root): Debian 13, an overlay
#      on the dkms-trixie stage's root (PostgreSQL 17, MariaDB 11.8, their
#      development packages; tests/dkms-suite/root.sh), the deb stage's
#      packages installed with apt (DKMS builds snowflake.ko for trixie's
#      6.12.117+deb13), and postgresql-17-snowflake and
#      mariadb-plugin-snowflake, built there from clients/postgresql and
#      clients/mariadb with dpkg-buildpackage (pg_buildext), checked by
#      lintian, installed with apt; snowflake-agent built there from the
#      tree (the deb stage's is bookworm's); the servers' users in the group
#      snowflake.
#   2. That root booted with systemd as PID 1 on trixie's own kernel
#      (vm_boot_systemd): tests/db/guest.sh runs there: CREATE EXTENSION
#      and CREATE FUNCTION on the installed packages, the errors and their
#      SQLSTATEs, pg_regress (make installcheck), the 1,000,000-row INSERT
#      ... SELECT with the wall clock stepped back one hour mid-statement,
#      8 concurrent sessions, the merge of two servers' databases
#      (snowflake against bigserial and AUTO_INCREMENT), the MariaDB
#      functions; then, on a one-hour tick, a wait ended by
#      pg_cancel_backend(), pg_terminate_backend() and statement_timeout, a
#      MariaDB INSERT under sql_mode='' whose read fails mid-statement, and
#      a MariaDB wait ended by KILL QUERY and by max_statement_time (ERROR
#      1317, 1969), and the MariaDB functions' mutants in place of the
#      package's library, each killed by its one check there; last, the
#      agent's MariaDB store (--backend mysql on the guest's mariadbd): a
#      pair claimed, IDs within the lease's window, released at SIGTERM.
#
# Needs the deb stage's packages (build/deb/*.deb: tests/deb/run.sh; this
# stage runs after it) and the dkms-trixie root (made when missing).
# Environment: DB_KERNEL (default: trixie's own, suite_kver), DB_ROWS
# (default 1000000), DB_TIMEOUT (the guest's, default 1800 s: two vCPUs in
# one TCG thread, and the one-hour tick's restarts).  Prints "db: N passed,
# M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
OUT=$BUILD/db
# shellcheck source=tests/db/lib.sh
. "$ROOT/tests/db/lib.sh"
# shellcheck source=tests/db/host.sh
. "$ROOT/tests/db/host.sh"

R=$OUT/root
t0=$(now)
finish() {
	echo "db: $pass passed, $fail failed ($(($(now) - t0)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}
if [ "$(id -u)" -ne 0 ]; then
	notok "the db stage needs root (chroot, mounts)"
	finish
fi
mkdir -p "$OUT"
trap 'db_umount "$R"' EXIT
db_host
db_bookworm
KVER=$(db_kver) || {
	notok "no kernel of Debian $DB_SUITE (scripts/kroot.sh $DB_SUITE)"
	finish
}

db_root "$KVER" "$R" || finish
db_boot "$KVER" "$R" "$ROOT/tests/db/guest.sh" sfdb \
	"snowflake: the database functions (tests/db/run.sh)" "${DB_TIMEOUT:-1800}" \
	"$OUT/console.log" rows="${DB_ROWS:-1000000}" || finish
deb_guest_results SFDB db "$OUT/console.log" "$OUT"
# Every mutant this run built for the guest (db_mutants: the extension's,
# checked by pg_regress; the MariaDB functions', by their check on the
# one-hour tick) was killed there (a line of its own, not only no failure:
# a mutant the guest skipped is not a kill).  The host's (db_host) are
# killed or failed where they run.
for m in "$OUT"/mutants/*.so; do
	[ -e "$m" ] || continue
	m=$(basename "$m" .so)
	check "mutant $m: the guest reports it killed" log_has "$OUT/console.log" "^SFDB ok mutant $m: killed"
done
# P9's report on the guest's run of its program (BENCHMARKS.md; the
# figures of a 2,000-row run mean nothing).
tr -d '\r' <"$OUT/console.log" | sed -n 's/^SFDB P9 //p' >"$OUT/p9.txt"
check "P9's report (bench/db/p9-report.py) on that run: every key measured" \
	sh -c "python3 '$ROOT/bench/db/p9-report.py' '$OUT/p9.txt' >'$OUT/p9.md' && ! grep -q failed '$OUT/p9.md' &&
		[ \$(grep -c '^| [pm]' '$OUT/p9.md') -eq 9 ]"
# Its rounds interleave (tests/db/p9-rounds.py): round 2 is round 1's
# order rotated by one.
check "P9's rounds interleaved: 11 measurements a round, round 2 is round 1 rotated by one" \
	sh -c "python3 '$ROOT/tests/db/p9-rounds.py' '$OUT/p9.txt' >'$OUT/p9-rounds.txt'"
indent <"$OUT/p9-rounds.txt"
indent <"$OUT/p9.md"
db_clean "$R"
finish
