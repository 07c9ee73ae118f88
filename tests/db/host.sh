#!/bin/bash
# tests/db/host.sh: the db stage's checks that need no device, on this
# host's own MariaDB 10.11 (issue 43): snowflake_udf.so built against this
# tree's libsnowflake, loaded by a private mariadbd (a socket in a temporary
# directory, no TCP port, thread_cache_size=0 so that a connection's thread
# ends with it, as a thread-pool worker's idle exit does).
#
#   - The server lives through a call of every function (each fails: no
#     device here), DROP FUNCTION of the six functions (the server unloads
#     the library) and the caller's disconnect: a per-thread key whose
#     destructor lived in the library sent the ending thread into unmapped
#     memory ("mariadbd got signal 11", issue 43 defect 1).  Twice: the
#     functions created again in between.
#   - Every mutant of tests/db/mutants/ whose preamble says "Check:
#     host-drop", built the same way from a patched copy of clients/mariadb
#     and loaded by a private mariadbd of its own (a copy of the same fresh
#     data directory): the round above must fail at its last step, the
#     server's error log saying "got signal 11" (killed by its defect), each
#     step before it passing.  A patch that does not apply or build fails.
#
# tests/db/run.sh runs it first (db_host); alone: tests/db/host.sh, which
# prints "db-host: N passed, M failed".  Needs mariadbd, mariadb-install-db,
# mariadb_config (libmariadb-dev) and a C compiler.

# db_mutant_check PATCH: the Check: line of PATCH's preamble (which check
# must kill it: pg_regress, host-drop, mariadb-kill, mariadb-nonstrict).
db_mutant_check() {
	sed -n '/^diff /q; s/^Check: *//p' "$1" | head -n 1
}

# host_build DIR: DIR/clients/mariadb's snowflake_udf.so built against this
# tree's libsnowflake (build/userspace) into DIR/plugin/.
host_build() {
	make -C "$1/clients/mariadb" -B snowflake_udf.so \
		SNOWFLAKE_CFLAGS="-I$ROOT/userspace/include -I$ROOT/uapi" \
		SNOWFLAKE_LIBS="-L$BUILD/userspace -lsnowflake -Wl,-rpath,$BUILD/userspace" &&
		mkdir -p "$1/plugin" && mv "$1/clients/mariadb/snowflake_udf.so" "$1/plugin/"
}

