#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every user-facing name the module defines must be documented, in its one
# home (tests/docs/doccheck.py's check "device"): each module parameter,
# ioctl and errno in snowflake(4), each sysfs file in
# docs/ABI/sysfs-class-misc-snowflake, both ways, and no second table of
# them anywhere.  The names are read from the sources, so a new parameter,
# ioctl or file without documentation fails here.
# Then the README's Python, PHP and C examples run on the host
# (tests/docs/readme-examples.sh; its checks count here too).
# Prints one line per name and "docs: N passed, N failed".
set -euo pipefail

cd "$(dirname "$0")/../.."
uapi=uapi/linux/snowflake.h
readme=docs/reference.md

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

ioctls=$(sed -n 's/^#define \(SNOWFLAKE_IOC_[A-Z_]*\)[[:space:]]*_IO.*/\1/p' "$uapi")

# And the other way (issue 42, finding 12): every ioctl the documents and
# man pages name exists in the uapi header.
for name in $(cat README.md docs/*.md userspace/man/* | grep -oE 'SNOWFLAKE_IOC_[A-Z_]+' | sort -u); do
	[ "$name" = SNOWFLAKE_IOC_MAGIC ] && continue
	if grep -qx "$name" <<<"$ioctls"; then ok "documented ioctl $name exists"; else bad "documented ioctl $name is not in $uapi"; fi
done
# Every page of this project a SEE ALSO names exists.
for m in userspace/man/*.[0-9]; do
	for ref in $(awk '/^\.SH SEE ALSO/ { on = 1; next } /^\.SH/ { on = 0 } on' "$m" |
		sed -n 's/^\.BR *\(\(lib\)\{0,1\}snowflake[a-z\\-]*\) *(\([0-9]\)).*/\1.\3/p' | sed 's/\\-/-/g'); do
		if [ -e "userspace/man/$ref" ]; then ok "${m##*/}: SEE ALSO $ref exists"; else bad "${m##*/}: SEE ALSO names $ref, which is not in userspace/man"; fi
	done
done

[ -n "$ioctls" ] ||
	bad "could not read the names from the sources"

# The programs' options, each in its manual page (the reference of the
# programs), and the Prometheus metrics of `snowflake stats --prometheus`.
# long_opts FILE: the names of the struct option tables of a C file.
long_opts() { sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)", [a-z_]*_argument.*/\1/p' "$1" | sort -u; }
# man_has_opt MAN OPT: MAN names --OPT whole: groff writes - as \-, and
# --dry-run is not found in --dry-run-bits (issue 42, finding 12).
man_has_opt() { grep -qP -- "\\\\-\\\\-${2//-/\\\\-}(?![a-z0-9]|\\\\-)" "$1"; }
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
printf '%s\n' '.TP' '\fB\-\-dry\-run\-bits\fR' >"$tmpd/opt.8"
if ! man_has_opt "$tmpd/opt.8" dry-run && man_has_opt "$tmpd/opt.8" dry-run-bits; then
	ok "the option check reads names whole (--dry-run is not in a page that has --dry-run-bits only)"
else
	bad "the option check finds --dry-run in a page that has --dry-run-bits only"
fi
for pair in userspace/cli/opts.c:userspace/man/snowflake.1 \
	userspace/agent/conf.c:userspace/man/snowflake-agent.8 \
	userspace/floord/main.c:userspace/man/snowflake-floord.8; do
	src=${pair%%:*} man=${pair#*:}
	names=$(long_opts "$src")
	[ -n "$names" ] || bad "no options found in $src"
	for o in $names; do
		if man_has_opt "$man" "$o"; then
			ok "option --$o in ${man##*/}"
		else
			bad "option --$o of $src not in $man"
		fi
	done
done
# snowflake(1) lists exactly what the CLI's parser accepts, command by
# command, both ways: the options of each struct option table of
# userspace/cli/opts.c (and the short ones of its getopt string) are those
# of the command's SYNOPSIS lines, of its OPTIONS subsection (the .TP heads)
# and of its --help text in userspace/cli/main.c; nothing more, nothing less.
cli_out=$(python3 - userspace/cli/opts.c userspace/cli/main.c userspace/man/snowflake.1 <<'PY'
import re, sys
opts_c, main_c, man = (open(f).read() for f in sys.argv[1:4])
cmds = ["next", "decode", "config", "stats", "uuid"]
glob = {"device", "help"}      # every command's, documented as global options
shorts = dict(re.findall(r'\[SF_CMD_([A-Z]+)\] = ":([a-z:]*)"', opts_c))
def table(name):
    body = re.search(r"struct option %s\[\] = \{(.*?)\n\};" % name, opts_c, re.S).group(1)
    return set(re.findall(r'\{ "([a-z-]+)", [a-z_]+_argument', body))
def man_opts(text):
    return {o.replace("\\-", "-") for o in re.findall(r"\\-\\-([a-z](?:[a-z]|\\-)*)", text)} | \
        {"-" + c for c in re.findall(r"(?<![\\a-z-])\\-([a-z])\b", text)}
syn = man.split(".SH SYNOPSIS", 1)[1].split(".SH ", 1)[0]
blocks = re.findall(r"\.SY snowflake\n(.*?)\.YS", syn, re.S)
opt_sec = man.split(".SH OPTIONS", 1)[1].split("\n.SH ", 1)[0]
def subsection(title):
    m = re.search(r"^\.SS %s\n(.*?)(?=^\.SS |\Z)" % re.escape(title), opt_sec, re.S | re.M)
    return m.group(1) if m else ""
def tp_heads(text):
    return "\n".join(re.findall(r"^\.TP\n(.*)$", text, re.M))
bad = 0
def cmp(what, want, got):
    global bad
    if want == got:
        print("ok   %s: %s" % (what, " ".join(sorted(want))))
    else:
        bad += 1
        print("FAIL %s: missing %s, not accepted %s" % (what, sorted(want - got), sorted(got - want)))
for c in cmds:
    want = table(c + "_opts") - glob
    want |= {"-" + x for x in re.findall(r"([a-z]):", shorts[c.upper()])}
    mine = [b for b in blocks if re.search(r"^\.B %s$" % c, b, re.M)]
    got = set().union(*(man_opts(re.split(r"^\.B %s$" % c, b, 1, re.M)[1]) for b in mine)) if mine else set()
    cmp("snowflake(1) SYNOPSIS of %s" % c, want, got)
    cmp("snowflake(1) OPTIONS of %s" % c, want, man_opts(tp_heads(subsection(c))))
    usage = re.search(r"usage_%s\[\] =\n(.*?);\n" % c, main_c, re.S).group(1)
    got = {o for o in re.findall(r"--([a-z][a-z-]*)", usage)} | set(re.findall(r"(?<![a-z-])(-[a-z]),", usage))
    cmp("snowflake %s --help" % c, want | glob | {"-h"}, got)
g = table("global_opts") | {"-h"}
cmp("snowflake(1) global options", g, man_opts(tp_heads(subsection("Global options"))))
sys.exit(1 if bad else 0)
PY
) || true
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "${line#ok   }" ;;
	"FAIL "*) bad "${line#FAIL }" ;;
	*) echo "$line" ;;
	esac
