#!/bin/bash
# The clients stage of `make check`: the small clients of clients/ (Python,
# PHP, Node.js, Java, Go; docs/clients.md), each against a recorded ID stream on
# the host (their runtimes do not fit the busybox guest): IDs of the default
# layout made with the bit layout of snowflake(4), read from a regular file
# and from a FIFO written in 13-byte pieces (reads that end inside an ID),
# decoded and compared with the CLI's `snowflake decode --json`, and the
# ENOTCONN message.  Prints "clients: N passed, M failed".
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=$BUILD/clients
C=$ROOT/clients
rm -rf "$OUT"
mkdir -p "$OUT"
finish() {
	echo "clients: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

if ! make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/snowflake" >"$OUT/make.log" 2>&1; then
	indent <"$OUT/make.log"
	notok "building the CLI"
	finish
fi
# 10,000 IDs of now, datacenter 1, worker 3: 41/5/5/12 from Twitter's epoch.
python3 - "$OUT" <<'PY'
import struct, sys, time
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
PY
# The CLI's decoding of a few of them (and of the largest ID the layout has).
mapfile -t sample < <(sed -n '1p;2p;4096p;4097p;$p' "$OUT/ids.txt")
"$BUILD/userspace/snowflake" decode --json --bits 41/5/5/12 "${sample[@]}" 9223372036854775807 \
	>"$OUT/decoded.jsonl"

# run LANG CMD...: the client's test, from a file and from a FIFO.
run() {
	local lang=$1 how
	shift
	for how in file fifo; do
		local dev=$OUT/ids.bin writer=
		if [ "$how" = fifo ]; then
			dev=$OUT/fifo.$lang
			rm -f "$dev"
			mkfifo "$dev"
			python3 -c '
import sys, time
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb", buffering=0) as f:
    for i in range(0, len(data), 13):
        f.write(data[i:i + 13])
        if i % 1300 == 0:
            time.sleep(0.001)
' "$OUT/ids.bin" "$dev" &
			writer=$!
		fi
		if IDS_FILE=$OUT/ids.txt DECODED=$OUT/decoded.jsonl SNOWFLAKE_DEVICE=$dev \
			timeout 60 "$@" >"$OUT/$lang.$how.log" 2>&1; then :; fi
		[ -z "$writer" ] || { kill "$writer" 2>/dev/null || true; wait "$writer" 2>/dev/null || true; }
		if ! grep -q '^ok \|^not ok ' "$OUT/$lang.$how.log"; then
			indent <"$OUT/$lang.$how.log"
			notok "$lang ($how): the test did not run"
			continue
		fi
		while read -r line; do
			case $line in
			"ok "*) ok "$how: ${line#ok [0-9]* }" ;;
			"not ok "*) notok "$how: ${line#not ok [0-9]* }" ;;
			esac
		done <"$OUT/$lang.$how.log"
		grep -v '^ok \|^not ok ' "$OUT/$lang.$how.log" | indent || true
	done
}

need() { command -v "$1" >/dev/null || { notok "$1 is missing (scripts/deps.sh installs it)"; return 1; }; }
if need python3; then run python python3 "$C/python/client_test.py"; fi
if need php; then run php php "$C/php/client_test.php"; fi
if need node; then run node node "$C/node/client_test.js"; fi
if need javac && need java; then
	if javac -d "$OUT/java" "$C/java/Snowflake.java" "$C/java/ClientTest.java" >"$OUT/javac.log" 2>&1; then
		run java java -cp "$OUT/java" ClientTest
	else
		indent <"$OUT/javac.log"
		notok "javac clients/java"
	fi
fi
# Go: its own test runner (go test -v), each test one check.
if need go; then
	export GOCACHE=$OUT/gocache GOFLAGS=-mod=mod GO111MODULE=on GOTOOLCHAIN=local
	for how in file fifo; do
		dev=$OUT/ids.bin writer=
		if [ "$how" = fifo ]; then
			dev=$OUT/fifo.go
			rm -f "$dev"
			mkfifo "$dev"
			python3 -c '
import sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb", buffering=0) as f:
    for i in range(0, len(data), 13):
        f.write(data[i:i + 13])
' "$OUT/ids.bin" "$dev" &
			writer=$!
		fi
		(cd "$C/go" && IDS_FILE=$OUT/ids.txt DECODED=$OUT/decoded.jsonl SNOWFLAKE_DEVICE=$dev \
			timeout 120 go test -count=1 -v ./...) >"$OUT/go.$how.log" 2>&1 || true
		[ -z "$writer" ] || { kill "$writer" 2>/dev/null || true; wait "$writer" 2>/dev/null || true; }
		if ! grep -q -- '^--- ' "$OUT/go.$how.log"; then
			indent <"$OUT/go.$how.log"
			notok "go ($how): the test did not run"
			continue
		fi
		while read -r st name _; do
			if [ "$st" = PASS: ]; then ok "$how: go: $name"; else notok "$how: go: $name"; fi
		done < <(sed -n 's/^--- \(PASS:\|FAIL:\) \([A-Za-z0-9_]*\).*/\1 \2/p' "$OUT/go.$how.log")
	done
fi
finish
