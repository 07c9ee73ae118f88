#!/bin/bash
# Real containers against the module the packages installed: the Debian 12
# root of tests/deb/run.sh (packages installed, the module DKMS-built for
# KVER), copied, with Debian's podman and runc added, booted in QEMU with
# systemd as PID 1.  tests/deb/guest-containers.sh runs there: podman
# --device and the CDI spec the package installed, as root and as another
# user, which groups make the node readable, that a container cannot
# configure the device unless given write access or a descriptor, IDs and
# UUIDs of two containers and the host at once, and snowflake-agent run as
# packaging/kubernetes/snowflake-agent-daemonset.yaml says (its security
# context, volumes and CDI device, translated to podman's flags here).
#
# The image is made here (nothing is pulled): busybox-static, the static
# tests/deb/container-probe, and snowflake-agent with its libraries from
# the root; `podman import` in the guest.
#
# Usage: containers.sh ROOT KVER OUT ARCHIVES
# ROOT is not changed (the copy is OUT/root, removed at the end); ARCHIVES
# is apt's cache of .debs (run.sh's).  Prints "deb-containers: N
# passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"

SRC_ROOT=$1 KVER=$2 OUT=$3 DEB_ARCHIVES=$4
TIMEOUT=${CONTAINERS_TEST_TIMEOUT:-600}
R=$OUT/root
ov=$OUT/overlay
img=$OUT/root.cpio
log=$OUT/console.log
t0=$(now)

