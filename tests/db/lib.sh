# shellcheck shell=bash
# The database guest of the db stage (tests/db/run.sh) and of P9
# (scripts/bench-db.sh): Debian 13 (trixie) with PostgreSQL 17, MariaDB 11.8
# and the snowflake packages installed with apt, booted with systemd as PID
# 1 on trixie's own kernel and the module DKMS built for it.  Source it
# after tests/lib/lib.sh, tests/deb/lib.sh and tests/lib/vm.sh, with OUT set
# (the work directory).
#
# The root is the dkms-trixie stage's (tests/dkms-suite/root.sh trixie 17
# --mariadb: the trixie root with postgresql-17, mariadb-server, their
# development packages and the packages' Build-Depends, cached unpacked),
# under an overlay ($OUT/root, writes in $OUT/upper): no copy, no root of
# its own.  The client packages are built there too; what a boot does not
# need (clang and LLVM, the headers) is left out of the guest's initramfs.

DB_SUITE=trixie
DB_PG=17
DB_RUN_PKGS=(procps acl)
# apt's downloads, apart from the deb stage's (build/deb/archives): apt
# locks its archives.
DEB_ARCHIVES=$BUILD/db/archives

# db_no_start ROOT 1|0: no service starts in the chroot while apt runs
# (policy-rc.d says 101), or the policy removed.
db_no_start() {
	if [ "$2" = 1 ]; then
		printf '#!/bin/sh\nexit 101\n' >"$1/usr/sbin/policy-rc.d"
		chmod 0755 "$1/usr/sbin/policy-rc.d"
	else
		rm -f "$1/usr/sbin/policy-rc.d"
	fi
}

# db_kver: the guest's kernel: DB_KERNEL, else trixie's own (suite_kver,
# scripts/kroot.sh; its image in build/kroots/images/).
db_kver() {
	if [ -n "${DB_KERNEL:-}" ]; then echo "$DB_KERNEL"; else suite_kver "$DB_SUITE"; fi
}

# db_clean R: the overlay of db_root unmounted, it and its upper removed.
db_clean() {
	db_umount "$1"
	rm -rf --one-file-system "$1" "$OUT/upper" "$OUT/ovl"
}

# db_umount R: the overlay of db_root unmounted (nothing when not mounted).
db_umount() {
	if mountpoint -q "$1" 2>/dev/null; then
		umount "$1" 2>/dev/null || umount -l "$1"
	fi
}

# db_debs VERSION: debs=(libsnowflake1 libsnowflake-dev snowflake-tools
# snowflake-dkms snowflake-agent), from build/deb or else build/debs, all
# five or none.
db_debs() {
	local d p f
	for d in "$BUILD/deb" "$BUILD/debs"; do
		debs=()
		for p in libsnowflake1 libsnowflake-dev snowflake-tools snowflake-dkms snowflake-agent; do
			f=$(find "$d" -maxdepth 1 -name "${p}_${1}_*.deb" 2>/dev/null | sed -n 1p) || true
			[ -z "$f" ] || debs+=("$f")
		done
		[ "${#debs[@]}" -ne 5 ] || return 0
	done
	debs=()
}

