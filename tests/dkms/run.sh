#!/bin/bash
# The dkms stage of `make check`: the DKMS source tree of `make dkms-src`
# (dkms.conf with the version of VERSION, Kbuild, driver/, uapi/), then
# `dkms add` and `dkms build -k KVER` for every kernel we support, in a
# private tree under build/dkms/ (--sourcetree, --dkmstree, and a signing key
# of its own: nothing goes to /usr/src or /var/lib/dkms), and the built
# module's modinfo: name, vermagic of that kernel, the parameters.
# Prints "dkms: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/dkms
ROOTFS=$OUT/root
SRCTREE=$ROOTFS/usr/src
TREE=$OUT/tree
VERSION=$(cat "$ROOT/VERSION")

finish() {
	echo "dkms: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

if ! command -v dkms >/dev/null; then
	notok "dkms is not installed (scripts/deps.sh installs it)"
	finish
fi
mapfile -t kvers < <(all_kvers)
host_state() { ls -A /var/lib/dkms /usr/src 2>/dev/null || true; }
before=$(host_state)

rm -rf "$OUT"
mkdir -p "$OUT" "$TREE"
if make -C "$ROOT" --no-print-directory dkms-src DESTDIR="$ROOTFS" >"$OUT/src.log" 2>&1; then
	ok "make dkms-src DESTDIR=${ROOTFS#"$ROOT"/}"
else
	indent <"$OUT/src.log"
	notok "make dkms-src"
	finish
fi
src=$SRCTREE/snowflake-$VERSION
conf_ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$src/dkms.conf")
conf_name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$src/dkms.conf")
if [ "$conf_name" = snowflake ] && [ "$conf_ver" = "$VERSION" ] && [ -f "$src/Kbuild" ] &&
	[ -f "$src/uapi/linux/snowflake.h" ] && ! grep -q @ "$src/dkms.conf"; then
	ok "dkms.conf: PACKAGE_NAME=$conf_name PACKAGE_VERSION=$conf_ver (VERSION), beside Kbuild, driver/, uapi/"
else
	notok "dkms.conf: PACKAGE_NAME='$conf_name' PACKAGE_VERSION='$conf_ver' (VERSION says $VERSION)"
fi
# The sources the module's Kbuild names.
missing=()
read -ra objs <<<"$(sed -n 's/^snowflake-y := //p' "$ROOT/Kbuild")"
for f in "${objs[@]}"; do
	[ -f "$src/${f%.o}.c" ] || missing+=("${f%.o}.c")
done
if [ "${#objs[@]}" -gt 0 ] && [ "${#missing[@]}" -eq 0 ]; then
	ok "the source tree has the ${#objs[@]} sources Kbuild names"
else
	notok "the source tree lacks: ${missing[*]:-everything (no snowflake-y in Kbuild?)}"
fi

# Our own signing key: dkms would otherwise create /var/lib/dkms/mok.key.
export mok_signing_key=$TREE/mok.key mok_certificate=$TREE/mok.pub
dk() { dkms "$@" --sourcetree "$SRCTREE" --dkmstree "$TREE"; }

if dk add -m snowflake -v "$VERSION" >"$OUT/add.log" 2>&1; then
	ok "dkms add snowflake/$VERSION"
else
	indent <"$OUT/add.log"
	notok "dkms add snowflake/$VERSION"
	finish
fi

params=$(sed -n 's/^module_param[a-z_]*(\([a-z_]*\),.*/\1/p' "$ROOT"/driver/*.c | sort -u)
for kver in "${kvers[@]}"; do
	kdir=$(kdir_of "$kver")
	log=$OUT/build-$kver.log
	start=$(now)
	if ! dk build -m snowflake -v "$VERSION" -k "$kver" --kernelsourcedir "$kdir" >"$log" 2>&1; then
		tail -n 30 "$log" | indent
		find "$TREE/snowflake/$VERSION/$kver" -name make.log -exec tail -n 30 {} \; 2>/dev/null | indent
		notok "$kver: dkms build"
		continue
	fi
	ko=$(find "$TREE/snowflake/$VERSION/$kver" -path '*/module/snowflake.ko*' | head -n 1)
	if [ -z "$ko" ]; then
		notok "$kver: dkms build left no snowflake.ko"
		continue
	fi
	ok "$kver: dkms build ($(($(now) - start)) s): ${ko#"$ROOT"/}"
	vermagic=$(modinfo -F vermagic "$ko")
	name=$(modinfo -F name "$ko")
	modver=$(modinfo -F version "$ko")
	if [ "$name" = snowflake ] && [[ "$vermagic" == "$kver "* ]] && [ "$modver" = "$VERSION" ]; then
		ok "$kver: modinfo: name $name, version $modver, vermagic $vermagic"
	else
		notok "$kver: modinfo: name '$name', version '$modver' (want $VERSION), vermagic '$vermagic'"
	fi
	have=$(modinfo -F parm "$ko" | sed 's/:.*//' | sort -u)
	if [ -n "$params" ] && [ "$have" = "$params" ]; then
		ok "$kver: the module has the $(wc -l <<<"$params") parameters of the sources"
	else
		notok "$kver: parameters differ from the sources"
		diff <(echo "$params") <(echo "$have") | indent
	fi
done
status=$(dk status -m snowflake -v "$VERSION" 2>/dev/null)
built=$(grep -c ': built' <<<"$status" || true)
if [ "$built" -eq "${#kvers[@]}" ]; then
	ok "dkms status: built for the ${#kvers[@]} kernels"
else
	notok "dkms status: built for $built of ${#kvers[@]} kernels"
	indent <<<"$status"
fi
if dk remove -m snowflake -v "$VERSION" --all >"$OUT/remove.log" 2>&1 &&
	[ ! -e "$TREE/snowflake/$VERSION" ]; then
	ok "dkms remove --all"
else
	indent <"$OUT/remove.log"
	notok "dkms remove --all"
fi
if [ "$(host_state)" = "$before" ]; then
	ok "nothing written to /var/lib/dkms or /usr/src"
else
	notok "the stage changed /var/lib/dkms or /usr/src:"
	diff <(echo "$before") <(host_state) | indent
fi
finish
