#!/bin/bash
# In the Debian 12 root of tests/deb/run.sh with podman and runc added,
# booted with systemd as PID 1 (tests/deb/containers.sh): real
# containers against the module the packages installed.  Run by
# sfct-test.service once the floor unit has started; every result is a
# console line "SFCT ok|notok WHAT" (details "SFCT # ..."), then "SFCT done"
# and a poweroff.
#
# The module is loaded with strict=1: no IDs until snowflake-agent, run
# first as the DaemonSet's container, holds a lease from the Redis started
# here on 127.0.0.1.  Then readers in containers: podman --device and the
# CDI devices of /etc/cdi/snowflake.yaml, as root and as uid 1000, the
# groups that make the node readable, who may configure, two containers
# and the host reading at once.  Last, the agent's container is stopped:
# the device is fenced and the lease released.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0 LC_ALL=C

W=/tmp/sfct
OUTD=$W/out
N_IDS=${SFCT_IDS:-50000}
N_UUIDS=${SFCT_UUIDS:-2000}
IMAGE=localhost/sfct
# Every container: no network, nothing pulled, removed when done.
RUN=(podman run --rm --pull never --network none)
mkdir -p "$W" "$OUTD"
chmod 1777 "$OUTD"

TAG=SFCT T_OUT=$W/t.out
# say, t, info, until_ok
# shellcheck source=tests/deb/guest-lib.sh
. /usr/local/lib/sf-guest-lib.sh
# is FILE TEXT: FILE holds exactly TEXT (shown when not).
is() {
	if [ "$(cat "$1" 2>&1)" = "$2" ]; then
		return 0
	fi
	echo "want: $2"
	echo "got:  $(cat "$1" 2>&1)"
	return 1
}
# ctr NAME PODMAN-ARGS... -- SCRIPT: one container (IMAGE, sh -c SCRIPT),
# its output in $W/NAME.out; the time it took in $W/NAME.secs.
ctr() {
	local name=$1 args=() start
	shift
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	start=$(date +%s%N)
	"${RUN[@]}" "${args[@]}" "$IMAGE" sh -c "$1" >"$W/$name.out" 2>&1
	echo "$(($(date +%s%N) - start))" >"$W/$name.ns"
	say "# $name: podman run ${args[*]} ($(($(cat "$W/$name.ns") / 1000000)) ms):"
	sed 's/^/SFCT #   /' "$W/$name.out"
}
# line FILE N: line N of FILE, into $W/line.
line() { sed -n "${2}p" "$1" >"$W/line"; }

# mark WHAT: the time since boot, a figure per phase.
mark() { say "# at $(cut -d' ' -f1 /proc/uptime) s since boot: $*"; }

echo
mark "the test starts"
say "# $(podman --version), $(runc --version | head -n 1), kernel $(uname -r)"
gr=$(getent group snowflake | cut -d: -f3)
ga=$(getent group snowflake-admin | cut -d: -f3)
say "# host: groups snowflake=$gr snowflake-admin=$ga"
say "# host /dev/snowflake: $(container-probe node /dev/snowflake 2>&1)"
say "# host /dev/uuidv7: $(container-probe node /dev/uuidv7 2>&1)"
t "the package installed the CDI spec: /etc/cdi/snowflake.yaml" test -s /etc/cdi/snowflake.yaml
start=$(date +%s)
t "podman import of the image made on the host (nothing pulled)" \
	podman import --change CMD=/bin/sh /root/sfct/image.tar "$IMAGE"
say "# podman import: $(($(date +%s) - start)) s; storage: $(podman info --format '{{.Store.GraphDriverName}} on {{.Store.GraphRoot}}' 2>&1)"

# ---- snowflake-agent as the DaemonSet runs it --------------------------------
mark "the agent"
systemd-run --quiet --unit=sfct-redis /usr/local/bin/redis-server --port 6379 \
	--bind 127.0.0.1 --save '' --appendonly yes --appendfsync always --dir /tmp
