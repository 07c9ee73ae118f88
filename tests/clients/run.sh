#!/bin/bash
# The clients stage of `make check`: the clients of clients/ as packages of
# their ecosystems (docs/clients.md), each installed with its own tool from a
# copy of the repository's clients/ and tested with its own test runner:
#
#   python  pip install --no-build-isolation --no-index into a venv
#           (--system-site-packages: Debian's setuptools and pytest), pytest
#   php     composer install with a path repository, offline
#           (COMPOSER_DISABLE_NETWORK, no packagist), PHPUnit (Debian's)
#   node    npm pack + npm install --offline of the tarball into a scratch
#           project, node --test; tsc --strict on a program using its types
#   go      go test in the module; a scratch module that requires it through
#           a replace builds and runs (GOPROXY=off, GOFLAGS=-mod=mod)
#   java    mvn -o install against Debian's Maven repository
#           (/usr/share/maven-repo; a private local repository in build/),
#           JUnit 5 through Surefire; a program compiled against the
#           installed jar runs
#
# The Go client also runs against the real devices: its static test binary
# (-tags guest) in a busybox guest of the default kernel with the module
# (go_guest below).  The other runtimes do not fit the busybox guests, so
# they, and the Go client's host tests, read recorded streams on the host: 10,000 IDs of the default layout (now, datacenter 1,
# worker 3) and 2,000 UUIDv7s of /dev/uuidv7's layout, each from a regular
# file and from a FIFO written in 13-byte pieces (reads that end inside an ID
# or a UUID); decoding is compared with the CLI's `snowflake decode --json`
# (the default layout and another one; UUIDv7 times).  The error paths are
# real: a missing path (ENOENT), a mode-000 file (EACCES: the tests run
# without CAP_DAC_OVERRIDE, setpriv below), a listening socket, whose read(2)
# fails with ENOTCONN as the refusing device's does.  Every test case counts
# once per stream (file, fifo); a skipped one counts as failed.
# Prints "clients: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

# Root reads a mode-000 file (CAP_DAC_OVERRIDE): the EACCES tests need a
# process without it.  Dropping both capabilities from the bounding set
# leaves root every other right (its files are its own).
if [ "$(id -u)" -eq 0 ] && [ -z "${SF_CLIENTS_NO_DAC:-}" ] && command -v setpriv >/dev/null; then
	exec env SF_CLIENTS_NO_DAC=1 setpriv --bounding-set=-dac_override,-dac_read_search -- "$0" "$@"
fi

