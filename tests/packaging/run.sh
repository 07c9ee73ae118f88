#!/bin/bash
# The packaging stage of `make check`: `make install-packaging` and
# `make install-userspace` into a temporary DESTDIR, then
#   - the files are where systemd, udev, kmod and sysusers look for them;
#   - systemd-analyze verify on every installed unit (against the staged
#     tree: the binaries it names must be there), no warning at all;
#   - the unit's ordering contract (module load -> restore -> sysinit.target
#     and snowflake-agent.service);
#   - the udev rule run by udevadm test in a private mount namespace (a
#     fake node on a tmpfs /dev, our rules only), on a misc device of this
#     host standing in for snowflake (and then for uuidv7): the node gets
#     mode 0460, group snowflake-admin, and (the RUN udevadm test lists,
#     run there) an ACL entry giving snowflake read; a second event changes
#     nothing (no window with the ACL's mask reset); uuidv7 0440, group
#     snowflake, no ACL;
#     a broken copy of the rule must be reported (the check can fail);
#   - the units of the daemons have no capability, run in the group
#     snowflake-admin, and score at most 2.0 in systemd-analyze security
#     --offline=true (both scores printed); no unit passes a password on a
#     command line;
#   - systemd-sysusers --root creates the groups and the daemons' user, a
#     member of snowflake-admin; systemd-tmpfiles --root makes /etc/snowflake
#     0700 root;
#   - every example "options" line of the modprobe.d file parses
#     (modprobe --showconfig) and names parameters the module has;
#   - uninstall-packaging leaves nothing, and install keeps an edited
#     modprobe.d file;
#   - the container files (docs/containers.md): the CDI spec's devices and
#     the fields the runtime builds the nodes from; the Kubernetes
#     DaemonSet without any capability, on the CDI device "admin", checked
#     against the Kubernetes API's schema and field names by
#     tests/packaging/k8s-validate.mjs (npm packages kubernetes-models and
#     @kubernetes/client-node, pinned, installed into build/k8s-validate),
#     and broken copies of it reported.  (The deb stage runs both for real
#     with podman: tests/deb/containers.sh.)
# Prints "packaging: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

OUT=$BUILD/packaging
finish() {
	echo "packaging: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

rm -rf "$OUT"
mkdir -p "$OUT"
dest=$OUT/root
mk() { make -C "$ROOT" --no-print-directory "$@"; }

if mk install-packaging DESTDIR="$dest" >"$OUT/install.log" 2>&1 &&
	mk -C "$ROOT/userspace" install DESTDIR="$dest" OUT="$BUILD/userspace" >>"$OUT/install.log" 2>&1; then
	ok "make install-packaging install-userspace DESTDIR=${dest#"$ROOT"/}"
else
	indent <"$OUT/install.log"
	notok "make install-packaging install-userspace"
	finish
fi
want=(etc/systemd/system/snowflake-floor.service etc/udev/rules.d/60-snowflake.rules
	etc/modules-load.d/snowflake.conf etc/modprobe.d/snowflake.conf etc/sysusers.d/snowflake.conf
	etc/tmpfiles.d/snowflake.conf etc/cdi/snowflake.yaml
	etc/systemd/system/snowflake-agent.service etc/systemd/system/snowflake-metrics.service
	etc/systemd/system/snowflake-metrics.timer
	usr/local/sbin/snowflake-floord usr/local/share/man/man8/snowflake-floord.8
	usr/local/sbin/snowflake-agent usr/local/share/man/man8/snowflake-agent.8)
missing=()
for f in "${want[@]}"; do
	[ -f "$dest/$f" ] || missing+=("$f")
done
if [ "${#missing[@]}" -eq 0 ]; then
	ok "the ${#want[@]} files are in place"
else
	notok "missing: ${missing[*]}"
fi
if grep -rq '@[A-Z]*@' "$dest/etc/systemd/system"; then
	notok "a unit still has an @PLACEHOLDER@"
	grep -rn '@[A-Z]*@' "$dest/etc/systemd/system" | indent
else
	ok "units: @SBINDIR@ and friends filled in ($(grep -h '^ExecStart=' "$dest"/etc/systemd/system/*.service | head -n 1))"
fi

# systemd-analyze verify, inside the staged tree.
# The units pull in systemd's own (sysinit.target, network-online.target,
# ...): the host's, copied into the tree for the check and removed after.
mkdir -p "$dest/sbin" "$dest/bin" "$dest/usr/lib/systemd"
cp -L "$(command -v modprobe)" "$dest/sbin/modprobe"
cp -L "$(command -v sh)" "$dest/bin/sh"
cp -a /usr/lib/systemd/system "$dest/usr/lib/systemd/system"
for unit in "$dest"/etc/systemd/system/*.service "$dest"/etc/systemd/system/*.timer; do
	u=${unit#"$dest"}
	rc=0
	(cd "$OUT" && MANPATH=$dest/usr/local/share/man systemd-analyze verify --root="$dest" "$u") \
		>"$OUT/verify.log" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ] && [ ! -s "$OUT/verify.log" ]; then
		ok "systemd-analyze verify ${u##*/}: clean"
	else
		notok "systemd-analyze verify ${u##*/} (exit $rc)"
		indent <"$OUT/verify.log"
	fi