# host_server DIR: a private mariadbd on a copy of $t/data0 in DIR, its
# plugin directory DIR/plugin, its error log DIR/mariadbd.err; its pid in
# mpid, the client in m.  Returns 1 when it does not answer within 30 s.
host_server() {
	rm -rf "$1/data"
	cp -a "$t/data0" "$1/data"
	mariadbd --no-defaults --datadir="$1/data" --user="$(id -un)" --skip-networking \
		--socket="$1/sock" --pid-file="$1/mysql.pid" --plugin-dir="$1/plugin" \
		--thread-cache-size=0 --innodb-buffer-pool-size=32M --innodb-log-file-size=8M \
		--log-error="$1/mariadbd.err" >/dev/null 2>&1 &
	mpid=$!
	m=(mariadb --no-defaults -uroot -S "$1/sock" --batch --skip-column-names)
	for _ in $(seq 300); do
		"${m[@]}" -e 'SELECT 1' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# host_stop: the server host_server started, stopped.
host_stop() {
	kill "$mpid" 2>/dev/null || true
	wait "$mpid" 2>/dev/null || true
}

# host_alive: the server runs and answers.
host_alive() { kill -0 "$mpid" 2>/dev/null && "${m[@]}" -e 'SELECT 1' >/dev/null 2>&1; }

# host_round DIR ROUND: one round on the server of DIR (host_server): the
# functions created, a call of each, DROP FUNCTION from another connection,
# the library unloaded, the caller's disconnect.  Each step's result in
# steps ("0 WHAT" passed, "1 WHAT" failed), in order; the last is the
# server's survival.
host_round() {
	local d=$1 round=$2 a err
	steps=()
	step() {
		local what=$1
		shift
		if "$@"; then steps+=("0 $what"); else steps+=("1 $what"); fi
	}
	"${m[@]}" <"$ROOT/clients/mariadb/snowflake.sql" >"$d/create.log" 2>&1 || true
	step "round $round: CREATE FUNCTION ... SONAME 'snowflake_udf.so' (snowflake.sql): 6 functions" \
		test "$("${m[@]}" -e "SELECT COUNT(*) FROM mysql.func WHERE dl = 'snowflake_udf.so'")" = 6
	# The caller: a call of each function (each fails: no device), then
	# it waits for the DROP before it disconnects.
	rm -f "$d/dropped"
	{
		for f in "snowflake_next()" "snowflake_uuidv7()" "snowflake_unix_ms(1)" \
			"snowflake_datacenter(1)" "snowflake_worker(1)" "snowflake_sequence(1)"; do
			echo "SELECT $f;"
		done
		echo "SELECT 'called';"
		for _ in $(seq 300); do
			[ -e "$d/dropped" ] && break
			sleep 0.1
		done
	} | "${m[@]}" --force --unbuffered >"$d/caller.log" 2>&1 &
	a=$!
	for _ in $(seq 100); do
		grep -q '^called' "$d/caller.log" && break
		sleep 0.1
	done
	step "round $round: each call fails without a device and says so" \
		sh -c "[ \$(grep -c 'no /dev/' '$d/caller.log') -eq 6 ] && grep -q '^called' '$d/caller.log'"
	# The statements' last references go in the second after them
	# (a DROP at once leaves the library loaded until the caller ends).
	sleep 1
	"${m[@]}" -e "DROP FUNCTION snowflake_next; DROP FUNCTION snowflake_uuidv7;
		DROP FUNCTION snowflake_unix_ms; DROP FUNCTION snowflake_datacenter;
		DROP FUNCTION snowflake_worker; DROP FUNCTION snowflake_sequence" >"$d/drop.log" 2>&1 &&
		err=0 || err=$?
	step "round $round: DROP FUNCTION of the six from another connection" test "$err" = 0
	# The server unloads the library once no statement holds it (not
	# at once after a call): the caller stays connected until then.
	for _ in $(seq 100); do
		grep -q snowflake_udf.so "/proc/$mpid/maps" || break
		sleep 0.1
	done
	step "round $round: the server unloaded snowflake_udf.so (gone from /proc/PID/maps) while the caller is connected" \
		sh -c "! grep -q snowflake_udf.so /proc/$mpid/maps && kill -0 $a"
	touch "$d/dropped"
	wait "$a" || true # the client's status: the calls failed
	# The caller's thread ends after its disconnect: give it time.
	sleep 1
	host_alive && err=0 || err=1
	step "round $round: mariadbd lives through the caller's disconnect after the DROP (no signal 11)" \
		sh -c "[ $err = 0 ] && ! grep -q 'got signal' '$d/mariadbd.err'"
}

# host_mutant PATCH: PATCH (Check: host-drop) built, one round on a server
# of its own: killed when every step but the last passed and the last
# failed with "got signal 11" in the server's error log.
host_mutant() {
	local p=$1 name d s bad=""
	name=$(basename "$p" .patch)
	d=$t/mut-$name
	mkdir -p "$d/clients"
	cp -a "$ROOT/clients/mariadb" "$d/clients/"
	rm -f "$d"/clients/mariadb/*.so
	if ! { patch -d "$d" -p1 <"$p" && host_build "$d"; } >"$d/build.log" 2>&1; then
		tail -n 10 "$d/build.log" | indent
		notok "host: mutant $name: does not apply or build"
		return
	fi
	ok "host: mutant $name: applies and builds"
	if ! host_server "$d"; then
		indent <"$d/mariadbd.err" | tail -n 20
		notok "host: mutant $name: its mariadbd did not start"
		host_stop
		return
	fi
	host_round "$d" 1
	for s in "${steps[@]:0:${#steps[@]}-1}"; do
		[ "${s%% *}" = 0 ] || bad="${bad:+$bad; }failed before the disconnect: ${s#* }"
	done
	if [ -z "$bad" ] && [ "${steps[-1]%% *}" = 1 ] && grep -q 'got signal 11' "$d/mariadbd.err"; then
		ok "host: mutant $name: killed (mariadbd got signal 11 at the caller's disconnect after the DROP)"
		grep -m 1 'got signal 11' "$d/mariadbd.err" | indent
	else
		[ -n "$bad" ] || bad="the server lived through the disconnect, or died without 'got signal 11'"
		notok "host: mutant $name: not killed ($bad)"
		indent <"$d/mariadbd.err" | tail -n 8
	fi
	host_stop
}

# db_host: the checks above, counted with ok/notok.
db_host() {
	local t mpid m=() steps=() round s p
	t=$(mktemp -d "${TMPDIR:-/tmp}/sf-db-host.XXXXXX")
	mkdir -p "$t/real/clients"
	cp -a "$ROOT/clients/mariadb" "$t/real/clients/"
	rm -f "$t"/real/clients/mariadb/*.so
	# OUT: the Makefile's target is $(OUT)/libsnowflake.so, ../build/userspace
	# unless given (the absolute path alone has no rule in a fresh tree).
	if ! make -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/libsnowflake.so" \
		>"$t/lib.log" 2>&1 || ! host_build "$t/real" >>"$t/lib.log" 2>&1; then
		indent <"$t/lib.log" | tail -n 20
		notok "host: libsnowflake and clients/mariadb/snowflake_udf.so build"
		rm -rf "$t"
		return
	fi
	ok "host: snowflake_udf.so built against this tree's libsnowflake"
	if ! mariadb-install-db --no-defaults --datadir="$t/data0" --user="$(id -un)" \
		--auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=8M \
		>"$t/install-db.log" 2>&1; then
		indent <"$t/install-db.log" | tail -n 20
		notok "host: mariadb-install-db"
		rm -rf "$t"
		return
	fi
	if host_server "$t/real" && host_alive; then
		ok "host: mariadbd $("${m[@]}" -e 'SELECT VERSION()') (thread_cache_size=$("${m[@]}" -e 'SELECT @@thread_cache_size'))"
	else
		indent <"$t/real/mariadbd.err" | tail -n 20
		notok "host: mariadbd started"
		host_stop
		rm -rf "$t"
		return
	fi
	for round in 1 2; do
		host_round "$t/real" "$round"
		for s in "${steps[@]}"; do
			if [ "${s%% *}" = 0 ]; then ok "host: ${s#* }"; else notok "host: ${s#* }"; fi
		done
		[ "${steps[-1]%% *}" = 0 ] || break
	done
	grep -A 12 'got signal' "$t/real/mariadbd.err" | indent || true
	host_stop
	# The mutants this check must kill (db_mutants builds the others).
	for p in "$ROOT"/tests/db/mutants/*.patch; do
		[ -e "$p" ] || continue
		[ "$(db_mutant_check "$p")" = host-drop ] || continue
		host_mutant "$p"
	done
	[ -z "${DB_HOST_KEEP:-}" ] || { echo "# kept $t"; return; }
	rm -rf "$t"
}

# db_bookworm: postgresql-15-snowflake and mariadb-plugin-snowflake for
# Debian 12, built on this Debian 12 host (PostgreSQL 15 and MariaDB 10.11's
# development packages, debhelper and lintian: scripts/deps.sh) with
# dpkg-buildpackage against the deb stage's libsnowflake1 and
# libsnowflake-dev, installed with dpkg into overlays on /usr, /etc and /var
# in a mount namespace of its own (upper layers on a tmpfs, gone with it:
# the host is not changed), and checked by lintian.  No guest: the packages'
# functions run on Debian 13's PostgreSQL 17 and MariaDB 11.8 in the guest
# (tests/db/lib.sh), and the MariaDB functions on this host's 10.11 above.
db_bookworm() {
	local t version debs=() p f start
	version=$(cat "$ROOT/VERSION")
	db_debs "$version"
	if [ "${#debs[@]}" -ne 5 ]; then
		notok "bookworm: no libsnowflake1 and libsnowflake-dev of $version (build/deb or build/debs)"
		return
	fi
	start=$(now)
	t=$OUT/bookworm
	rm -rf "$t"
	mkdir -p "$t/src" "$t/debs" "$t/ovl"
	cp "${debs[0]}" "${debs[1]}" "$t/debs/"
	cp -a "$ROOT/clients/postgresql" "$ROOT/clients/mariadb" "$t/src/"
	(cd "$t/src" && rm -rf postgresql/*.o postgresql/*.so postgresql/*.bc postgresql/results mariadb/*.so)
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	if unshare --mount --fork -- sh -ec '
		T=$1
		mount --make-rprivate /
		mount -t tmpfs tmpfs "$T/ovl"
		for d in usr etc var; do
			mkdir -p "$T/ovl/$d.u" "$T/ovl/$d.w"
			mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/ovl/$d.u,workdir=$T/ovl/$d.w" "/$d"
		done
		DEBIAN_FRONTEND=noninteractive dpkg -i "$T"/debs/*.deb
		cd "$T/src/postgresql" && pg_buildext updatecontrol && dpkg-buildpackage -us -uc -b
		cd "$T/src/mariadb" && dpkg-buildpackage -us -uc -b' sh "$t" >"$t/build.log" 2>&1; then
		ok "bookworm: dpkg-buildpackage -us -uc -b of clients/postgresql and clients/mariadb on this Debian 12 host ($(($(now) - start)) s)"
	else
		tail -n 30 "$t/build.log" | indent
		notok "bookworm: dpkg-buildpackage on this host (log: ${t#"$ROOT"/}/build.log)"
		return
	fi
	for p in postgresql-15-snowflake mariadb-plugin-snowflake; do
		f=$(find "$t/src" -maxdepth 1 -name "${p}_${version}_*.deb" | sed -n 1p)
		check "bookworm: ${p}_${version} built" test -n "$f"
	done
	f=$(find "$t/src" -maxdepth 1 -name "postgresql-15-snowflake_${version}_*.deb" | sed -n 1p)
	[ -z "$f" ] || check "bookworm: postgresql-15-snowflake ships snowflake.so for 15 and depends on libsnowflake1" \
		sh -c "dpkg-deb -c '$f' | grep ' ./usr/lib/postgresql/15/lib/snowflake.so$' >/dev/null &&
			dpkg-deb -f '$f' Depends | grep -q 'libsnowflake1' && dpkg-deb -f '$f' Depends | grep -q 'postgresql-15'"
	lintian -I -E --pedantic "$t"/src/*.changes >"$t/lintian.log" 2>&1 || true
	lintian_check "$t/lintian.log" "bookworm: lintian: no error in postgresql-15-snowflake, mariadb-plugin-snowflake"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	# shellcheck source=tests/lib/lib.sh
	. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
	db_host
	echo "db-host: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
fi