OUT=$BUILD/clients
SRC=$OUT/src
VERSION=$(cat "$ROOT/VERSION")
t0=$(now)
rm -rf "$OUT"
mkdir -p "$OUT"
finish() {
	echo "clients: $pass passed, $fail failed ($(($(now) - t0)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

if ! make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/snowflake" >"$OUT/make.log" 2>&1; then
	indent <"$OUT/make.log"
	notok "building the CLI"
	finish
fi
CLI=$BUILD/userspace/snowflake

# A copy of clients/: the tools write beside the sources (setuptools'
# build/ and *.egg-info, Maven's target/ is moved to build/ by the pom).
mkdir -p "$SRC"
cp -a "$ROOT/clients/." "$SRC/"

# ---- the recorded streams ----------------------------------------------------
# 10,000 IDs of now, datacenter 1, worker 3: 41/5/5/12 from Twitter's epoch;
# 2,000 UUIDv7s: 48-bit unix_ts_ms, version 7, a 42-bit counter (12 bits in
# rand_a, 30 in rand_b) seeded below 2^41 each millisecond, variant 10, 32
# random bits; a new millisecond every 700.
python3 - "$OUT" <<'PY'
import os, struct, sys, time, uuid
out = sys.argv[1]
ms = int(time.time() * 1000) - 1288834974657
ids, seq = [], 0
for _ in range(10000):
    ids.append(ms << 22 | 1 << 17 | 3 << 12 | seq)
    seq += 1
    if seq == 4096:
        ms, seq = ms + 1, 0
open(out + "/ids.txt", "w").write("".join("%d\n" % i for i in ids))
open(out + "/ids.bin", "wb").write(struct.pack("=%dQ" % len(ids), *ids))
ums = int(time.time() * 1000)
uuids = []
for i in range(2000):
    if i % 700 == 0:
        ums, ctr = ums + 1, int.from_bytes(os.urandom(6), "big") >> 7
    ctr += 1
    v = (ums << 80 | 7 << 76 | (ctr >> 30) << 64 | 2 << 62 | (ctr & (1 << 30) - 1) << 32
         | int.from_bytes(os.urandom(4), "big"))
    uuids.append(uuid.UUID(int=v))
assert all(a.bytes < b.bytes for a, b in zip(uuids, uuids[1:]))
open(out + "/uuids.txt", "w").write("".join("%s\n" % u for u in uuids))
open(out + "/uuids.bin", "wb").write(b"".join(u.bytes for u in uuids))
PY
# The CLI's decoding of a few of them (and of the largest ID a 63-bit layout
# has), with the default layout and with another one (a 1-hour unit: its
# times run past the year 9999, which JSON gives as null).
export CUSTOM_BITS=40/5/6/12 CUSTOM_EPOCH=1000 CUSTOM_UNIT=3600000
mapfile -t sample < <(sed -n '1p;2p;4096p;4097p;$p' "$OUT/ids.txt")
"$CLI" decode --json --bits 41/5/5/12 "${sample[@]}" 9223372036854775807 >"$OUT/decoded.jsonl"
"$CLI" decode --json --epoch "$CUSTOM_EPOCH" --unit "$CUSTOM_UNIT" --bits "$CUSTOM_BITS" \
	"${sample[@]}" 9223372036854775807 >"$OUT/decoded-custom.jsonl"
mapfile -t usample < <(sed -n '1p;700p;701p;$p' "$OUT/uuids.txt")
"$CLI" decode --json "${usample[@]}" >"$OUT/uuids-decoded.jsonl"
# A node for a misc device that is not ours (fuse, or another harmless
# one): every client must refuse it as "not a snowflake device" (issue 24).
for m in fuse loop-control hw_random; do
	[ -r "/sys/class/misc/$m/dev" ] || continue
	FOREIGN_DEVNUM=$(cat "/sys/class/misc/$m/dev")
	mknod -m 0666 "$OUT/foreign" c "${FOREIGN_DEVNUM%:*}" "${FOREIGN_DEVNUM#*:}" && break
done
[ -c "$OUT/foreign" ] || notok "mknod of a foreign misc device for the identity tests (needs root)"
export FOREIGN_DEVICE=$OUT/foreign FOREIGN_DEVNUM
export IDS_FILE=$OUT/ids.txt UUIDS_FILE=$OUT/uuids.txt DECODED=$OUT/decoded.jsonl \
	DECODED_CUSTOM=$OUT/decoded-custom.jsonl UUIDS_DECODED=$OUT/uuids-decoded.jsonl

# streams HOW TAG: SNOWFLAKE_DEVICE and SNOWFLAKE_UUID_DEVICE for a run: the
# files, or FIFOs written in 13-byte pieces by writers whose pids are in
# $writers (stop_writers stops them).
writers=()
streams() {
	local how=$1 tag=$2 f src
	if [ "$how" = file ]; then
		export SNOWFLAKE_DEVICE=$OUT/ids.bin SNOWFLAKE_UUID_DEVICE=$OUT/uuids.bin
		return
	fi
	for src in ids uuids; do
		f=$OUT/fifo.$tag.$src
		rm -f "$f"
		mkfifo "$f"
		python3 -c '
import sys, time
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb", buffering=0) as f:
    for i in range(0, len(data), 13):
        f.write(data[i:i + 13])
        if i % 1300 == 0:
            time.sleep(0.001)
' "$OUT/$src.bin" "$f" &
		writers+=($!)
	done
	export SNOWFLAKE_DEVICE=$OUT/fifo.$tag.ids SNOWFLAKE_UUID_DEVICE=$OUT/fifo.$tag.uuids
}
stop_writers() {
	local p
	for p in "${writers[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	writers=()
}
trap stop_writers EXIT

# results LABEL LOG: count the "ok NAME" / "not ok NAME" / "skip NAME" lines
# of LOG (what the parsers below make of each runner's report).
results() {
	local label=$1 log=$2 st name n=0
	while read -r st name; do
		n=$((n + 1))
		case $st in
		ok) ok "$label: $name" ;;
		skip) notok "$label: $name (skipped: every case must run here)" ;;
		*) notok "$label: $name" ;;
		esac
	done <"$log"
	[ "$n" -gt 0 ] || notok "$label: no test case ran"
}
# junit XML (pytest, PHPUnit, Surefire) -> ok/not ok/skip lines.
junit() {
	python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
for path in sys.argv[1:]:
    for case in ET.parse(path).iter("testcase"):
        kinds = {child.tag for child in case}
        st = "not" if kinds & {"failure", "error"} else "skip" if "skipped" in kinds else "ok"
        print(st, case.get("name"))
PY
}
need() { command -v "$1" >/dev/null || { notok "$1 is missing (scripts/deps.sh installs it)"; return 1; }; }
# version_is LANG FILE: the package's version is VERSION's.
version_is() {
	if grep -qF "$VERSION" "$2"; then
		ok "$1: the package's version is VERSION's ($VERSION)"
	else
		notok "$1: ${2#"$SRC"/} does not say version $VERSION"
	fi
}