done
rm -f "$dest/sbin/modprobe" "$dest/bin/sh"
rmdir "$dest/sbin" "$dest/bin"
rm -rf "$dest/usr/lib/systemd"
rmdir "$dest/usr/lib" 2>/dev/null || true

# The floor unit's ordering contract (README, snowflake-floord(8)).
unit=$dest/etc/systemd/system/snowflake-floor.service
contract=('^DefaultDependencies=no$' '^After=.*systemd-modules-load\.service'
	'^Before=.*sysinit\.target' '^Before=.*snowflake-agent\.service' '^Conflicts=shutdown\.target$'
	'^RequiresMountsFor=/var/lib/snowflake$' '^ExecStartPre=[+]/sbin/modprobe snowflake$'
	'^After=.*systemd-udev-trigger\.service' '^After=.*systemd-udevd\.service'
	'^ExecStartPre=/bin/sh -c .*until \[ -w /dev/snowflake \]'
	'^ExecStartPre=/usr/local/sbin/snowflake-floord --restore' '^ExecStart=/usr/local/sbin/snowflake-floord '
	'^StateDirectory=snowflake$' '^WantedBy=sysinit\.target$')
bad=()
for re in "${contract[@]}"; do
	grep -qE "$re" "$unit" || bad+=("$re")
done
if [ "${#bad[@]}" -eq 0 ]; then
	ok "snowflake-floor.service: modules-load -> udev has set up /dev/snowflake -> restore -> sysinit.target, snowflake-agent.service"
else
	notok "snowflake-floor.service lacks: ${bad[*]}"
fi

# snowflake-agent.service: a stop that is not the agent's own (SIGKILL, a
# crash) still fences; only the exits that need a human stop the restarts.
unit=$dest/etc/systemd/system/snowflake-agent.service
if grep -qx 'ExecStopPost=/usr/local/bin/snowflake config --fence 1' "$unit" &&
	[ -x "$dest/usr/local/bin/snowflake" ]; then
	ok "snowflake-agent.service: ExecStopPost= fences the device (snowflake config --fence 1)"
else
	notok "snowflake-agent.service: no ExecStopPost= fence with the installed CLI"
fi
if grep -qx 'RestartPreventExitStatus=2 4 5 6' "$unit"; then
	ok "snowflake-agent.service: RestartPreventExitStatus=2 4 5 6 (a full pool is retried by the agent)"
else
	notok "snowflake-agent.service: RestartPreventExitStatus is not '2 4 5 6': $(grep '^RestartPreventExitStatus=' "$unit")"
fi

# The daemons' privileges: no capability at all (configuration through the
# descriptor opened for writing that snowflake-admin may open), nothing
# secret on a command line, and systemd's own exposure score.
for u in snowflake-floor.service snowflake-agent.service; do
	unit=$dest/etc/systemd/system/$u
	bad=()
	grep -qx 'CapabilityBoundingSet=' "$unit" || bad+=("CapabilityBoundingSet= (empty)")
	! grep -q '^AmbientCapabilities=' "$unit" || bad+=("no AmbientCapabilities=")
	grep -qx 'SupplementaryGroups=snowflake-admin' "$unit" || bad+=("SupplementaryGroups=snowflake-admin")
	grep -qx 'DeviceAllow=/dev/snowflake rw' "$unit" || bad+=("DeviceAllow=/dev/snowflake rw")
	grep -qx 'User=snowflake-daemon' "$unit" || bad+=("User=snowflake-daemon")
	! grep -q '^PrivateUsers=yes' "$unit" || bad+=("no PrivateUsers= (a user namespace may not configure)")
	if [ "${#bad[@]}" -eq 0 ]; then
		ok "$u: User=snowflake-daemon, SupplementaryGroups=snowflake-admin, no capability"
	else
		notok "$u lacks: ${bad[*]}"
	fi
