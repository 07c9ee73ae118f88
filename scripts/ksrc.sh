#!/bin/bash
# Extract the few kernel-source files we need from the Debian linux-source
# tarball into build/ksrc/ (same layout as a kernel tree):
#   tools/testing/selftests/{kselftest_harness.h,kselftest.h,lib.mk,...}
#   scripts/{checkpatch.pl,spelling.txt,const_structs.checkpatch}
# Cached: extracts again only when a file is missing or the tarball changed.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"

DEST=$BUILD/ksrc
NEED=(
	"$KSFT_SUBDIR/kselftest_harness.h"
	"$KSFT_SUBDIR/kselftest.h"
	"$KSFT_SUBDIR/lib.mk"
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
)

tarball=$(dpkg-query -L "$KSRC_PKG" 2>/dev/null |
	grep -E '/linux-source-[^/]*\.tar\.(xz|gz|bz2)$' | head -n1) || true
if [ -z "$tarball" ] || [ ! -r "$tarball" ]; then
	die "no kernel source tarball from $KSRC_PKG (run scripts/deps.sh)"
fi
stamp="$tarball $(stat -c '%s %Y' "$tarball")"

complete=1
for f in "${NEED[@]}"; do
	[ -s "$DEST/$f" ] || complete=0
done
if [ "$complete" -eq 1 ] && [ "$(cat "$DEST/.stamp" 2>/dev/null)" = "$stamp" ]; then
	msg "kernel source files already in ${DEST#"$ROOT"/}"
	exit 0
fi

# The tarball's top directory is named after it: linux-source-X.Y/.
top=${tarball##*/}
top=${top%.tar.*}
msg "extracting kselftest and checkpatch files from ${tarball##*/}"
tmp=$DEST.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xaf "$tarball" -C "$tmp" --strip-components=1 --wildcards \
	"$top/$KSFT_SUBDIR/kselftest*" \
	"$top/$KSFT_SUBDIR/lib.mk" \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch" \
	"$top/scripts/subarch.include"
for f in "${NEED[@]}"; do
	[ -s "$tmp/$f" ] || die "$f is not in $tarball"
done
printf '%s\n' "$stamp" >"$tmp/.stamp"
rm -rf "$DEST"
mv "$tmp" "$DEST"
msg "kernel source files extracted to ${DEST#"$ROOT"/}"
