#!/bin/bash
# `make clean` in a copy of the tree: it removes what an in-tree module
# build left (driver/*.o, snowflake.ko, the .cmd files...) and keeps the
# caches of build/ that only distclean drops (the guest kernels and the
# debug kernel's tree, whose objects are its build cache), and every file
# of the repository.  Kbuild's own `clean` with M= deletes every *.o and
# *.mod below M: the debug kernel's objects, and clients/go/go.mod.
# Run by the static stage.  Prints "clean-test: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$ROOT" && git ls-files -z | cpio -0 -pdm --quiet "$tmp")
kdir=$(kdir_of "$(default_kver)")
mkdir -p "$tmp/build/debug-kernel/linux-6.12/kernel" "$tmp/build/kernels/x"
: >"$tmp/build/debug-kernel/linux-6.12/kernel/fork.o"
: >"$tmp/build/kernels/x/vmlinuz"
if make -C "$tmp" KERNELDIR="$kdir" module >"$tmp/build.log" 2>&1; then
	ok "an in-tree module build ($(basename "$kdir"))"
else
	tail -n 20 "$tmp/build.log" | indent
	notok "an in-tree module build ($(basename "$kdir"))"
fi
make -C "$tmp" KERNELDIR="$kdir" clean >"$tmp/clean.log" 2>&1 || true
left=$(cd "$tmp" && find . -path ./build -prune -o -type f \( -name '*.o' -o -name '*.ko' \
	-o -name '*.cmd' -o -name '*.mod' -o -name '*.mod.c' -o -name Module.symvers \
	-o -name modules.order \) -print | sed 's|^\./||' | sort |
	comm -23 - <(git -C "$ROOT" ls-files | sort))
check "make clean removed every product of the module build${left:+ (left: $(tr '\n' ' ' <<<"$left"))}" \
	test -z "$left"
gone=$(git -C "$ROOT" ls-files | while read -r f; do [ -e "$tmp/$f" ] || echo "$f"; done)
check "make clean deleted no file of the repository${gone:+ (deleted: $(tr '\n' ' ' <<<"$gone"))}" \
	test -z "$gone"
check "make clean kept the debug kernel's objects and the guest kernels (build/ caches)" \
	test -f "$tmp/build/debug-kernel/linux-6.12/kernel/fork.o" -a -f "$tmp/build/kernels/x/vmlinuz"
echo "clean-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
