# shellcheck shell=bash
# The placements of the module's text (issue 34), for scripts/bench.sh and
# scripts/bench-compare.sh.  Source it after tests/lib/lib.sh.
#
# QEMU's TCG translates guest code page by page, and a hot loop that
# straddles a 4 KiB page boundary runs far slower (P6 halved with a 64-byte
# shift of sf_read_iter() that changed nothing in the read path).  So the
# headline figures, P1 and P6, are measured on several builds of the same
# sources whose whole .text is shifted by a bench-only padding:
# bench/bench_pad.S (BENCH_PAD bytes of int3), put in a copy of the sources
# under build/ and linked first by the copy's Kbuild.  The shipped driver/
# and Kbuild are never changed.  The modules' .text starts on a page in the
# guest (module text is allocated in pages), so the offset of a function in
# the .ko's .text is its offset in the page.
#
# BENCH_PLACEMENTS=8 paddings, BENCH_PLACE_STEP=512 bytes apart (one page).

# place_pads: the paddings in bytes, one per line.
place_pads() {
	local i=0
	while [ "$i" -lt "$BENCH_PLACEMENTS" ]; do
		echo $((i * BENCH_PLACE_STEP))
		i=$((i + 1))
	done
}

# place_text KO: sf_read_iter()'s range in KO's .text, 0xSTART-0xEND ("?"
# when the module has no such function).
place_text() {
	local a s
	read -r a s < <(nm -S "$1" 2>/dev/null | awk '$4 == "sf_read_iter" { print $1, $2; exit }') || true
	if [ -n "${a:-}" ] && [ -n "${s:-}" ]; then
		printf '0x%x-0x%x\n' $((16#$a)) $((16#$a + 16#$s))
	else
		echo "?"
	fi
}

# place_build KVER SRC LABEL DEST LOG: the module of the sources in SRC
# (Kbuild, VERSION, driver/, uapi/) at every padding, as DEST/LABEL-PAD.ko;
# prints "BENCH placement ko=LABEL-PAD label=LABEL pad=PAD sf_read_iter=RANGE"
# for each, the build output goes to LOG.  The first padding is a full build
# (build_module), the others relink after the padding object (a second each),
# except for another suite's kernel, built in its root each time.
place_build() {
	local kver=$1 src=$2 label=$3 dest=$4 log=$5 pad first=1
	local tree=$BUILD/bench-place/$label-src dir=$BUILD/bench-place/$label
	rm -rf "$tree"
	mkdir -p "$tree" "$dest"
	cp -p "$src/Kbuild" "$tree/"
	[ ! -f "$src/VERSION" ] || cp -p "$src/VERSION" "$tree/"
	cp -pR "$src/driver" "$src/uapi" "$tree/"
	install -m 0644 "$ROOT/bench/bench_pad.S" "$tree/driver/bench_pad.S"
	grep -q '^snowflake-y := ' "$tree/Kbuild" || die "$src/Kbuild has no 'snowflake-y := ' line"
	sed -i 's|^snowflake-y := |snowflake-y := driver/bench_pad.o |' "$tree/Kbuild"
	# shellcheck disable=SC2016 # make expands $(BENCH_PAD)
	printf '%s\n' '# bench only (scripts/bench-place.sh): the padding, linked first' \
		'OBJECT_FILES_NON_STANDARD_driver/bench_pad.o := y' \
		'asflags-y += -DBENCH_PAD=$(BENCH_PAD)' >>"$tree/Kbuild"
	: >"$log"
	for pad in $(place_pads); do
		if [ "$first" = 1 ] || [ -n "$(kroot_of "$kver")" ]; then
			(MODULE_SRC=$tree build_module "$kver" "$dir" BENCH_PAD="$pad") >>"$log" 2>&1 ||
				die "building $label at padding $pad failed (see ${log#"$ROOT"/})"
			first=0
		else
			make -C "$(kdir_of "$kver")" M="$dir" ${V:+V="$V"} BENCH_PAD="$pad" modules >>"$log" 2>&1 ||
				die "building $label at padding $pad failed (see ${log#"$ROOT"/})"
		fi
		cp "$dir/snowflake.ko" "$dest/$label-$pad.ko"
		echo "BENCH placement ko=$label-$pad label=$label pad=$pad sf_read_iter=$(place_text "$dest/$label-$pad.ko")"
	done
}

# place_conf LABELS ROUNDS SECONDS: the guest's settings of the placement
# loop (bench/init-bench.sh), for /etc/snowflake-vm.conf.
place_conf() {
	printf 'PLACE_LABELS="%s"\n' "$1"
	printf 'PLACE_PADS="%s"\n' "$(place_pads | tr '\n' ' ' | sed 's/ $//')"
	printf 'PLACE_ROUNDS=%s\n' "$2"
	printf 'PLACE_SECONDS=%s\n' "$3"
}

# load_watch FILE: the host's 1-minute load average every 10 s into FILE,
# in the background, while a guest measures; load_watch_stop prints the
# lowest and the highest sample ("min-max") and stops it.
load_watch() {
	load_file=$1
	(while :; do
		cut -d' ' -f1 /proc/loadavg
		sleep 10
	done) >"$load_file" &
	load_pid=$!
}
load_watch_stop() {
	kill "$load_pid" 2>/dev/null || true
	wait "$load_pid" 2>/dev/null || true
	sort -g "$load_file" | sed -n '1h; $!d; x; G; s/\n/-/; p'
}

# bench_guest_verdict LOG: the checks of a benchmark guest's console that
# bench.sh and bench-compare.sh share.  A kernel problem ends the benchmark,
# saying where it was (vm_problem_where); $textpoke is set from the
# text-patch recorder's report (vm_textpoke): none, kernel-text-patched or
# no-report.
# shellcheck disable=SC2034 # textpoke: read by the scripts that source this
bench_guest_verdict() {
	local tp=0
	vm_problems "$1" || die "$(vm_problem_where "$1") during the benchmark"
	vm_textpoke "$1" || tp=$?
	case $tp in
	0) textpoke=none ;;
	1) textpoke="kernel-text-patched" ;;
	*) textpoke="no-report" ;;
	esac
}