# ---- Python -------------------------------------------------------------------
python_client() {
	local py=/usr/bin/python3 venv=$OUT/python/venv how
	mkdir -p "$OUT/python"
	version_is python "$SRC/python/pyproject.toml"
	# Debian's python3 (its setuptools and pytest), whatever python3 is first in PATH.
	if ! "$py" -m venv --system-site-packages "$venv" >"$OUT/python/venv.log" 2>&1 ||
		! PIP_NO_CACHE_DIR=1 "$venv/bin/python" -m pip install --no-build-isolation --no-index \
			"$SRC/python" >"$OUT/python/pip.log" 2>&1; then
		indent <"$OUT/python/pip.log" 2>/dev/null || indent <"$OUT/python/venv.log"
		notok "python: pip install ./clients/python into a venv"
		return
	fi
	ok "python: pip install ./clients/python into a venv ($("$venv/bin/python" -m pip show snowflake-device | sed -n 's/^Version: //p'))"
	for how in file fifo; do
		streams "$how" python
		# From $OUT: the package is the installed one, not src/.
		(cd "$OUT/python" && PYTHONDONTWRITEBYTECODE=1 timeout 120 "$venv/bin/python" -m pytest \
			-p no:cacheprovider -q --junitxml="$OUT/python/$how.xml" "$SRC/python/tests") \
			>"$OUT/python/$how.log" 2>&1 || true
		stop_writers
		if [ -s "$OUT/python/$how.xml" ]; then
			junit "$OUT/python/$how.xml" >"$OUT/python/$how.res"
			! grep -q '^not\|^skip' "$OUT/python/$how.res" || indent <"$OUT/python/$how.log"
			results "python ($how, pytest)" "$OUT/python/$how.res"
		else
			indent <"$OUT/python/$how.log"
			notok "python ($how): pytest did not run"
		fi
	done
}

# ---- Node.js ------------------------------------------------------------------
node_client() {
	local d=$OUT/node proj=$OUT/node/project how tgz
	mkdir -p "$proj"
	version_is node "$SRC/node/package.json"
	# npm pack: the files a registry would get (index.d.ts among them);
	# then an offline install of that tarball into a scratch project.
	printf '{ "name": "scratch", "version": "0.0.0", "private": true }\n' >"$proj/package.json"
	export npm_config_cache=$d/npm-cache npm_config_update_notifier=false npm_config_audit=false \
		npm_config_fund=false
	if ! tgz=$(cd "$d" && npm pack --silent "$SRC/node" 2>"$d/pack.log") ||
		! (cd "$proj" && npm install --offline "$d/$tgz") >"$d/install.log" 2>&1; then
		cat "$d/pack.log" "$d/install.log" 2>/dev/null | indent
		notok "node: npm pack + npm install ./clients/node"
		return
	fi
	ok "node: npm pack + npm install ./clients/node ($tgz: $(tar -tzf "$d/$tgz" | sed 's|^package/||' | sort | tr '\n' ' '))"
	# The types: a program that uses them, checked with tsc --strict.
	if command -v tsc >/dev/null; then
		cat >"$proj/use.ts" <<'EOF'
import { Snowflake, UUIDv7, decode, decodeUUID, toJSONIds, Refused, Parts } from 'snowflake-device';
const sf = new Snowflake();
const ids: bigint[] = sf.next(3);
sf.close();
const p: Parts = decode(ids[0]);
const worker: number = p.worker;
const ms: bigint = p.unix_ms;
const u: string[] = new UUIDv7({ path: '/dev/uuidv7' }).next(1);
const t: number = decodeUUID(u[0]).unix_ms;
const json: string = toJSONIds(ids);
const e: Refused | null = null;
console.log(worker, ms, t, json, e);
EOF
		if (cd "$proj" && tsc --strict --noEmit --target es2020 --module commonjs \
			--moduleResolution node use.ts) >"$d/tsc.log" 2>&1; then
			ok "node: index.d.ts: a program using it passes tsc --strict"
		else
			indent <"$d/tsc.log"
			notok "node: index.d.ts: tsc --strict"
		fi
	else
		notok "node: tsc is missing (scripts/deps.sh installs node-typescript)"
	fi
	# The tests, beside the installed package: require('snowflake-device')
	# is the installed copy.
	cp -r "$SRC/node/test" "$proj/"
	for how in file fifo; do
		streams "$how" node
		(cd "$proj" && timeout 120 node --test --test-reporter=tap test/) >"$d/$how.log" 2>&1 || true
		stop_writers
		sed -n 's/^ok [0-9]* - \(.*\) # SKIP.*/skip \1/p; t; s/^ok [0-9]* - /ok /p; s/^not ok [0-9]* - /not /p' \
			"$d/$how.log" >"$d/$how.res"
		! grep -q '^not\|^skip' "$d/$how.res" || indent <"$d/$how.log"
		results "node ($how, node --test)" "$d/$how.res"
	done
}