finish() {
	[ -n "${CONTAINERS_TEST_KEEP:-}" ] || rm -rf "$R" "$img"
	echo "deb-containers: $pass passed, $fail failed ($(($(now) - t0)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

rm -rf "$OUT"
mkdir -p "$OUT" "$DEB_ARCHIVES/partial"

# ---- the root: a copy, with podman and runc ---------------------------------
cp -a --reflink=auto "$SRC_ROOT" "$R"
start=$(now)
# shellcheck disable=SC2016 # dpkg-query's own ${field} format
if apt_in podman runc >"$OUT/podman.log" 2>&1; then
	ok "apt-get install podman runc in a copy of the root: $(chroot "$R" dpkg-query -W -f '${Package} ${Version}, ' podman runc conmon | sed 's/, $//') ($(($(now) - start)) s)"
else
	tail -n 30 "$OUT/podman.log" | indent
	notok "apt-get install podman runc (log: ${OUT#"$ROOT"/}/podman.log)"
	finish
fi

rm -rf "$ov"
mkdir -p "$ov"/{etc/containers,etc/snowflake,root/sfct}

# ---- the image -----------------------------------------------------------------
probe=$OUT/container-probe
if ! cc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/uapi" \
	-o "$probe" "$ROOT/tests/deb/container-probe.c" 2>"$OUT/probe.log"; then
	indent <"$OUT/probe.log"
	notok "building tests/deb/container-probe.c"
	finish
fi
im=$OUT/image
rm -rf "$im"
mkdir -p "$im"/{bin,usr/bin,usr/sbin,etc,tmp,out,var/lib/snowflake,etc/snowflake}
chmod 1777 "$im/tmp"
install -m 0755 "$(command -v busybox)" "$im/bin/busybox"
for a in sh cat ls sleep test echo id touch true; do
	ln -s busybox "$im/bin/$a"
done
install -m 0755 "$probe" "$im/usr/bin/container-probe"
install -m 0755 "$R/usr/sbin/snowflake-agent" "$im/usr/sbin/snowflake-agent"
# The agent's libraries, as the root's loader finds them.
chroot "$R" ldd /usr/sbin/snowflake-agent | awk '/=> \// { print $3 } /^\t\/.* \(/ { print $1 }' |
	while read -r lib; do
		mkdir -p "$im$(dirname "$lib")"
		cp -L "$R$lib" "$im$lib"
	done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$im/etc/passwd"
printf 'root:x:0:\n' >"$im/etc/group"
if tar -C "$im" --owner=0 --group=0 -cf "$ov/root/sfct/image.tar" . &&
	chroot "$im" /usr/sbin/snowflake-agent --version >/dev/null 2>&1; then
	ok "the image: busybox, container-probe, snowflake-agent and its libraries ($(($(stat -c %s "$ov/root/sfct/image.tar") >> 20)) MiB)"
else
	notok "the image: snowflake-agent does not run in it"
	finish
fi

# ---- the DaemonSet as podman flags --------------------------------------------
# What the manifest asks of the container runtime, one podman argument a
# line: user and groups, capabilities, no-new-privileges, a read-only root,
# the CDI devices of its annotations, its volumes (the Secret's agent.conf
# and the hostPath), then the image and its command.  The manifest's image
# is replaced by the local one; the pod's network by the guest's
# (--network host: Redis is on the guest's loopback).
if python3 - "$ROOT/packaging/kubernetes/snowflake-agent-daemonset.yaml" \
	>"$ov/root/sfct/agent.args" 2>"$OUT/translate.log" <<'PY'; then
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
pod = ds["spec"]["template"]
spec = pod["spec"]
assert len(spec["containers"]) == 1 and not spec.get("initContainers"), "one container"
c = spec["containers"][0]
psc = spec.get("securityContext", {})
sc = dict(psc)
sc.update(c.get("securityContext", {}))
out = []
known = {"runAsUser", "runAsGroup", "runAsNonRoot", "supplementalGroups", "capabilities",
         "allowPrivilegeEscalation", "readOnlyRootFilesystem", "privileged", "seccompProfile"}
assert set(sc) <= known, "securityContext fields not translated: %s" % (set(sc) - known)
assert not sc.get("privileged"), "privileged"
if "runAsUser" in sc:
    out += ["--user", "%d:%d" % (sc["runAsUser"], sc.get("runAsGroup", 0))]
for g in sc.get("supplementalGroups", []):
    out += ["--group-add", str(g)]
caps = sc.get("capabilities", {})
if "ALL" in caps.get("drop", []):
    out += ["--cap-drop", "all"]
for a in caps.get("add", []):
    out += ["--cap-add", a]
if sc.get("allowPrivilegeEscalation") is False:
    out += ["--security-opt", "no-new-privileges"]
if sc.get("readOnlyRootFilesystem"):
    out += ["--read-only"]
for k, v in sorted(pod["metadata"].get("annotations", {}).items()):
    if k.startswith("cdi.k8s.io/"):
        for d in v.split(","):
            out += ["--device", d.strip()]
vols = {v["name"]: v for v in spec.get("volumes", [])}
for m in c.get("volumeMounts", []):
    v = vols[m["name"]]
    ro = ":ro" if m.get("readOnly") else ""
    if "secret" in v:
        out += ["-v", "/root/sfct/secret-%s:%s%s" % (v["secret"]["secretName"], m["mountPath"], ro)]
    elif "hostPath" in v:
        assert v["hostPath"].get("type") == "DirectoryOrCreate", v
        out += ["-v", "%s:%s%s" % (v["hostPath"]["path"], m["mountPath"], ro)]
    else:
        raise SystemExit("volume kind not translated: %s" % v)
out += ["--network", "host", "localhost/sfct"]
out += c["command"] + c.get("args", [])
print("\n".join(out))
PY
	ok "the DaemonSet's container as podman flags: $(tr '\n' ' ' <"$ov/root/sfct/agent.args")"
else
	indent <"$OUT/translate.log"
	notok "translating packaging/kubernetes/snowflake-agent-daemonset.yaml to podman flags"
	finish
fi
# The Secret's agent.conf, as its volume shows it (0400 root).
mkdir -p "$ov/root/sfct/secret-snowflake-agent"
deb_agent_conf sfct >"$ov/root/sfct/secret-snowflake-agent/agent.conf"
chmod 0400 "$ov/root/sfct/secret-snowflake-agent/agent.conf"

# ---- the guest: podman's configuration, the test unit ---------------------------
deb_guest_unit "$ov" sfct "$ROOT/tests/deb/guest-containers.sh" \
	"snowflake: containers against the packages' module (tests/deb/containers.sh)" \
	"snowflake-floor.service systemd-udev-settle.service network.target"
install -m 0755 "$probe" "$ov/usr/local/bin/container-probe"
# runc (crun is podman's default); no rlimits of podman's own (the guest's
# are what the test runs with); no pivot_root(2), which cannot leave the
# initramfs the guest runs from (runc then moves the container's root over
# / and chroots, MS_MOVE).
cat >"$ov/etc/containers/containers.conf" <<'EOF'
[containers]
default_ulimits = []
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "systemd"
events_logger = "file"
no_pivot_root = true
EOF
# The agent leases the worker id: strict=1, as on a node of the DaemonSet
# (deb_guest_unit).
# Redis: the host's Debian binaries, with the libraries the root lacks.
deb_guest_redis "$ov" "$R" || finish

# ---- boot ------------------------------------------------------------------------
deb_guest_initramfs "$R" "$ov" "$img" ./usr/lib/cni
echo "# initramfs: $(($(stat -c %s "$img") >> 20)) MiB (the root with podman, without headers, gcc, docs and CNI plugins; the test and its image), ready $(($(now) - t0)) s after the start"

vm_boot_systemd "$KVER" "$img" "$log" "$TIMEOUT" || finish

deb_guest_results SFCT containers "$log" "$OUT"
finish