done <<<"$cli_out"
[ -n "$cli_out" ] || bad "the snowflake(1) option check printed nothing"

# libsnowflake(3): its NAME and SYNOPSIS list exactly the functions of
# snowflake.h.
want=$(sed -n 's/^[a-z].*[ *]\(snowflake_[a-z_]*\)(.*/\1/p' userspace/include/snowflake.h | sort -u)
name=$(sed -n '/^\.SH NAME/,/^\.SH /p' userspace/man/libsnowflake.3 | grep -o 'snowflake_[a-z_]*' | sort -u)
synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' userspace/man/libsnowflake.3 | grep -o 'snowflake_[a-z_]*(' | tr -d '(' | sort -u)
for part in name synopsis; do
	if [ "${!part}" = "$want" ]; then
		ok "libsnowflake(3) ${part^^} lists the $(wc -l <<<"$want") functions of snowflake.h"
	else
		bad "libsnowflake(3) ${part^^} differs from snowflake.h: $(diff <(echo "$want") <(echo "${!part}") | grep '^[<>]' | tr '\n' ' ')"
	fi
done

# The metrics table of the CLI: counters are snowflake_<name>_total, times
# (M_MS) snowflake_<name without _ms>_seconds, the ids labels of snowflake_info.
metrics=$(sed -n 's/^[[:space:]]*{ "\([a-z_]*\)", M_\([A-Z]*\), .*/\1 \2/p' userspace/cli/main.c)
[ -n "$metrics" ] || bad "no metrics found in userspace/cli/main.c"
while read -r name kind; do
	case $kind in
	COUNTER) m=snowflake_${name}_total ;;
	MS) m=snowflake_${name%_ms}_seconds ;;
	GAUGE) m=snowflake_$name ;;
	LABEL) m=$name ;;
	esac
	for doc in userspace/man/snowflake.1 "$readme"; do
		if grep -qF -- "${m//_/\\_}" "$doc" || grep -qF -- "$m" "$doc"; then
			ok "metric $m in ${doc##*/}"
		else
			bad "metric $m not in $doc"
		fi
	done
