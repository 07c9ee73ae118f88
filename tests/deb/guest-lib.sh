# shellcheck shell=bash
# What the deb lane's two systemd guests share (tests/deb/guest-systemd.sh,
# tests/deb/guest-containers.sh): installed beside them as
# /usr/local/lib/sf-guest-lib.sh (tests/deb/lib.sh, deb_guest_unit).  Every
# result is a console line "$TAG ok|notok WHAT", details "$TAG # ...".
# Set TAG (SFSD, SFCT) and T_OUT (where t keeps a command's output) first.

say() { echo "$TAG $*"; }
# t WHAT CMD...: CMD succeeds (ok WHAT), or not (notok WHAT and its output).
t() {
	local what=$1
	shift
	if "$@" >"$T_OUT" 2>&1; then
		say "ok $what"
	else
		say "notok $what"
		head -n 20 "$T_OUT" | sed "s/^/$TAG #   /"
	fi
}
info() { "$@" 2>&1 | head -n 20 | sed "s/^/$TAG #   /"; }
# until_ok SECS CMD...: CMD succeeds within SECS seconds.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}
# held_key: the pair's record (a hash, PREFIX:CLUSTER:worker:DC:W, its rec
# field "sf2 ... owner=O") that an owner holds; --init-store writes every
# pair of the pool as a free record (owner=-), and a release frees it.
held_key() {
	local k
	for k in $(redis-cli -p 6379 --scan --pattern 'snowflake:*:worker:*'); do
		redis-cli -p 6379 hget "$k" rec 2>/dev/null | grep -qE ' owner=[^-]' && echo "$k"
	done | head -n 1
}
