# shellcheck shell=bash
# The database guest of the db stage (tests/db/run.sh) and of P9
# (scripts/bench-db.sh): a Debian 12 root with PostgreSQL 15, MariaDB 10.11
# and the snowflake packages installed with apt, booted with systemd as PID
# 1 on the real module.  Source it after tests/lib/lib.sh, tests/deb/lib.sh
# and tests/lib/vm.sh, with OUT set (the work directory).
#
# Two cached roots (tests/db/root.sh), made from the deb lane's
# (tests/deb/root.sh):
#   - the servers' root (build/db/base-KEY.tar.zst): + postgresql-15,
#     mariadb-server; what the guest boots;
#   - the build root (build/db/build-KEY.tar.zst): the servers' root + the
#     Build-Depends of clients/postgresql and clients/mariadb, where their
#     Debian packages are built (kept out of the guest: clang and LLVM,
#     which postgresql-server-dev-15 brings, are 500 MB).

DB_RUN_PKGS=(postgresql-15 mariadb-server procps)
DB_BUILD_PKGS=(postgresql-server-dev-all postgresql-server-dev-15 libmariadb-dev debhelper
	build-essential pkgconf)
# apt's downloads, apart from the deb stage's (build/deb/archives): this
# stage and its roots' prefetch run beside it, and apt locks its archives.
DEB_ARCHIVES=$BUILD/db/archives

# db_tarball NAME FROM PKG...: FROM with PKG installed with apt, cached as
# $BUILD/db/NAME-KEY.tar.zst (KEY: FROM's name and the packages); its path
# on stdout, "# ..." lines on stderr.
db_tarball() {
	local name=$1 from=$2 key tb start
	shift 2
	key=$(printf '%s\n' "${from##*/}" "$@" | sha256sum | cut -c1-12)
	tb=$BUILD/db/$name-$key.tar.zst
	if [ ! -s "$tb" ]; then
		start=$(now)
		rm -rf "$BUILD/db/mk"
		mkdir -p "$BUILD/db/mk" "$DEB_ARCHIVES/partial"
		tar -C "$BUILD/db/mk" --zstd -xf "$from"
		cp -L /etc/resolv.conf "$BUILD/db/mk/etc/resolv.conf"
		db_no_start "$BUILD/db/mk" 1
		R=$BUILD/db/mk apt_in "$@" >"$BUILD/db/$name.log" 2>&1 || {
			tail -n 30 "$BUILD/db/$name.log" | indent >&2
			echo "# apt-get install $* failed (log: ${BUILD#"$ROOT"/}/db/$name.log)" >&2
			return 1
		}
		db_no_start "$BUILD/db/mk" 0
		tar -C "$BUILD/db/mk" --zstd -cf "$tb.tmp" . && mv "$tb.tmp" "$tb"
		rm -rf "$BUILD/db/mk"
		find "$BUILD/db" -maxdepth 1 -name "$name-*.tar.zst" ! -path "$tb" -delete
		echo "# made ${tb#"$ROOT"/}: + $* ($(($(now) - start)) s)" >&2
	fi
	echo "$tb"
}

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

# db_debs VERSION: debs=(libsnowflake1 libsnowflake-dev snowflake-tools
# snowflake-dkms), from build/deb or else build/debs, all four or none.
db_debs() {
	local d p f
	for d in "$BUILD/deb" "$BUILD/debs"; do
		debs=()
		for p in libsnowflake1 libsnowflake-dev snowflake-tools snowflake-dkms; do
			f=$(find "$d" -maxdepth 1 -name "${p}_${1}_*.deb" 2>/dev/null | sed -n 1p)
			[ -z "$f" ] || debs+=("$f")
		done
		[ "${#debs[@]}" -ne 4 ] || return 0
	done
	debs=()
}