t "redis-server answers on 127.0.0.1:6379" until_ok 20 sh -c 'redis-cli -p 6379 ping | grep -q PONG'
t "strict=1 and no lease yet: the host's read is refused" eval '! container-probe ids /dev/snowflake 1'
# A new key space: its timestamp marks, once, as an operator would (the
# Secret's configuration, the host's installed agent).
t "snowflake-agent --init-store: the pool's marks" \
	snowflake-agent --config /root/sfct/secret-snowflake-agent/agent.conf --init-store
mapfile -t agent_args </root/sfct/agent.args
# hostPath type DirectoryOrCreate: the kubelet makes it, 0755 root.
mkdir -p /var/lib/snowflake-agent
chmod 0755 /var/lib/snowflake-agent
say "# agent: podman run -d --name agent ${agent_args[*]}"
t "the DaemonSet's container starts (its securityContext, CDI device and volumes as podman flags)" \
	podman run -d --name agent --pull never "${agent_args[@]}"
t "the agent leases a pair and the device serves the host's reads" \
	until_ok 90 container-probe ids /dev/snowflake 1
info podman logs agent
apid=$(podman inspect -f '{{.State.Pid}}' agent 2>/dev/null)
say "# agent process $apid: $(grep -E '^(Uid|Gid|Groups|Cap(Prm|Eff|Bnd|Amb)|NoNewPrivs):' "/proc/$apid/status" 2>&1 | tr -s '\t\n' '  ')"
root_no_caps() {
	grep -E '^(Uid|Cap(Prm|Eff|Bnd|Amb)):' "/proc/$1/status" &&
		grep -qE '^Uid:\s+0\s' "/proc/$1/status" &&
		! grep -E '^Cap(Prm|Eff|Bnd|Amb):' "/proc/$1/status" | grep -qv '0000000000000000$'
}
t "the agent runs as uid 0 with no capability at all (permitted, effective, bounding, ambient)" \
	root_no_caps "$apid"
t "the agent runs with no_new_privs" grep -qE '^NoNewPrivs:\s+1$' "/proc/$apid/status"
podman exec agent container-probe node /dev/snowflake >"$W/agent.node" 2>&1
t "the agent's node (CDI device admin): mode 0660, root and group 4460, no ACL" \
	is "$W/agent.node" "mode=0660 uid=0 gid=4460 acl=none"
served_with() {
	local ids key
	key=$(held_key)
	ids="$(cat /sys/class/misc/snowflake/datacenter_id):$(cat /sys/class/misc/snowflake/worker_id)"
	echo "device ids $ids, lease $key"
	[ -n "$key" ] && [[ $key == *":worker:$ids" ]]
}
t "the device's ids are the pair the agent leased in Redis" served_with
t "the agent saved its state in the hostPath directory" \
	until_ok 10 grep -q '^datacenter=' /var/lib/snowflake-agent/agent.state

# ---- --device: the host's node, without its ACL ------------------------------
mark "--device"
# keep-groups: the groups of the process that runs podman (crun's
# feature; root's here, none of the readers' groups).
ctr dev-user --device /dev/snowflake:/dev/snowflake:r --device /dev/uuidv7:/dev/uuidv7:r \
	--user 1000:1000 --group-add keep-groups -- \
	'container-probe node /dev/snowflake; container-probe node /dev/uuidv7; id -G
	 container-probe ids /dev/snowflake 1; container-probe uuids /dev/uuidv7 1'
line "$W/dev-user.out" 1
t "--device: the node is the host's mode, owner and group (0460 root snowflake-admin) without the ACL" \
	is "$W/line" "mode=0460 uid=0 gid=$ga acl=none"
line "$W/dev-user.out" 2
t "--device: /dev/uuidv7 is the host's (0440 root snowflake)" \
	is "$W/line" "mode=0440 uid=0 gid=$gr acl=none"