done
if grep -n '^Exec.*password' "$dest"/etc/systemd/system/*.service; then
	notok "a unit passes a password on a command line"
else
	ok "no unit passes a password on a command line (the agent's come from LoadCredential=agent.conf)"
fi
# The exposure score, parsed from "Overall exposure level for U: 1.2 OK".
mkdir -p "$dest/usr/lib/systemd"
cp -a /usr/lib/systemd/system "$dest/usr/lib/systemd/system"
for u in snowflake-floor.service snowflake-agent.service; do
	score=$(systemd-analyze security --offline=true --root="$dest" "$u" 2>"$OUT/security.log" |
		tee "$OUT/security-$u.log" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	echo "# systemd-analyze security $u: ${score:-none}"
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		ok "systemd-analyze security --offline=true $u: $score (at most 2.0)"
	else
		notok "systemd-analyze security --offline=true $u: '${score:-no score}', want at most 2.0"
		grep -E '^[[:space:]]*✗' "$OUT/security-$u.log" | indent || true
		indent <"$OUT/security.log"
	fi
done
rm -rf "$dest/usr/lib/systemd"
rmdir "$dest/usr/lib" 2>/dev/null || true

# udev: udevadm test on a stand-in misc device, in a private mount namespace.
udev_check() { # RULES_FILE: prints the node's "mode group acl" after the add and its RUN, then "|" and the same after a second event's rule, before its RUN
	local rules=$1 dev name node major minor ns=$OUT/udev
	for dev in /sys/class/misc/*; do
		[ -r "$dev/dev" ] && grep -q '^DEVNAME=' "$dev/uevent" 2>/dev/null && break
		dev=
	done
	[ -n "$dev" ] || return 2
	name=${dev##*/}
	node=$(sed -n 's/^DEVNAME=//p' "$dev/uevent")
	IFS=: read -r major minor <"$dev/dev"
	rm -rf "$ns"
	mkdir -p "$ns/rules"
	sed "s/KERNEL==\"snowflake\"/KERNEL==\"$name\"/" "$rules" >"$ns/rules/60-snowflake.rules"
	cp /etc/group "$ns/group"
	printf 'snowflake:x:4242:\nsnowflake-admin:x:4243:\n' >>"$ns/group"
	# shellcheck disable=SC2016 # expanded by the inner bash
	unshare -m bash -c '
		set -e
		ns=$1 node=$2 major=$3 minor=$4 dev=$5
		mount --make-rprivate /
		mount -t tmpfs tmpfs /dev
		mount -t tmpfs tmpfs /run
		mkdir -p "/dev/$(dirname "$node")"
		mknod "/dev/$node" c "$major" "$minor"
		chmod 0666 "/dev/$node"
		for d in /etc/udev/rules.d /usr/lib/udev/rules.d /lib/udev/rules.d /run/udev/rules.d; do
			[ -d "$d" ] || mkdir -p "$d"
			mount --bind "$ns/rules" "$d"
		done
		mount --bind "$ns/group" /etc/group
		state() {
			acl=$(getfacl -c "/dev/$node" 2>/dev/null | grep -v "^$" | grep -E "^group:[^:]|^mask" | tr "\n" " ")
			acl=${acl% }
			echo "$(stat -c "%a %G" "/dev/$node") ${acl:--}"
		}
		udevadm test --action=add "$dev" >"$ns/test.log" 2>&1
		# udevadm test only lists the RUN programs: run ours here.
		sed -n "s/^run: .\(\/usr\/bin\/setfacl .*\).$/\1/p" "$ns/test.log" >"$ns/run"
		while read -r -a cmd; do
			"${cmd[@]}" >>"$ns/test.log" 2>&1
		done <"$ns/run"
		first=$(state)
		# A later event (udevadm trigger, coldplug): the state right after
		# udev applied the rule, before any RUN, must already be the final.
		udevadm test --action=add "$dev" >"$ns/test2.log" 2>&1
		echo "$first | $(state)"
	' _ "$ns" "$node" "$major" "$minor" "$dev"
}
rules=$dest/etc/udev/rules.d/60-snowflake.rules
if ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
	notok "udev rule: cannot make a private mount namespace here (unshare -m) to run udevadm test"