# ---- Go -----------------------------------------------------------------------
go_client() {
	local d=$OUT/go proj=$OUT/go/scratch how
	mkdir -p "$proj"
	export GOCACHE=$BUILD/gocache GOPATH=$d/gopath GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on \
		GOTOOLCHAIN=local GOSUMDB=off
	# A module that uses it as a user's would: require + replace to the
	# repository's path, built and run against the recorded stream.
	cat >"$proj/go.mod" <<EOF
module scratch

go 1.19

require snowflake.dev/client v0.0.0

replace snowflake.dev/client => $SRC/go
EOF
	cat >"$proj/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"os"

	snowflake "snowflake.dev/client"
)

func main() {
	sf, err := snowflake.Open("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer sf.Close()
	ids, err := sf.Next(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, _ := snowflake.Decode(ids[0], snowflake.DefaultLayout)
	b, _ := json.Marshal(p)
	fmt.Println(ids[0], ids[1], ids[2])
	fmt.Println(string(b))
}
EOF
	if (cd "$SRC/go" && test -z "$(gofmt -l .)" && go vet ./... && go vet -tags guest ./...) \
		>"$d/vet.log" 2>&1; then
		ok "go: gofmt and go vet are clean"
	else
		(cd "$SRC/go" && gofmt -l .) | indent
		indent <"$d/vet.log"
		notok "go: gofmt -l / go vet"
	fi
	streams file go
	if (cd "$proj" && go build -o "$d/scratch-bin" . && "$d/scratch-bin") >"$d/scratch.log" 2>&1 &&
		[ "$(sed -n 1p "$d/scratch.log")" = "$(head -n 3 "$IDS_FILE" | tr '\n' ' ' | sed 's/ $//')" ] &&
		[ "$(sed -n 2p "$d/scratch.log")" = "$(head -n 1 "$DECODED")" ]; then
		ok "go: a module requiring snowflake.dev/client (replace => clients/go) builds, reads and decodes"
	else
		indent <"$d/scratch.log"
		notok "go: a module requiring snowflake.dev/client (replace => clients/go)"
	fi
	for how in file fifo; do
		streams "$how" go
		(cd "$SRC/go" && timeout 180 go test -count=1 -v ./...) >"$d/$how.log" 2>&1 || true
		stop_writers
		sed -n 's/^--- PASS: \([A-Za-z0-9_]*\).*/ok \1/p; s/^--- FAIL: \([A-Za-z0-9_]*\).*/not \1/p;
			s/^--- SKIP: \([A-Za-z0-9_]*\).*/skip \1/p' "$d/$how.log" >"$d/$how.res"
		! grep -q '^not\|^skip' "$d/$how.res" || indent <"$d/$how.log"
		results "go ($how, go test)" "$d/$how.res"
	done
}

# The Go client against the real devices: Go links static binaries, so its
# test binary (-tags guest: clients/go/guest_test.go) runs in the busybox
# guest of the default kernel with the module (tests/clients/init.sh).
# CLIENTS_GUEST=0 leaves it out.
go_guest() {
	local d=$OUT/guest kver stage rc=0 st name
	[ "${CLIENTS_GUEST:-1}" != 0 ] || return 0
	kver=$(default_kver)
	stage=$d/stage
	mkdir -p "$d"
	if ! vmlinuz_of "$kver" >/dev/null; then
		notok "go (guest $kver): no guest kernel (scripts/deps.sh fetches it)"
		return
	fi
	if ! (build_module "$kver" "$d/mod") >"$d/build.log" 2>&1; then
		tail -n 20 "$d/build.log" | indent
		notok "go (guest $kver): building snowflake.ko"
		return
	fi
	vm_stage "$stage" "$ROOT/tests/clients/init.sh"
	cp "$d/mod/snowflake.ko" "$stage/"
	if ! (cd "$SRC/go" && CGO_ENABLED=0 go test -c -tags guest -o "$stage/client.test" .) \
		>"$d/go-build.log" 2>&1; then
		indent <"$d/go-build.log"
		notok "go (guest $kver): go test -c -tags guest (static)"
		return
	fi
	vm_pack "$stage" "$d/initrd.gz"
	vm_boot "$kver" "$d/initrd.gz" "$d/console.log" "${CLIENTS_GUEST_TIMEOUT:-300}" cat >/dev/null || rc=$?
	tr -d '\r' <"$d/console.log" | sed -n 's/^--- \(PASS\|FAIL\|SKIP\): \([A-Za-z0-9_]*\).*/\1 \2/p' |
		while read -r st name; do
			case $st in
			PASS) echo "ok $name" ;;
			FAIL) echo "not $name" ;;
			*) echo "skip $name" ;;
			esac
		done >"$d/res"
	! grep -q '^not\|^skip' "$d/res" || tr -d '\r' <"$d/console.log" | grep -v '^\[' | indent
	results "go (guest $kver, the real devices, go test)" "$d/res"
	if [ "$(wc -l <"$d/res")" -ne 4 ]; then
		tr -d '\r' <"$d/console.log" | tail -n 30 | indent
		notok "go (guest $kver): 4 test cases should have run (qemu exit $rc)"
	fi
	if ! log_has "$d/console.log" '^SNOWFLAKE-VM-DONE'; then
		notok "go (guest $kver): the guest did not finish (qemu exit $rc; console: ${d#"$ROOT"/}/console.log)"
	fi
	if ! vm_problems "$d/console.log" >"$d/problems.txt"; then
		indent <"$d/problems.txt"
		notok "go (guest $kver): kernel problems on the console"
	fi
}