# db_mutants R: every defect found in the extension and the MariaDB
# functions, brought back by a small patch (tests/db/mutants/*.patch,
# against the repository), built in the guest's root R (before the boot):
# by the check its preamble's Check: line names (db_mutant_check),
#   pg_regress: clients/postgresql with PGXS, its snowflake.so;
#   mariadb-kill, mariadb-nonstrict: clients/mariadb with its Makefile
#     (libsnowflake-dev, libmariadb-dev), its snowflake_udf.so;
#   host-drop: none here (tests/db/host.sh builds and runs it on the host);
# into $OUT/mutants/NAME.so, the check's name in $OUT/mutants/NAME.check.
# tests/db/guest.sh puts each in place of the installed library and runs
# that check alone: the mutant must fail it, for its defect's reason; then
# the package's library back.  A patch that no longer applies or builds, or
# names no known check, is a failure.
db_mutants() {
	local r=$1 p m c d lib mr=$1/root/mut
	rm -rf "$OUT/mutants"
	mkdir -p "$OUT/mutants"
	for p in "$ROOT"/tests/db/mutants/*.patch; do
		[ -e "$p" ] || continue
		m=$(basename "$p" .patch)
		c=$(db_mutant_check "$p")
		case $c in
		pg_regress) d=postgresql lib=snowflake.so ;;
		mariadb-kill | mariadb-nonstrict) d=mariadb lib=snowflake_udf.so ;;
		host-drop) continue ;;
		*)
			notok "mutant $m: its preamble names no known check (Check: '$c')"
			continue
			;;
		esac
		rm -rf "$mr"
		mkdir -p "$mr/clients"
		cp -a "$ROOT/clients/$d" "$mr/clients/"
		rm -rf "$mr"/clients/postgresql/{*.o,*.so,*.bc,results} "$mr"/clients/mariadb/*.so
		if patch -d "$mr" -p1 <"$p" >"$OUT/mutant-$m.log" 2>&1 &&
			R=$r inroot sh -c "if [ $d = postgresql ]; then
					make -C /root/mut/clients/postgresql PG_CONFIG=/usr/lib/postgresql/$DB_PG/bin/pg_config
				else
					make -C /root/mut/clients/mariadb snowflake_udf.so
				fi" >>"$OUT/mutant-$m.log" 2>&1; then
			cp "$mr/clients/$d/$lib" "$OUT/mutants/$m.so"
			echo "$c" >"$OUT/mutants/$m.check"
			ok "mutant $m: applies and builds ($lib, for $c)"
		else
			tail -n 10 "$OUT/mutant-$m.log" | indent
			notok "mutant $m: does not apply or build (log: ${OUT#"$ROOT"/}/mutant-$m.log)"
		fi
	done
	rm -rf "$mr"
}

# db_root KVER R: R, the guest's root, mounted: an overlay on the
# dkms-trixie root (db_umount R unmounts it), with the deb stage's packages
# (DKMS builds the module for KVER, whose headers that root has) and
# postgresql-17-snowflake and mariadb-plugin-snowflake, built there from
# clients/ with dpkg-buildpackage (pg_buildext), checked by lintian,
# installed with apt; the servers' users in the group snowflake.  ok/notok
# lines; returns 1 when the root is not usable.
db_root() {
	local kver=$1 r=$2 version debs=() p f rootout lower start c built=() lintian_pid src
	version=$(cat "$ROOT/VERSION")
	# The deb stage's packages (build/deb), else `make deb`'s (build/debs),
	# made now when neither has them (`make bench` from a fresh clone).
	db_debs "$version"
	if [ "${#debs[@]}" -ne 5 ]; then
		echo "# no packages of $version in build/deb or build/debs: make deb"
		make -C "$ROOT" deb >"$OUT/make-deb.log" 2>&1 || tail -n 20 "$OUT/make-deb.log" | indent
		db_debs "$version"
	fi
	if [ "${#debs[@]}" -ne 5 ]; then
		notok "no snowflake packages of $version (the deb stage's or make deb's)"
		return 1
	fi
	start=$(now)
	rootout=$("$ROOT/tests/dkms-suite/root.sh" "$DB_SUITE" "$DB_PG" --mariadb 2>&1) || true
	lower=$(sed -n 's/^root=//p' <<<"$rootout")
	if [ -z "$lower" ] || [ ! -f "$lower.done" ]; then
		indent <<<"$rootout"
		notok "the $DB_SUITE root with PostgreSQL $DB_PG and MariaDB (tests/dkms-suite/root.sh)"
		return 1
	fi
	grep '^# made' <<<"$rootout" || true
	db_umount "$r"
	rm -rf --one-file-system "$r" "$OUT/upper" "$OUT/ovl"
	mkdir -p "$r" "$OUT/upper" "$OUT/ovl" "$DEB_ARCHIVES/partial"
	if ! mount -t overlay overlay -o "lowerdir=$lower,upperdir=$OUT/upper,workdir=$OUT/ovl" "$r"; then
		notok "mount -t overlay on ${lower#"$ROOT"/}"
		return 1
	fi
	ok "the $DB_SUITE root with PostgreSQL $DB_PG and MariaDB: an overlay on ${lower#"$ROOT"/} ($(($(now) - start)) s)"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf"
	mkdir -p "$r/root/debs" "$r/root/src"
	cp "${debs[@]}" "$r/root/debs/"
	cp -a "$ROOT/clients/postgresql" "$ROOT/clients/mariadb" "$r/root/src/"
	(cd "$r/root/src" && rm -rf postgresql/*.o postgresql/*.so postgresql/*.bc \
		postgresql/results mariadb/*.so)
	db_no_start "$r" 1
	# The packages, built where their Build-Depends are (this root), against
	# the deb stage's libsnowflake-dev.
	start=$(now)
	R=$r apt_in /root/debs/"${debs[0]##*/}" /root/debs/"${debs[1]##*/}" "${DB_RUN_PKGS[@]}" libhiredis-dev \
		>"$OUT/build-deps.log" 2>&1 ||
		{
			tail -n 20 "$OUT/build-deps.log" | indent
			notok "apt-get install libsnowflake1 libsnowflake-dev ${DB_RUN_PKGS[*]} libhiredis-dev"
			return 1
		}
	for c in postgresql mariadb; do
		start=$(now)
		src="cd /root/src/$c"
		[ "$c" = postgresql ] && src="$src && pg_buildext updatecontrol"
		if R=$r inroot sh -c "$src && dpkg-buildpackage -us -uc -b" \
			>"$OUT/build-$c.log" 2>&1; then
			ok "clients/$c: dpkg-buildpackage -us -uc -b in the Debian 13 root ($(($(now) - start)) s)"
		else
			tail -n 30 "$OUT/build-$c.log" | indent
			notok "clients/$c: dpkg-buildpackage (log: ${OUT#"$ROOT"/}/build-$c.log)"
		fi
	done
	db_mutants "$r"
	# snowflake-agent for the guest's check of its MariaDB store: the deb
	# stage's package is built on Debian 12 and does not install here (it
	# depends on bookworm's libhiredis0.14; trixie has libhiredis1.1.0), so
	# the agent is built here from this tree, as tests/agent-guest does:
	# with hiredis and trixie's libmariadb, without etcd and ZooKeeper.
	start=$(now)
	rm -rf "$r/root/agent"
	mkdir -p "$r/root/agent"
	cp -a "$ROOT/userspace" "$ROOT/uapi" "$ROOT/VERSION" "$r/root/agent/"
	# shellcheck disable=SC2016 # the inner shell expands $(...) itself
	if R=$r inroot sh -c 'cd /root/agent && make -s -C userspace OUT=/root/agent/out /root/agent/out/libsnowflake.a &&
		gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -DAG_NO_ETCD -DAG_NO_ZOOKEEPER \
			-DSNOWFLAKE_VERSION="\"$(cat VERSION)\"" -Iuserspace/include -Iuapi -o /usr/local/sbin/snowflake-agent \
			userspace/agent/*.c out/libsnowflake.a -lhiredis $(pkg-config --libs libmariadb)' \
		>"$OUT/build-agent.log" 2>&1; then
		ok "snowflake-agent built in the Debian 13 root (hiredis, libmariadb $(chroot "$r" pkg-config --modversion libmariadb 2>/dev/null); $(($(now) - start)) s)"
	else
		tail -n 20 "$OUT/build-agent.log" | indent
		notok "snowflake-agent: the build in the Debian 13 root (log: ${OUT#"$ROOT"/}/build-agent.log)"
	fi
	rm -rf "$r/root/agent"
	for p in "postgresql-$DB_PG-snowflake" mariadb-plugin-snowflake; do
		f=$(find "$r/root/src" -maxdepth 1 -name "${p}_${version}_*.deb" | sed -n 1p)
		if [ -n "$f" ]; then
			cp "$f" "$OUT/"
			cp "$f" "$r/root/debs/"
			built+=("$OUT/${f##*/}")
		else
			notok "no ${p}_${version}_*.deb"
		fi
	done
	# lintian (half a minute) runs while the packages are installed.
	rm -rf "$OUT/lintian"
	mkdir -p "$OUT/lintian"
	cp "$r"/root/src/*.changes "$r"/root/src/*.deb "$r"/root/src/*.buildinfo "$OUT/lintian/" 2>/dev/null || true
	rm -rf "$r/root/src"
	[ "${#built[@]}" -eq 2 ] || return 1
	lintian -I -E --pedantic "$OUT"/lintian/*.changes >"$OUT/lintian.log" 2>&1 &
	lintian_pid=$!

	# Everything installed with apt, as a user does.
	start=$(now)
	debs=("${debs[@]:0:4}")
	if R=$r apt_in "${debs[@]/#*\//\/root\/debs\/}" "${built[@]/#*\//\/root\/debs\/}" \
		>"$OUT/install.log" 2>&1; then
		ok "apt-get install ./libsnowflake1 ./snowflake-tools ./snowflake-dkms ./postgresql-$DB_PG-snowflake ./mariadb-plugin-snowflake (and libsnowflake-dev) ($(($(now) - start)) s)"
	else
		tail -n 30 "$OUT/install.log" | indent
		notok "apt-get install of the packages (log: ${OUT#"$ROOT"/}/install.log)"
		wait "$lintian_pid" || true
		return 1
	fi
	db_no_start "$r" 0
	check "$kver: DKMS built snowflake.ko" sh -c "find '$r/lib/modules/$kver/updates' -name 'snowflake.ko*' | grep -q ."
	# What docs/databases.md tells a host to do: the servers' users in the
	# group snowflake.
	check "usermod -aG snowflake postgres" chroot "$r" usermod -aG snowflake postgres
	check "usermod -aG snowflake mysql" chroot "$r" usermod -aG snowflake mysql
	wait "$lintian_pid" || true
	lintian_check "$OUT/lintian.log" "lintian: no error in postgresql-$DB_PG-snowflake, mariadb-plugin-snowflake"
}

# db_boot KVER R SCRIPT TAG DESC TIMEOUT LOG [SHAREFILE=CONTENT...]: R booted
# with systemd, SCRIPT run as TAG-test.service after the servers, each
# SHAREFILE into /usr/local/share/sf-db/.  qemu's exit code in $rc.
db_boot() {
	local kver=$1 r=$2 script=$3 tag=$4 desc=$5 timeout=$6 log=$7 ov=$OUT/overlay img=$OUT/root.cpio kv
	shift 7
	rm -rf "$ov"
	mkdir -p "$ov/usr/local/share/sf-db"
	deb_guest_unit "$ov" "$tag" "$script" "$desc" \
		"snowflake-floor.service postgresql.service mariadb.service network.target"
	for kv in "$@"; do
		printf '%s\n' "${kv#*=}" >"$ov/usr/local/share/sf-db/${kv%%=*}"
	done
	echo "$DB_PG" >"$ov/usr/local/share/sf-db/pg"
	cp -a "$ROOT/clients/postgresql" "$ov/usr/local/share/sf-db/postgresql"
	# The mutants (db_mutants), when this run built them, with their checks.
	if compgen -G "$OUT/mutants/*.so" >/dev/null; then
		mkdir -p "$ov/usr/local/share/sf-db/mutants"
		cp "$OUT"/mutants/*.so "$OUT"/mutants/*.check "$ov/usr/local/share/sf-db/mutants/"
	fi
	# The documents whose SQL examples run there.
	cp "$ROOT/README.md" "$ROOT/docs/databases.md" "$ov/usr/local/share/sf-db/"
	# P9's program (scripts/bench-db.sh), which the db stage runs once.
	install -m 0755 "$ROOT/bench/db/p9-guest.sh" "$ov/usr/local/share/sf-db/p9-guest.sh"
	# Without what only the builds needed (clang and LLVM's tools, the
	# headers) and the kernel's own modules (the guest loads snowflake.ko
	# only): the initramfs is unpacked into the guest's RAM.  libLLVM and
	# the bitcode stay: PostgreSQL's JIT (llvmjit.so) uses them for a large
	# query.
	deb_guest_initramfs "$r" "$ov" "$img" ./usr/include './usr/lib/llvm-[0-9]*' \
		'./usr/lib/x86_64-linux-gnu/libclang*' \
		'./usr/bin/*-lto-dump-*' './usr/lib/modules/*/kernel' ./var/lib/dkms ./root/mut
	echo "# initramfs: $(($(stat -c %s "$img") >> 20)) MiB"
	# Two vCPUs: the concurrent sessions of tests/db/guest.sh overlap.
	# 4 GiB: the initramfs (1 GiB) is unpacked into a rootfs that may hold
	# half of what it leaves (3 GiB was short).
	VM_SYSTEMD_CPUS=2 VM_SYSTEMD_MEM=4096 vm_boot_systemd "$kver" "$img" "$log" "$timeout" || return 1
	rm -f "$img"
}