elif ! command -v getfacl >/dev/null; then
	notok "udev rule: no getfacl here (the package acl; scripts/deps.sh installs it)"
elif res=$(udev_check "$rules") &&
	[ "$res" = "460 snowflake-admin group:snowflake:r-- mask::rw- | 460 snowflake-admin group:snowflake:r-- mask::rw-" ]; then
	ok "udev rule: udevadm test gives the node mode 0460, group snowflake-admin, its RUN the ACL entry group:snowflake:r--, and a second event the same at every step ($res)"
else
	notok "udev rule: udevadm test gave '${res:-nothing}', want '460 snowflake-admin group:snowflake:r-- mask::rw-' after the add and after a second event"
	indent <"$OUT/udev/test.log" 2>/dev/null || true
fi
# The rule of /dev/uuidv7: the same stand-in node under that name.
sed 's/KERNEL=="snowflake"/KERNEL=="snowflake-unused"/; s/KERNEL=="uuidv7"/KERNEL=="snowflake"/' \
	"$rules" >"$OUT/uuidv7.rules"
if ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
	notok "udev rule of uuidv7: cannot make a private mount namespace here (unshare -m)"
elif res=$(udev_check "$OUT/uuidv7.rules") && [ "$res" = "440 snowflake - | 440 snowflake -" ]; then
	ok "udev rule: udevadm test gives /dev/uuidv7 mode 0440, group snowflake, no ACL ($res)"
else
	notok "udev rule of uuidv7: udevadm test gave '${res:-nothing}', want '440 snowflake -' twice"
	indent <"$OUT/udev/test.log" 2>/dev/null || true
fi
# The same check on a broken rule must fail.
sed 's/MODE="0460"/MODE:"0460"/' "$rules" >"$OUT/broken.rules"
res=$(udev_check "$OUT/broken.rules" 2>/dev/null) || true
if [[ $res != 460* ]] && grep -qi 'invalid\|error' "$OUT/udev/test.log" 2>/dev/null; then
	ok "udev rule: a broken copy is reported ($(grep -i -m1 'invalid\|error' "$OUT/udev/test.log" | sed 's/^.*rules.d\///'))"
else
	notok "udev rule: a broken copy was not noticed (the check cannot fail?)"
fi

# sysusers: the groups and the daemons' user, in snowflake-admin.
if systemd-sysusers --root="$dest" >"$OUT/sysusers.log" 2>&1 &&
	grep -q '^snowflake:x:[0-9]*:' "$dest/etc/group" &&
	grep -q '^snowflake-admin:x:[0-9]*:snowflake-daemon$' "$dest/etc/group" &&
	grep -q '^snowflake-daemon:x:[0-9]*:[0-9]*:' "$dest/etc/passwd"; then
	ok "systemd-sysusers --root creates the groups and the user: $(grep '^snowflake' "$dest/etc/group" | tr '\n' ' ')"
else
	notok "systemd-sysusers --root: no group snowflake, or snowflake-admin without snowflake-daemon"
	indent <"$OUT/sysusers.log"
	grep '^snowflake' "$dest/etc/group" | indent || true
fi

# tmpfiles.d: /etc/snowflake, root's alone (agent.conf holds a password).
if systemd-tmpfiles --root="$dest" --create snowflake.conf >"$OUT/tmpfiles.log" 2>&1 &&
	[ "$(stat -c '%a %U %G' "$dest/etc/snowflake" 2>/dev/null)" = "700 root root" ]; then
	ok "systemd-tmpfiles --root --create makes /etc/snowflake 0700 root:root"
else
	notok "systemd-tmpfiles: /etc/snowflake is '$(stat -c '%a %U %G' "$dest/etc/snowflake" 2>&1)', want '700 root root'"
	indent <"$OUT/tmpfiles.log"