# ---- PHP ----------------------------------------------------------------------
php_client() {
	local d=$OUT/php proj=$OUT/php/project how
	mkdir -p "$proj"
	version_is php "$SRC/php/composer.json"
	# Offline: the path repository only (copied, not linked), packagist off,
	# no network, no plugins.
	export COMPOSER_HOME=$d/home COMPOSER_CACHE_DIR=$d/cache COMPOSER_DISABLE_NETWORK=1 \
		COMPOSER_NO_INTERACTION=1 COMPOSER_ALLOW_SUPERUSER=1
	cat >"$proj/composer.json" <<EOF
{
    "name": "scratch/app",
    "repositories": [
        { "type": "path", "url": "$SRC/php", "options": { "symlink": false } },
        { "packagist.org": false }
    ],
    "require": { "snowflake-dev/device": "$VERSION" }
}
EOF
	if (cd "$SRC/php" && composer validate --no-check-version --no-check-publish --strict) >"$d/validate.log" 2>&1; then
		ok "php: composer validate clients/php/composer.json"
	else
		indent <"$d/validate.log"
		notok "php: composer validate clients/php/composer.json"
	fi
	if ! (cd "$proj" && composer install --no-plugins --no-progress) >"$d/install.log" 2>&1 ||
		[ ! -f "$proj/vendor/snowflake-dev/device/src/Reader.php" ]; then
		indent <"$d/install.log"
		notok "php: composer install of clients/php (a path repository, offline)"
		return
	fi
	ok "php: composer install of clients/php (a path repository, offline)"
	for how in file fifo; do
		streams "$how" php
		(cd "$proj" && timeout 120 phpunit --do-not-cache-result --bootstrap vendor/autoload.php \
			--log-junit "$d/$how.xml" "$SRC/php/tests") >"$d/$how.log" 2>&1 || true
		stop_writers
		if [ -s "$d/$how.xml" ]; then
			junit "$d/$how.xml" >"$d/$how.res"
			! grep -q '^not\|^skip' "$d/$how.res" || indent <"$d/$how.log"
			results "php ($how, PHPUnit)" "$d/$how.res"
		else
			indent <"$d/$how.log"
			notok "php ($how): PHPUnit did not run"
		fi
	done
}

