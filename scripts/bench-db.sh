#!/bin/bash
# P9 (issue 32), part of `make bench` (scripts/bench.sh runs it): the keys a
# database makes, in one server of each, one run, the same table shape.
# The guest of the db stage (tests/db/lib.sh: Debian 13, PostgreSQL 17,
# MariaDB 11.8, the snowflake packages installed with apt, the real module)
# runs bench/db/p9-guest.sh: a ROWS-row INSERT ... SELECT with each key's
# default (snowflake.nextval(), bigserial, gen_random_uuid(), Instagram's
# PL/pgSQL function, snowflake.uuidv7(); MariaDB: snowflake_next(),
# AUTO_INCREMENT, UUID()), its time and the key index's size, and the calls
# alone.  Writes OUT/p9.txt (the guest's BENCH lines) and OUT/p9.md (the
# table).  Measures, never asserts; under TCG (one emulated CPU) absolute
# rates are not native: the ratios are what count.
#
# The snowflake packages: the deb stage's (build/deb), else `make deb`'s,
# made when missing (tests/db/lib.sh, db_root).  Environment: BENCH_SMOKE=1 (ROWS 2000: proves it runs),
# P9_ROWS (default 1000000), P9_ROUNDS (default 5: interleaved rounds, the
# order rotated each round, bench/db/p9-guest.sh; the smoke run 1),
# VM_TIMEOUT (default 900 s and 700 s a round: a round of 1,000,000 rows
# took about 420 s of TCG).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	OUT=$BUILD/bench-smoke/db
	ROWS=${P9_ROWS:-2000}
	ROUNDS=${P9_ROUNDS:-1}
else
	OUT=$BUILD/bench/db
	ROWS=${P9_ROWS:-1000000}
	ROUNDS=${P9_ROUNDS:-5}
fi
# shellcheck source=tests/db/lib.sh
. "$ROOT/tests/db/lib.sh"
mkdir -p "$OUT"
trap 'db_umount "$OUT/root"' EXIT
kver=$(db_kver) || die "P9: no kernel of Debian $DB_SUITE (scripts/kroot.sh $DB_SUITE)"
start=$(now)
db_root "$kver" "$OUT/root" >"$OUT/root.log" 2>&1 || {
	cat "$OUT/root.log" >&2
	die "P9: no database guest root (log: ${OUT#"$ROOT"/}/root.log)"
}
msg "P9: the database guest's root ready ($(($(now) - start)) s); booting it ($ROWS rows a key, $ROUNDS rounds)"
t0=$(now)
db_boot "$kver" "$OUT/root" "$ROOT/bench/db/p9-guest.sh" sfp9 "snowflake: P9 (scripts/bench-db.sh)" \
	"${VM_TIMEOUT:-$((900 + 700 * ROUNDS))}" "$OUT/console.log" rows="$ROWS" rounds="$ROUNDS" >"$OUT/boot.log" 2>&1 ||
	die "P9: the guest did not boot ($(cat "$OUT/boot.log"))"
db_clean "$OUT/root"
tr -d '\r' <"$OUT/console.log" | grep -E '^BENCH ' >"$OUT/p9.txt" || true
grep -q '^BENCH done' "$OUT/p9.txt" || {
	tail -n 30 "$OUT/console.log" | tr -d '\r' | sed 's/^/  | /' >&2
	die "P9: the guest did not finish (console: ${OUT#"$ROOT"/}/console.log)"
}
python3 "$ROOT/bench/db/p9-report.py" "$OUT/p9.txt" >"$OUT/p9.md"
msg "P9 done in $(($(now) - start)) s (guest $(($(now) - t0)) s): ${OUT#"$ROOT"/}/p9.md"
cat "$OUT/p9.md"