fi
rmdir "$dest/etc/snowflake" 2>/dev/null || true

# modprobe.d: each example line, uncommented, parses and names real parameters.
params=$(sed -n 's/^module_param[a-z_]*(\([a-z_]*\),.*/\1/p' "$ROOT"/driver/*.c | sort -u)
conf=$dest/etc/modprobe.d/snowflake.conf
if grep -v '^#' "$conf" | grep -q '[^[:space:]]'; then
	notok "modprobe.d/snowflake.conf sets something: it must stay an example"
fi
nex=0
while IFS= read -r line; do
	nex=$((nex + 1))
	d=$OUT/modprobe.d
	rm -rf "$d"
	mkdir -p "$d"
	echo "${line#\#}" >"$d/snowflake.conf"
	shown=$(modprobe -C "$d" --showconfig 2>&1 | grep '^options snowflake' || true)
	unknown=()
	for kv in ${line#\#options snowflake }; do
		grep -qx "${kv%%=*}" <<<"$params" || unknown+=("${kv%%=*}")
	done
	if [ -n "$shown" ] && [ "${#unknown[@]}" -eq 0 ]; then
		ok "modprobe.d example parses: $shown"
	else
		notok "modprobe.d example '${line#\#}': shown '$shown', unknown parameters: ${unknown[*]:-}"
	fi
done < <(grep '^#options snowflake ' "$conf")
[ "$nex" -gt 0 ] || notok "modprobe.d/snowflake.conf has no '#options snowflake' example"
if [ "$(grep -v '^#' "$dest/etc/modules-load.d/snowflake.conf" | grep -v '^$')" = snowflake ] &&
	grep -q '^obj-m := snowflake\.o$' "$ROOT/Kbuild"; then
	ok "modules-load.d loads 'snowflake', the module Kbuild builds"
else
	notok "modules-load.d/snowflake.conf does not name the module"
fi

# An edited modprobe.d file survives install and uninstall.
echo "options snowflake worker_id=7" >>"$conf"
mk install-packaging DESTDIR="$dest" >/dev/null 2>&1 || true
if grep -q 'worker_id=7' "$conf"; then
	ok "install-packaging keeps an edited modprobe.d/snowflake.conf"
else
	notok "install-packaging overwrote an edited modprobe.d/snowflake.conf"
fi
mk uninstall-packaging DESTDIR="$dest" >/dev/null 2>&1 || true
mk -C "$ROOT/userspace" uninstall DESTDIR="$dest" OUT="$BUILD/userspace" >/dev/null 2>&1 || true
# What systemd-sysusers made.
rm -f "$conf" "$dest"/etc/{group,gshadow,passwd,shadow,.pwd.lock}
left=$(find "$dest" ! -type d)
if [ -z "$left" ]; then
	ok "uninstall-packaging removes every installed file"
else
	notok "left after uninstall:"
	indent <<<"${left//"$dest"\//}"
fi
# The container files (docs/containers.md): the CDI spec and the DaemonSet
# parse, and hold what the rest of the project relies on.
if python3 - "$ROOT/packaging/cdi/snowflake.yaml" \
	"$ROOT/packaging/kubernetes/snowflake-agent-daemonset.yaml" <<'PY' >"$OUT/containers.log" 2>&1
import re, sys, yaml
cdi = yaml.safe_load(open(sys.argv[1]))
assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", cdi["cdiVersion"]), cdi["cdiVersion"]
assert re.fullmatch(r"[a-z0-9.-]+/[a-zA-Z0-9_.-]+", cdi["kind"]), cdi["kind"]
devs = {d["name"]: d["containerEdits"]["deviceNodes"] for d in cdi["devices"]}
assert sorted(devs) == ["admin", "snowflake", "uuidv7"], sorted(devs)
# The node in the container comes from these fields (the host's mode,
# group and ACL do not cross): readers 0440 group 4440, read only; the
# agent's 0660 group 4460, read and write.
want = {"snowflake": ("/dev/snowflake", "r", 0o440, 4440),
        "uuidv7": ("/dev/uuidv7", "r", 0o440, 4440),
        "admin": ("/dev/snowflake", "rw", 0o660, 4460)}
for name, (path, perms, mode, gid) in want.items():
    [n] = devs[name]
    got = (n["path"], n["type"], n["permissions"], n["fileMode"], n["uid"], n["gid"])
    assert got == (path, "c", perms, mode, 0, gid), (name, got)
ds = list(yaml.safe_load_all(open(sys.argv[2])))
assert [d["kind"] for d in ds] == ["DaemonSet"], ds
pod = ds[0]["spec"]["template"]
spec = pod["spec"]
[c] = spec["containers"]
assert "initContainers" not in spec and spec.get("hostUsers") is True, spec
assert c["command"][0] == "/usr/sbin/snowflake-agent", c["command"]
sc = c["securityContext"]
# No capability at all: the agent configures through the node opened for
# writing (uid 0, the owner of the CDI node), as the host's unit does.
assert sc["capabilities"] == {"drop": ["ALL"]}, sc
assert sc["runAsUser"] == 0 and sc["allowPrivilegeEscalation"] is False, sc
assert "privileged" not in sc and "securityContext" not in spec, (sc, spec)
assert pod["metadata"]["annotations"] == {"cdi.k8s.io/snowflake": "%s=admin" % cdi["kind"]}
PY
then
	ok "the CDI spec (devices snowflake, uuidv7, admin) and the DaemonSet (no capability, CDI device admin) hold what the project relies on"
else
	notok "packaging/cdi/snowflake.yaml or packaging/kubernetes/snowflake-agent-daemonset.yaml"
	indent <"$OUT/containers.log"
fi

# The DaemonSet against the Kubernetes API (no cluster: kubectl's own
# validation asks the API server).  The validator's packages from the npm
# registry, pinned, kept in build/k8s-validate.
K8SV=$BUILD/k8s-validate
K8SV_PKGS=(kubernetes-models@5.1.0 @kubernetes/client-node@1.4.0 yaml@2.9.1)
manifest=$ROOT/packaging/kubernetes/snowflake-agent-daemonset.yaml
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	notok "node and npm are needed to check the DaemonSet against the Kubernetes schema"
elif [ "$(cat "$K8SV/pkgs" 2>/dev/null)" != "${K8SV_PKGS[*]}" ] &&
	! { rm -rf "$K8SV" && mkdir -p "$K8SV" &&
		(cd "$K8SV" && npm install --no-audit --no-fund --loglevel=error "${K8SV_PKGS[@]}") \
			>"$OUT/npm.log" 2>&1 && echo "${K8SV_PKGS[*]}" >"$K8SV/pkgs"; }; then
	tail -n 20 "$OUT/npm.log" | indent
	notok "npm install ${K8SV_PKGS[*]}"
else
	# ESM resolves packages from the script's own directory.
	cp "$ROOT/tests/packaging/k8s-validate.mjs" "$K8SV/"
	if node "$K8SV/k8s-validate.mjs" "$manifest" >"$OUT/k8s.log" 2>&1; then
		ok "the DaemonSet passes the Kubernetes schema, every field known (${K8SV_PKGS[*]})"
	else
		notok "the DaemonSet against the Kubernetes schema"
	fi
	indent <"$OUT/k8s.log"
	# Broken copies must be reported: a field the API does not have, a
	# value of the wrong type.
	sed 's/runAsGroup: 0/runAsGroupp: 0/' "$manifest" >"$OUT/unknown-field.yaml"
	sed 's/hostUsers: true/hostUsers: "yes"/' "$manifest" >"$OUT/wrong-type.yaml"
	node "$K8SV/k8s-validate.mjs" "$OUT/unknown-field.yaml" "$OUT/wrong-type.yaml" >"$OUT/k8s-broken.log" 2>&1 || true
	if grep -q 'unknown-field.yaml.*unknown field /spec/template/spec/containers/0/securityContext/runAsGroupp' "$OUT/k8s-broken.log" &&
		grep -q 'wrong-type.yaml.*/spec/template/spec/hostUsers must be boolean' "$OUT/k8s-broken.log"; then
		ok "broken copies of the DaemonSet are reported (an unknown field, a wrong type)"
	else
		notok "broken copies of the DaemonSet were not reported (the check cannot fail?)"
		indent <"$OUT/k8s-broken.log"
	fi
fi
finish