# ---- Java ---------------------------------------------------------------------
# Maven offline against Debian's repository: the local repository is a
# directory of links to /usr/share/maven-repo's top-level entries (the
# plugins and JUnit at the versions Debian packages, which the pom pins),
# beside which `install` writes dev/snowflake/ (no link points there, so
# nothing is written into /usr/share/maven-repo).
java_client() {
	local d=$OUT/java m2=$OUT/java/m2 how e jar mvn
	mkdir -p "$m2"
	version_is java "$SRC/java/pom.xml"
	for e in /usr/share/maven-repo/*; do
		ln -s "$e" "$m2/"
	done
	cat >"$d/settings.xml" <<EOF
<settings>
  <localRepository>$m2</localRepository>
  <offline>true</offline>
</settings>
EOF
	mvn=(mvn -o -B -q -s "$d/settings.xml" -Dsf.build="$d/target" -f "$SRC/java/pom.xml")
	for how in file fifo; do
		streams "$how" java
		rm -rf "$d/target/surefire-reports"
		if [ "$how" = file ]; then
			# The whole lifecycle: compile, the tests, the jar, install.
			timeout 300 "${mvn[@]}" install >"$d/$how.log" 2>&1 || true
			jar=$m2/dev/snowflake/snowflake-device/$VERSION/snowflake-device-$VERSION.jar
			if [ -f "$jar" ]; then
				ok "java: mvn -o install (Debian's Maven repository): ${jar#"$OUT"/}"
			else
				indent <"$d/$how.log"
				notok "java: mvn -o install (Debian's Maven repository)"
			fi
		else
			timeout 300 "${mvn[@]}" org.apache.maven.plugins:maven-surefire-plugin:2.22.3:test \
				>"$d/$how.log" 2>&1 || true
		fi
		stop_writers
		if compgen -G "$d/target/surefire-reports/TEST-*.xml" >/dev/null; then
			junit "$d"/target/surefire-reports/TEST-*.xml >"$d/$how.res"
			! grep -q '^not\|^skip' "$d/$how.res" || indent <"$d/$how.log"
			results "java ($how, JUnit 5)" "$d/$how.res"
		else
			indent <"$d/$how.log"
			notok "java ($how): Surefire ran no test"
		fi
	done
	# A program compiled against the installed jar.
	[ -f "${jar:-}" ] || return 0
	mkdir -p "$d/use"
	cat >"$d/use/Use.java" <<'EOF'
import dev.snowflake.Snowflake;

public class Use {
    public static void main(String[] args) throws Exception {
        try (Snowflake sf = new Snowflake()) {
            long[] ids = sf.next(3);
            System.out.println(ids[0] + " " + ids[1] + " " + ids[2]);
            System.out.println(Snowflake.decode(ids[0]).toJson());
        }
    }
}
EOF
	streams file java
	if javac -d "$d/use" -cp "$jar" "$d/use/Use.java" >"$d/use.log" 2>&1 &&
		java -cp "$jar:$d/use" Use >>"$d/use.log" 2>&1 &&
		[ "$(tail -n 2 "$d/use.log" | sed -n 1p)" = "$(head -n 3 "$IDS_FILE" | tr '\n' ' ' | sed 's/ $//')" ] &&
		[ "$(tail -n 1 "$d/use.log")" = "$(head -n 1 "$DECODED")" ]; then
		ok "java: a program compiled against the installed jar reads and decodes"
	else
		indent <"$d/use.log"
		notok "java: a program compiled against the installed jar"
	fi
}

# CLIENTS="go java": only those.
langs=" ${CLIENTS:-python node go php java} "
if [[ $langs == *" python "* ]] && need /usr/bin/python3; then python_client; fi
if [[ $langs == *" node "* ]] && need node && need npm; then node_client; fi
if [[ $langs == *" go "* ]] && need go; then
	go_client
	go_guest
fi
if [[ $langs == *" php "* ]] && need php && need composer && need phpunit; then php_client; fi
if [[ $langs == *" java "* ]] && need javac && need java && need mvn; then java_client; fi
finish