# db_mutants: every defect found in the extension, brought back by a
# small patch (tests/db/mutants/*.patch, against the repository): each
# built with PGXS in the build root (db_root's, unpacked) into
# $OUT/mutants/NAME.so, which tests/db/guest.sh puts in place of the
# installed snowflake.so and runs pg_regress on: the mutant must fail it,
# in the test its header names.  A patch that no longer applies or builds
# is a failure.
db_mutants() {
	local p m mr=$BUILD/db/build-root/root/mut
	rm -rf "$OUT/mutants"
	mkdir -p "$OUT/mutants"
	for p in "$ROOT"/tests/db/mutants/*.patch; do
		[ -e "$p" ] || continue
		m=$(basename "$p" .patch)
		rm -rf "$mr"
		mkdir -p "$mr/clients"
		cp -a "$ROOT/clients/postgresql" "$mr/clients/"
		rm -rf "$mr"/clients/postgresql/{*.o,*.so,*.bc,results}
		if patch -d "$mr" -p1 <"$p" >"$OUT/mutant-$m.log" 2>&1 &&
			R=$BUILD/db/build-root inroot sh -c \
				"make -C /root/mut/clients/postgresql PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config" \
				>>"$OUT/mutant-$m.log" 2>&1; then
			cp "$mr/clients/postgresql/snowflake.so" "$OUT/mutants/$m.so"
			ok "mutant $m: applies and builds"
		else
			tail -n 10 "$OUT/mutant-$m.log" | indent
			notok "mutant $m: does not apply or build (log: ${OUT#"$ROOT"/}/mutant-$m.log)"
		fi
	done
	rm -rf "$mr"
}

# db_root KVER R: R, the guest's root: the servers' root with the deb
# stage's packages (DKMS builds the module for KVER) and
# postgresql-15-snowflake and mariadb-plugin-snowflake, built in the build
# root from clients/ and copied to $OUT; the servers' users in the group
# snowflake.  ok/notok lines; returns 1 when the root is not usable.
db_root() {
	local kver=$1 r=$2 version debs=() p f rootout base bld start c built=() lintian_pid
	version=$(cat "$ROOT/VERSION")
	# The deb stage's packages (build/deb), else `make deb`'s (build/debs),
	# made now when neither has them (`make bench` from a fresh clone).
	db_debs "$version"
	if [ "${#debs[@]}" -ne 4 ]; then
		echo "# no packages of $version in build/deb or build/debs: make deb"
		make -C "$ROOT" deb >"$OUT/make-deb.log" 2>&1 || tail -n 20 "$OUT/make-deb.log" | indent
		db_debs "$version"
	fi
	if [ "${#debs[@]}" -ne 4 ]; then
		notok "no snowflake packages of $version (the deb stage's or make deb's)"
		return 1
	fi
	start=$(now)
	rootout=$("$ROOT/tests/db/root.sh" "$kver" 2>&1) || true
	base=$(sed -n 's/^base=//p' <<<"$rootout")
	bld=$(sed -n 's/^build=//p' <<<"$rootout")
	if [ -z "$base" ] || [ -z "$bld" ]; then
		indent <<<"$rootout"
		notok "the roots with PostgreSQL 15 and MariaDB (tests/db/root.sh)"
		return 1
	fi
	grep '^# made' <<<"$rootout" || true
	ok "roots with ${DB_RUN_PKGS[*]}, and for the build ${DB_BUILD_PKGS[*]} ($(($(now) - start)) s)"

	# The packages, built where their Build-Depends are.
	rm -rf "$BUILD/db/build-root"
	mkdir -p "$BUILD/db/build-root/root/debs" "$BUILD/db/build-root/root/src"
	tar -C "$BUILD/db/build-root" --zstd -xf "$bld"
	cp -L /etc/resolv.conf "$BUILD/db/build-root/etc/resolv.conf"
	cp "${debs[1]}" "$BUILD/db/build-root/root/debs/"
	cp "${debs[0]}" "$BUILD/db/build-root/root/debs/"
	cp -a "$ROOT/clients/postgresql" "$ROOT/clients/mariadb" "$BUILD/db/build-root/root/src/"
	(cd "$BUILD/db/build-root/root/src" && rm -rf postgresql/*.o postgresql/*.so postgresql/*.bc \
		postgresql/results mariadb/*.so)
	R=$BUILD/db/build-root apt_in /root/debs/"${debs[0]##*/}" /root/debs/"${debs[1]##*/}" \
		>"$OUT/build-deps.log" 2>&1 ||
		{
			tail -n 20 "$OUT/build-deps.log" | indent
			notok "apt-get install libsnowflake1 libsnowflake-dev into the build root"
			return 1
		}
	for c in postgresql mariadb; do
		start=$(now)
		if R=$BUILD/db/build-root inroot sh -c "cd /root/src/$c && dpkg-buildpackage -us -uc -b" \
			>"$OUT/build-$c.log" 2>&1; then
			ok "clients/$c: dpkg-buildpackage -us -uc -b in a Debian 12 root ($(($(now) - start)) s)"
		else
			tail -n 30 "$OUT/build-$c.log" | indent
			notok "clients/$c: dpkg-buildpackage (log: ${OUT#"$ROOT"/}/build-$c.log)"
		fi
	done
	db_mutants
	for p in postgresql-15-snowflake mariadb-plugin-snowflake; do
		f=$(find "$BUILD/db/build-root/root/src" -maxdepth 1 -name "${p}_${version}_*.deb" | sed -n 1p)
		if [ -n "$f" ]; then
			cp "$f" "$OUT/"
			built+=("$OUT/${f##*/}")
		else
			notok "no ${p}_${version}_*.deb"
		fi
	done
	# lintian (half a minute) runs while the guest's root is made.
	rm -rf "$OUT/lintian"
	mkdir -p "$OUT/lintian"
	cp "$BUILD"/db/build-root/root/src/*.changes "$BUILD"/db/build-root/root/src/*.deb \
		"$BUILD"/db/build-root/root/src/*.buildinfo "$OUT/lintian/" 2>/dev/null || true
	rm -rf "$BUILD/db/build-root"
	[ "${#built[@]}" -eq 2 ] || return 1
	lintian -I -E --pedantic "$OUT"/lintian/*.changes >"$OUT/lintian.log" 2>&1 &
	lintian_pid=$!

	# The guest's root: everything installed with apt, as a user does.
	rm -rf "$r"
	mkdir -p "$r/root/debs"
	tar -C "$r" --zstd -xf "$base"
	cp -L /etc/resolv.conf "$r/etc/resolv.conf"
	cp "${debs[@]}" "${built[@]}" "$r/root/debs/"
	db_no_start "$r" 1
	start=$(now)
	if R=$r apt_in "${debs[@]/#*\//\/root\/debs\/}" "${built[@]/#*\//\/root\/debs\/}" \
		>"$OUT/install.log" 2>&1; then
		ok "apt-get install ./libsnowflake1 ./snowflake-tools ./snowflake-dkms ./postgresql-15-snowflake ./mariadb-plugin-snowflake (and libsnowflake-dev) ($(($(now) - start)) s)"
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
	sed -i '/running with root privileges is not recommended/d' "$OUT/lintian.log"
	indent <"$OUT/lintian.log"
	check "lintian: no error in postgresql-15-snowflake, mariadb-plugin-snowflake" \
		sh -c "! grep -q '^E: ' '$OUT/lintian.log'"
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
	cp -a "$ROOT/clients/postgresql" "$ov/usr/local/share/sf-db/postgresql"
	# The extension's mutants (db_mutants), when this run built them.
	if compgen -G "$OUT/mutants/*.so" >/dev/null; then
		mkdir -p "$ov/usr/local/share/sf-db/mutants"
		cp "$OUT"/mutants/*.so "$ov/usr/local/share/sf-db/mutants/"
	fi
	# The documents whose SQL examples run there.
	cp "$ROOT/README.md" "$ROOT/docs/databases.md" "$ov/usr/local/share/sf-db/"
	# P9's program (scripts/bench-db.sh), which the db stage runs once.
	install -m 0755 "$ROOT/bench/db/p9-guest.sh" "$ov/usr/local/share/sf-db/p9-guest.sh"
	deb_guest_initramfs "$r" "$ov" "$img"
	echo "# initramfs: $(($(stat -c %s "$img") >> 20)) MiB"
	# Two vCPUs: the concurrent sessions of tests/db/guest.sh overlap.
	VM_SYSTEMD_CPUS=2 vm_boot_systemd "$kver" "$img" "$log" "$timeout" || return 1
	rm -f "$img"
}