done <<<"$metrics"

# The structure sizes the documents state (docs/reference.md said
# SNOWFLAKE_IDS_SIZE_VER1 was 24 bytes; it is 32) against the header's
# *_SIZE_VER* defines, which the module checks against sizeof with
# BUILD_BUG_ON.  Read with markup stripped and lines joined: "NAME, N bytes",
# "NAME (N bytes)", "N bytes, NAME", "N since NAME", and "struct snowflake_x:
# N bytes" (VER0) or "(N, M or K bytes)" (every version).
size_docs=(docs/reference.md userspace/man/snowflake.4 userspace/man/libsnowflake.3 README.md)
sizes_out=$(perl -e '
	my %size;
	open(my $h, "<", shift) or die "$!\n";
	while (<$h>) { $size{$1} = $2 if /^#define\s+(SNOWFLAKE_\w+_SIZE_VER\d+)\s+(\d+)\b/; }
	die "no *_SIZE_VER defines\n" unless %size;
	my $n = 0;
	sub said { my ($f, $name, $said) = @_; $n++;
		if (!exists $size{$name}) { print "bad\t$f: $name (said to be $said bytes) is not in the header\n"; }
		elsif ($size{$name} != $said) { print "bad\t$f: says $name is $said bytes, the header $size{$name}\n"; }
		else { print "ok\t$f: $name is $said bytes\n"; } }
	for my $f (@ARGV) {
		open(my $d, "<", $f) or die "$f: $!\n";
		my $t = join(" ", map { s/^\.[A-Z]+\s+//; $_ } <$d>);
		$t =~ s/\\f[BIRP]|\\c|\\-|`|\*\*//g;
		$t =~ s/\s+/ /g;
		while ($t =~ /(\d+) bytes\W{1,4}(SNOWFLAKE_[A-Z]+_SIZE_VER\d+)/g) { said($f, $2, $1); }
		while ($t =~ /(SNOWFLAKE_[A-Z]+_SIZE_VER\d+)\W{1,4}(\d+) bytes/g) { said($f, $1, $2); }
		while ($t =~ /(\d+) since (SNOWFLAKE_[A-Z]+_SIZE_VER\d+)/g) { said($f, $2, $1); }
		while ($t =~ /struct snowflake_([a-z]+)\W{1,4}((?:\d+(?:, | or ))*\d+) bytes/g) {
			my ($s, @said) = ("SNOWFLAKE_" . uc($1) . "_SIZE_VER", split(/, | or /, $2));
			said($f, $s . $_, $said[$_]) for 0 .. $#said;
			print "bad\t$f: struct snowflake_$1 has more versions than the " . scalar(@said) . " stated\n"
				if @said > 1 && exists $size{$s . @said};
		}
	}
	print "bad\tonly $n structure sizes found in the documents: did their wording change?\n" if $n < 8;
' uapi/linux/snowflake.h "${size_docs[@]}" 2>&1) || bad "reading the structure sizes: $sizes_out"
while IFS=$'\t' read -r verdict msg; do
	case $verdict in
	ok) ok "size $msg" ;;
	bad) bad "size $msg" ;;
	*) bad "size check: $verdict $msg" ;;
	esac
done <<<"$sizes_out"

# BENCHMARKS.md is the home of the benchmarks: each make target of them
# (make bench, make bench-compare), each variable the bench scripts read
# from the environment (BENCH_*, BASE), each file of bench/ and each
# scripts/bench*.sh is named there.
bdoc=BENCHMARKS.md
btargets=$(sed -n 's/^\(bench[a-z-]*\):.*/\1/p' Makefile)
bvars=$(grep -ohE '\$\{(BENCH_[A-Z_]+|BASE)[:}-]' scripts/bench*.sh | sed -E 's/^\$\{//; s/[:}-]$//' | sort -u)
[ -n "$btargets" ] && [ -n "$bvars" ] || bad "could not read the bench targets and variables"
for t in $btargets; do
	if grep -q "make $t" "$bdoc"; then ok "make $t in $bdoc"; else bad "make $t not in $bdoc"; fi
done
for v in $bvars; do
	if grep -q "$v=" "$bdoc"; then ok "variable $v in $bdoc"; else bad "variable $v of scripts/bench*.sh not in $bdoc"; fi
done
for f in bench/* bench/peers/* scripts/bench*.sh; do
	[ -f "$f" ] || continue
	if grep -qF "$f" "$bdoc" || grep -qF "${f%.c}\`" "$bdoc"; then
		ok "file $f in $bdoc"
	else
		bad "file $f not in $bdoc"
	fi
done

# The documents against the tree (tests/docs/doccheck.py: links and paths,
# make targets and STAGES names, the agent's tables, run figures and their
# commits, templates copied by hand, the fuzz targets; tests/docs/shipped.py:
# the licences and COPYING, NEWS, the docs the packages ship, the layout
# tables and the troubleshooting events of docs/operations.md), one line
# per finding.
doc_out=$(python3 tests/docs/doccheck.py 2>&1; python3 tests/docs/shipped.py 2>&1) || true
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "${line#ok   }" ;;
	"FAIL "*) bad "${line#FAIL }" ;;
	*) [ -z "$line" ] || bad "doccheck.py: $line" ;;
	esac
done <<<"$doc_out"
[ -n "$doc_out" ] || bad "tests/docs/doccheck.py printed nothing"

# The canaries of doccheck.py's checks of issue 45: a small tree of their
# own (doccheck.py --root) holding each mistake the issue found, which each
# check must report.
cn=$tmpd/canary
mkdir -p "$cn"/{userspace/agent,userspace/man,packaging/systemd,packaging/modprobe.d,packaging/kubernetes,debian,driver,uapi/linux,tests/lib}
echo 'static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };' >"$cn/userspace/agent/agent.c"
echo 'int resolve_bounded(const char *host, int64_t timeout_ms);' >"$cn/userspace/agent/resolve.c"
: >"$cn/userspace/agent/conf.c"
printf '%s\n' '.SH NAME' 'snowflake-agent \- lease a worker id from etcd or Redis' '.SH DESCRIPTION' 'On' '.B SIGTERM' 'or' \
	'.B SIGINT' 'it fences (see' '.BR Livenes ).' 'MySQL 8 speaks the same protocol.' \
	'Prefer a numeric address: name resolution has no timeout.' '.SH EXAMPLES' '.EX' \
	'$ snowflake\-agent \-\-dry\-run' '.EE' >"$cn/userspace/man/snowflake-agent.8"
printf '%s\n' '# README' '## Quick start' >"$cn/README.md"
mkdir -p "$cn/docs"
printf '%s\n' '# Reference' '## How it is tested' '| stage | what |' '| --- | --- |' \
	'| vmtest | `tests/vmtest/run.sh`: the suite |' >"$cn/docs/reference.md"
printf '%s\n' '# A package upgrade, which restarts it.' >"$cn/packaging/systemd/snowflake-floor.service"
printf '%s\n' '# snowflake-agent(8): lease ids from etcd or' '# Redis.' >"$cn/packaging/systemd/snowflake-agent.service"
printf '%s\n' '# parameters (see README.md, "Module parameters"); other parameters, with their defaults:' \
	'#   catchup_threshold_ms=100 nosuch_ms=1' >"$cn/packaging/modprobe.d/snowflake.conf"
printf '%s\n' '# apt install ./snowflake-agent_*.deb' '          image: registry.example/snowflake-agent:1.3.0' \
	>"$cn/packaging/kubernetes/snowflake-agent-daemonset.yaml"
# shellcheck disable=SC2016 # debian/control's own ${binary:Version}, not expanded
printf '%s\n' 'Package: snowflake-tools' 'Depends: udev' '' 'Package: snowflake-agent' \
	'Depends: snowflake-tools (= ${binary:Version}), ${misc:Depends}' >"$cn/debian/control"
echo '	dh_installsystemd -psnowflake-tools --name=snowflake-floor --no-stop-on-upgrade' >"$cn/debian/rules"
echo 1.4.0 >"$cn/VERSION"
: >"$cn/uapi/linux/snowflake.h"
for p in a b c d e f g h i; do
	printf 'module_param_named(%s_ms, param_%s, uint, 0444);\nstatic unsigned int param_%s = 1000;\n' "$p" "$p" "$p"
done | sed 's/^module_param_named(a_ms/module_param_named(catchup_threshold_ms/' >"$cn/driver/snowflake_main.c"
printf '%s\n' '#!/bin/sh' '# --stages' 'echo docs' >"$cn/tests/lib/check.sh"
printf '%s\n' '# header' '#   make t0 | t1 | t2 | t3 | t4 | t5 | t6 | t7 | t8' '' '.PHONY: t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 help' \
	>"$cn/Makefile"
for want in 'signals:.*"SIGTERM or SIGINT" lists 2' 'sections:.*README.md, "Module parameters"' 'sections:.*see Livenes' \
	'mysql8:.*snowflake-agent.8' 'root:.*\$ snowflake-agent --dry-run' 'stores:.*service: "etcd or Redis"' \
	'stores:.*NAME, DESCRIPTION.*"etcd or Redis"' \
	'modprobe:.*catchup_threshold_ms=100.*1000' 'modprobe:.*nosuch_ms' 'debs:.*without snowflake-tools' \
	'debs:.*tagged 1.3.0' 'upgrade:.*which restarts it' 'make:.*target t9' 'lookup:.*name resolution has no timeout' \
	'lanes:.*reference.md:2: "How it is tested"' 'lanes:.*reference.md:5: .*tests/vmtest/run.sh'; do
	check=${want%%:*}
	out=$(python3 tests/docs/doccheck.py --root "$cn" "$check" 2>&1) || true
	if grep -qE "^FAIL $want" <<<"$out"; then
		ok "doccheck.py $check finds its planted mistake ($want)"
	else
		bad "doccheck.py $check does not find its planted mistake ($want)"
	fi
done

# The canary of doccheck.py's check "device": the real homes copied into a
# tree of their own, each with a mistake planted, which it must report.
dv=$tmpd/device
mkdir -p "$dv"/{uapi/linux,driver,userspace/man,docs/ABI}
cp uapi/linux/snowflake.h "$dv/uapi/linux/"
cp driver/*.c "$dv/driver/"
cp userspace/man/snowflake.4 "$dv/userspace/man/"
cp docs/ABI/sysfs-class-misc-snowflake "$dv/docs/ABI/"
printf '%s\n' '# Reference' '| file | mode |' '| --- | --- |' '| `worker_id` | rw |' '| `statistics/reads` | ro |' >"$dv/docs/reference.md"
sed -i 's/^\.BI catchup_threshold_ms= 1000$/.BI catchup_threshold_ms= 100/; s/^\.B SNOWFLAKE_IOC_GET_FENCE /.B SNOWFLAKE_IOC_GET_FENCES /; /^\.B ESTALE$/d' \
	"$dv/userspace/man/snowflake.4"
sed -i '0,/(RW) Worker id/s//(RO) Worker id/' "$dv/docs/ABI/sysfs-class-misc-snowflake"
dev_out=$(python3 tests/docs/doccheck.py --root "$dv" device 2>&1) || true
for want in 'reference.md:2-5: a list of 2 of the device.s sysfs files' 'catchup_threshold_ms=100 as the default; the driver.s is 1000' \
	'documents SNOWFLAKE_IOC_GET_FENCES, which' 'has 0 IOCTLS entries for SNOWFLAKE_IOC_GET_FENCE ' \
	'the driver returns ESTALE' 'says snowflake/worker_id is \(RO\); driver/ makes it RW'; do
	if grep -qE "^FAIL device: .*$want" <<<"$dev_out"; then
		ok "doccheck.py device finds its planted mistake ($want)"
	else
		bad "doccheck.py device does not find its planted mistake ($want)"
	fi
done

# The README's examples that run on the host (Python, PHP, C; the shell ones
# run in the guest): each of their ok/FAIL lines counts here.
rc=0
# Every stage of make check (tests/lib/check.sh) has its row in the tests
# folder's lane table (tests/README.md, the one home of what each lane
# checks), and its folder tests/<stage>/ with a run.sh (deps and ksrc are the developer
# tools' scripts/deps.sh and scripts/ksrc.sh, bench-smoke is scripts/bench.sh,
# the dkms-SUITE stages are tests/dkms-suite/run.sh SUITE ...).
stages=$(bash tests/lib/check.sh --stages)
for st in $stages; do
	miss=
	grep -q "^| $st |" tests/README.md || miss="$miss tests/README.md"
	case $st in
	deps | ksrc | bench-smoke) ;;
	dkms-*) [ -x tests/dkms-suite/run.sh ] || miss="$miss tests/dkms-suite/run.sh" ;;
	*) [ -x "tests/$st/run.sh" ] || miss="$miss tests/$st/run.sh" ;;
	esac
	if [ -z "$miss" ]; then ok "stage $st: tests/README.md, its run.sh"; else bad "stage $st missing in:$miss"; fi
done
# ... in the order check.sh --stages prints them (the table's introduction
# says so; it had drifted: quickstart after deb, piuparts near the end).
order=$(sed -n 's/^| \([a-z0-9-]*\) | .*/\1/p' tests/README.md | awk -v s=" $(echo $stages) " 'index(s, " " $0 " ")' |
	awk '!seen[$0]++' | paste -sd' ')
if [ "$order" = "$(echo $stages)" ]; then
	ok "tests/README.md's lane table is in the order of check.sh --stages"
else
	bad "tests/README.md's lane table is not in the order of check.sh --stages: $order"
fi

ex_out=$(bash tests/docs/readme-examples.sh 2>&1) || rc=$?
ex_fail=$fail
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "readme example: ${line#ok   }" ;;
	"FAIL "*) bad "readme example: ${line#FAIL }" ;;
	readme-examples:*) ;;
	*) echo "$line" ;;
	esac
done <<<"$ex_out"
if [ "$rc" -ne 0 ] && [ "$fail" -eq "$ex_fail" ]; then
	bad "tests/docs/readme-examples.sh exited $rc"
fi

# Every agent configuration a document shows (its ```ini blocks) is one
# the agent takes: `snowflake-agent --config FILE --print-config` exits 0
# on it (issue 42, finding 12).  The check's own case first: a block with
# a key the agent does not know must be refused.
build=${SNOWFLAKE_BUILD:-$PWD/build}
agent=$build/userspace/snowflake-agent
if [ -x "$agent" ] || make -s -C userspace OUT="$build/userspace" "$agent" >/dev/null 2>&1; then
	ini_ok() { "$agent" --config "$1" --print-config >/dev/null 2>"$1.err"; }
	printf '%s\n' 'backend = redis' 'redis-hots = 127.0.0.1' >"$tmpd/bad.conf"
	if ini_ok "$tmpd/bad.conf"; then
		bad "the ini check takes a configuration with an unknown key (redis-hots)"
	else
		ok "the ini check refuses an unknown key ($(head -c 120 "$tmpd/bad.conf.err"))"
	fi
	for f in README.md docs/*.md; do
		awk -v d="$tmpd/ini" '/^```ini$/ { n++; on = 1; next } /^```/ { on = 0 } on { print > (d "." n) }' "$f"
		for b in "$tmpd"/ini.*; do
			[ -e "$b" ] || continue
			if ini_ok "$b"; then
				ok "$f: its ini block ${b##*.} is a configuration the agent takes"
			else
				bad "$f: its ini block ${b##*.} is refused by snowflake-agent --print-config: $(head -c 200 "$b.err")"
			fi
			rm -f "$b" "$b.err"
		done
	done
	# packaging/agent.conf.example as shipped, and with every key it shows
	# commented out (# key = value) set: each value is one the agent takes.
	ex=packaging/agent.conf.example
	sed -E 's/^# ([a-z][a-z0-9-]*) = /\1 = /' "$ex" >"$tmpd/example-all.conf"
	for f in "$ex" "$tmpd/example-all.conf"; do
		what=$ex
		[ "$f" = "$ex" ] || what="$ex with every key it shows set ($(grep -cE '^[a-z]' "$f") keys)"
		cp "$f" "$tmpd/example.conf"
		if ini_ok "$tmpd/example.conf"; then
			ok "$what: a configuration the agent takes"
		else
			bad "$what: refused by snowflake-agent --print-config: $(head -c 200 "$tmpd/example.conf.err")"
		fi
	done
else
	bad "snowflake-agent could not be built for the ini check (make -C userspace)"
fi

echo "docs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