line "$W/dev-user.out" 3
t "--group-add keep-groups (rootful podman, runc): uid 1000 has no supplementary group" \
	is "$W/line" "1000"
t "--device, uid 1000 without groups: reading is refused (EACCES)" \
	sh -c "grep -qx 'container-probe: /dev/snowflake: EACCES' $W/dev-user.out &&
		grep -qx 'container-probe: /dev/uuidv7: EACCES' $W/dev-user.out"

# ---- two containers and the host at once -------------------------------------
mark "two containers and the host"
# reader SCRIPT for container NAME: its nodes, a configuration attempt, then
# (after /out/go) N_IDS IDs and N_UUIDS UUIDs, one read(2) each.
reader() {
	cat <<EOF
container-probe node /dev/snowflake >/out/$1.node; container-probe node /dev/uuidv7 >>/out/$1.node
container-probe configure /dev/snowflake >/out/$1.conf 2>&1
touch /out/$1.ready
while [ ! -e /out/go ]; do sleep 0.05; done
container-probe ids /dev/snowflake $N_IDS >/out/$1.ids && container-probe uuids /dev/uuidv7 $N_UUIDS >/out/$1.uuids
EOF
}
rm -f "$OUTD"/*
t "container dev: --device :r, uid 1000, --group-add snowflake-admin and snowflake (the host's gids) starts" \
	podman run -d --name dev --pull never --network none -v "$OUTD:/out" \
	--device /dev/snowflake:/dev/snowflake:r --device /dev/uuidv7:/dev/uuidv7:r \
	--user 1000:1000 --group-add "$ga" --group-add "$gr" "$IMAGE" sh -c "$(reader dev)"
t "container cdi: CDI devices snowflake and uuidv7, uid 1000, --group-add 4440 starts" \
	podman run -d --name cdi --pull never --network none -v "$OUTD:/out" \
	--device snowflake.dev/device=snowflake --device snowflake.dev/device=uuidv7 \
	--user 1000:1000 --group-add 4440 "$IMAGE" sh -c "$(reader cdi)"
t "both are ready" until_ok 120 test -e "$OUTD/dev.ready" -a -e "$OUTD/cdi.ready"
mark "both ready: go"
touch "$OUTD/go"
container-probe ids /dev/snowflake "$N_IDS" >"$OUTD/host.ids" &&
	container-probe uuids /dev/uuidv7 "$N_UUIDS" >"$OUTD/host.uuids"
mark "the host's reads are done"
t "both exit 0, having read their IDs and UUIDs" \
	sh -c "test \"\$(podman wait dev cdi | tr '\n' ' ')\" = '0 0 ' && test -s $OUTD/dev.uuids -a -s $OUTD/cdi.uuids"
info podman logs dev
info podman logs cdi
podman rm -f dev cdi >/dev/null 2>&1
for c in dev cdi; do
	say "# $c: $(tr '\n' ' ' <"$OUTD/$c.node" 2>&1); configure: $(cat "$OUTD/$c.conf" 2>&1)"
done
line "$OUTD/cdi.node" 1
t "CDI snowflake: the node is the spec's: 0440 root, group 4440" is "$W/line" "mode=0440 uid=0 gid=4440 acl=none"
line "$OUTD/cdi.node" 2
t "CDI uuidv7: the node is the spec's: 0440 root, group 4440" is "$W/line" "mode=0440 uid=0 gid=4440 acl=none"
t "--device :r, uid 1000 in snowflake-admin: opening for writing is refused (EPERM: the device cgroup), and so is configuring" \
	is "$OUTD/dev.conf" "open=EPERM set=EPERM"
t "CDI snowflake, uid 1000 in group 4440: opening for writing is refused (EACCES), and so is configuring (EPERM)" \
	is "$OUTD/cdi.conf" "open=EACCES set=EPERM"
# Each line greater than the one before: sort's strict check (-c -u).
for k in ids uuids; do
	n=$N_IDS sortopt=-n
	[ "$k" = ids ] || n=$N_UUIDS sortopt=
	for c in dev cdi host; do
		t "$c: $n $k, each greater than the one before" \
			sh -c "test \"\$(wc -l <$OUTD/$c.$k)\" -eq $n && sort -c -u $sortopt $OUTD/$c.$k"
	done
	# shellcheck disable=SC2086 # sortopt is empty or one option
	sort -m $sortopt "$OUTD"/{dev,cdi,host}."$k" >"$W/all.$k"
	t "dev, cdi and host: the $((3 * n)) $k are distinct" \
		sh -c "test \"\$(uniq <$W/all.$k | wc -l)\" -eq $((3 * n))"
	# How often the merged order changes reader (a figure, not a check:
	# how the three interleave is the scheduler's).
	for c in dev cdi host; do
		# shellcheck disable=SC2086
		sed "s/\$/ $c/" "$OUTD/$c.$k"
	done | sort -k1,1 $sortopt | awk -v k="$k" '
		$2 != last { sw++ } { last = $2 }
		END { printf "SFCT # %s: the merged order changes reader %d times\n", k, sw - 1 }'
done
ids="$(cat /sys/class/misc/snowflake/datacenter_id) $(cat /sys/class/misc/snowflake/worker_id)"
decoded() {
	local c id
	for c in dev cdi host; do
		id=$(head -n 1 "$OUTD/$c.ids")
		snowflake decode --layout-from-device "$id" | tee /dev/stderr |
			grep -q "datacenter=${ids% *} worker=${ids#* }" || return 1
	done 2>&1
}
t "the IDs read in the containers carry the node's pair (the agent's lease): $ids" decoded

# ---- who may configure -------------------------------------------------------
mark "who may configure"
ctr root-r --device /dev/snowflake:/dev/snowflake:r -- \
	'container-probe ids /dev/snowflake 1 >/dev/null && echo read; container-probe configure /dev/snowflake'
t "--device :r, root: reads, but may not open for writing (EPERM) nor configure (EPERM)" \
	is "$W/root-r.out" "read
open=EPERM set=EPERM"
ctr root-rw --device /dev/snowflake -- 'container-probe configure /dev/snowflake'
t "--device without :r (podman's rwm), root: opens for writing and configures (a grant: pass :r)" \
	is "$W/root-rw.out" "open=OK set=OK"
ctr admin-rw --device /dev/snowflake:/dev/snowflake:rw --user 1000:1000 --group-add "$ga" -- \
	'container-probe configure /dev/snowflake'
t "--device :rw, uid 1000 given snowflake-admin: configures (the admin group, explicitly)" \
	is "$W/admin-rw.out" "open=OK set=OK"
# A descriptor opened for writing on the host, handed in: the host's grant.
ctr fds --preserve-fds 2 --user 1000:1000 -- \
	'container-probe configure fd:3; container-probe configure fd:4; ls /dev/snowflake' \
	3<>/dev/snowflake 4</dev/snowflake
t "no device, uid 1000, handed the host's descriptors: the one opened for writing configures, the read-only one is refused (EPERM)" \
	is "$W/fds.out" "open=fd-rw set=OK
open=fd-ro set=EPERM
ls: /dev/snowflake: No such file or directory"

# ---- the agent stops ---------------------------------------------------------
mark "the agent stops"
# shellcheck disable=SC2016 # expanded by that sh
t "podman stop agent: the agent exits 0 (SIGTERM: fence, release)" \
	sh -c 'podman stop -t 30 agent >/dev/null && test "$(podman inspect -f "{{.State.ExitCode}}" agent)" = 0'
info sh -c 'podman logs agent | tail -n 5'
t "after the stop the device refuses reads (fenced)" eval '! container-probe ids /dev/snowflake 1'
t "the lease was released in Redis" test -z "$(held_key)"
podman rm -f agent >/dev/null 2>&1
systemctl stop sfct-redis.service
mark "done"
say 'done'
systemctl poweroff --no-block
