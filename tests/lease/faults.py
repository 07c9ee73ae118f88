#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fault injection against snowflake-agent and a real lease store on
127.0.0.1, judged by tests/lease/check.py.

  faults.py --store etcd|redis|zookeeper|mysql --agent PATH --out DIR
                  [--seconds 180] [--legacy]

The stores' servers start as the contract lane's do
(tests/contract/stores.py; this lane's etcd cluster token, ZooKeeper root
and its initLimit 10 and syncLimit 4 ticks set here).
etcd: a 3-member cluster (distinct ports).  redis: one redis-server that
persists every write (appendonly yes, appendfsync always: the marks must
survive its restarts).  zookeeper: a 3-server ensemble (Debian's zkServer.sh,
tickTime 500 ms, own data directories and ports).  mysql: one mariadbd (its
own data directory, InnoDB, innodb_flush_log_at_trx_commit = 1), the agents'
user with a password over TCP.  The key space is initialised first
(snowflake-agent --init-store).  --agents agents (--dry-run, one shared
--history) contend for --pairs pairs, fewer than the agents.  For
--seconds, one fault at a time on the agents and one at a time on the
store, at random:

  agents: SIGSTOP for 1.2..2.5 TTL then SIGCONT; kill -9 and a restart
  store:  kill -9 of the leader or of a follower (redis: the server) and a
          restart; SIGSTOP of a member (redis: the server), then SIGCONT;
          deletion of every lease key (key-delete: an operator's
          `etcdctl del --prefix`, a clean-up script), the marks left;
          mysql: an operator clearing the lease rows instead (deleting a
          row would delete its mark: a missing mark, never claimed), either
          owner and expiry (lease-clear: every holder's next renewal fails)
          or the expiry alone (lease-expire: the pair is free to claim while
          its holder's renewals still match, until another claims it)
          zookeeper also: two of the three servers stopped (SIGSTOP) for
          1.2..2 TTL (no quorum: longer than the session timeout), and the
          key deletion by another session (the C client's cli_mt)

Clock domains: every agent start is a new host with its own wall clock,
--dry-run-clock-offset-ms drawn at random: mostly within +-30 s (about how
long one owner holds a pair here, so successive holders' clocks collide
often), sometimes up to +-10 minutes.  The checker judges both real-time
intervals and the windows of timestamps each owner could stamp.

--legacy: for an agent that has neither --init-store nor
--dry-run-clock-offset-ms (snowflake before the timestamp window): the
offsets are drawn and written to the fault log all the same, and the
checker derives each interval's timestamps from them (the negative control:
it must find timestamp overlaps there).

Every fault is written to DIR/faults (CLOCK_BOOTTIME ns, like the
histories).  So is every time the store did not answer, measured by a
poller of its own (every 0.2 s: redis PING, an etcd leader, a ZooKeeper
leader with a follower (quorum), mariadb SELECT 1), as `fault
kind=store-down at=T until=T2` (tests/contract's form, which lease-check
leaves out of its liveness figure), T2 extended by the store's restart
wait: etcd and ZooKeeper give the leases and sessions of before an outage
a fresh TTL once a leader answers again, the agents claim only from a
Redis up for the TTL (redis-min-uptime-ms) after it restarted; MySQL
none.  The liveness figure: the longest time a live agent waited for a
free pair while the store answered, since the store's last fault (a
store-down; a leader-change: an election the store answered through,
after which etcd and ZooKeeper give every lease and session a fresh TTL
as well; a key deletion), against TTL + settle + 1 s.

Then every agent is stopped (SIGTERM), the store too, and the
checker judges DIR/history.  Prints ok/FAIL lines, the checker's figures
and "lease-faults STORE: N passed, M failed"; every process it starts is
stopped by its pid, whatever happens.
"""
import argparse
import base64
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "contract"))
sys.path.insert(0, HERE)
import check  # noqa: E402
import stores as S  # noqa: E402


# ZooKeeper: how long the ensemble is whole before the next server fault.
WHOLE_S = 3


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


class Run:
    def __init__(self, args):
        self.a = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.hist = os.path.join(self.out, "history")
        self.faults_path = os.path.join(self.out, "faults")
        for p in (self.hist, self.faults_path):
            open(p, "w").close()
        self.procs = []          # every Popen, to stop at the end
        self.passed = 0
        self.failed = 0
        self.counts = {}
        # The seed of the faults' draws: given, or drawn and printed (a
        # failing run's faults are drawn again with --seed; the agents'
        # and servers' timing is not).
        self.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
        print("# seed %d (--seed %d draws these faults again)" % (self.seed, self.seed), flush=True)
        self.rng = random.Random(self.seed)
        self.lock = threading.Lock()
        self.polling_done = threading.Event()
        self.restarts = 0        # store members restarted since the poller looked
        self.down_ns = 0         # the store-down time measured
        self.poller = None
        self.store = None        # a tests/contract/stores.py Store
        self.whole_since = None  # since when every member is in its place (the poller)
        self.claims = 0          # claim lines stamped from the agents' logs

    # ---- bookkeeping
    def ok(self, what):
        self.passed += 1
        print("ok   " + what, flush=True)

    def bad(self, what):
        self.failed += 1
        print("FAIL " + what, flush=True)

    def fault(self, kind, **kv):
        line = "fault kind=%s %s\n" % (kind, " ".join("%s=%s" % i for i in kv.items()))
        with self.lock:   # the store poller writes too
            self.counts[kind] = self.counts.get(kind, 0) + 1
            with open(self.faults_path, "a") as f:
                f.write(line)

    def spawn(self, argv, log):
        return S.spawn(self.procs, argv, log)

    # ---- the store: its servers as the contract lane starts them
    def start_store(self):
        st = S.STORES[self.a.store](self.out, self.procs)
        if st.name == "etcd":
            st.token = "sf-lease-faults"
        elif st.name == "zookeeper":
            st.ROOT = "/sffaults"
            st.init_limit, st.sync_limit = 10, 4
        self.store = st
        return st.start()

    def start_member(self, i):
        """A store member restarted (the poller then counts its restart wait)."""
        with self.lock:
            self.restarts += 1
        self.store.start_member(i)

    # ---- the store's answers, measured: store-down periods
    def restart_wait_ns(self, restarted):
        """How long after it answers again the store may still show the
        leases of before an outage as held (not the agents' doing)."""
        ttl = self.a.ttl_ms * 1000000
        if self.a.store == "redis":
            return ttl if restarted else 0
        return 0 if self.a.store == "mysql" else ttl

    def poll_store(self):
        """Thread: write a store-down fault for every period the store did not
        answer, and a leader-change fault for every election it answered
        through (etcd, ZooKeeper: one between two polls 0.2 s apart is seen
        only so), from the last poll that saw the old leader until the
        restart wait after the poll that saw the new one."""
        down_at, restarted = None, False
        epoch, epoch_t = None, None
        while not self.polling_done.is_set():
            t = now_ns()
            up, e, whole = self.store.poll()
            with self.lock:
                self.whole_since = (self.whole_since or t) if whole else None
            if up and e is not None:
                if epoch is not None and e != epoch:
                    end = now_ns()
                    self.fault("leader-change", at=epoch_t,
                               until=end + self.restart_wait_ns(False), answered=end)
                epoch, epoch_t = e, t
            with self.lock:
                if self.restarts:
                    restarted = restarted or down_at is not None
                    self.restarts = 0
            if not up and down_at is None:
                down_at, restarted = t, False
            elif up and down_at is not None:
                end = now_ns()
                self.down_ns += end - down_at
                self.fault("store-down", at=down_at,
                           until=end + self.restart_wait_ns(restarted), answered=end)
                down_at = None
            self.polling_done.wait(0.2)
        if down_at is not None:
            end = now_ns()
            self.down_ns += end - down_at
            self.fault("store-down", at=down_at, until=end, answered=end)

    def watch_claims(self):
        """Thread: every event=claimed in an agent's log becomes a claim line
        of the fault log (tests/lease/check.py: the pair is taken while its
        claimant settles), stamped when seen (late by at most the 20 ms
        poll and the log's write: the pair looks free a little longer, the
        liveness figure errs high, never low)."""
        offs = {}
        pat = re.compile(r"event=claimed datacenter=(\d+) worker=(\d+) .*?owner=(\S+)")
        settle = self.settle_ms()
        while not self.polling_done.is_set():
            for i in range(self.a.agents):
                log = os.path.join(self.out, "agent.%d.log" % i)
                try:
                    with open(log, "rb") as f:
                        f.seek(offs.get(i, 0))
                        data = f.read()
                except OSError:
                    continue
                data = data[:data.rfind(b"\n") + 1]
                offs[i] = offs.get(i, 0) + len(data)
                t = now_ns()
                for m in pat.finditer(data.decode(errors="replace")):
                    with self.lock:
                        self.claims += 1
                        with open(self.faults_path, "a") as f:
                            f.write("claim pair=%s:%s space=sffaults:%s owner=%s at=%d "
                                    "ttl_ms=%d settle_ms=%d by=log\n" % (
                                        m.group(1), m.group(2), self.a.store, m.group(3), t,
                                        self.a.ttl_ms, settle))
            self.polling_done.wait(0.02)

    def settle_ms(self):
        """The agents' settle-ms: one TTL unless --agent-arg says otherwise."""
        settle = self.a.ttl_ms
        for i, w in enumerate(self.a.agent_arg):
            if w.startswith("--settle-ms="):
                settle = int(w.split("=", 1)[1])
            elif w == "--settle-ms" and i + 1 < len(self.a.agent_arg):
                settle = int(self.a.agent_arg[i + 1])
        return settle

    # ---- the agents
    def agent_argv(self, i):
        a = self.a
        # the store's flags (mysql: the password in a file, --config, as in a deployment)
        sa = self.store.agent_args()
        base = [] if "--config" in sa else ["--config", "/dev/null"]
        return [a.agent] + base + sa + [
            "--dry-run", "--history", self.hist, "--ttl-ms", str(a.ttl_ms), "--prefix",
            "sffaults", "--cluster", a.store, "--datacenter-ids", "0",
            "--worker-ids", "0-%d" % (a.pairs - 1),
            "--state-file", os.path.join(self.out, "state.%d" % i), "--log-level", "info"
        ] + a.agent_arg

    def draw_offset(self):
        """A new host's wall clock against ours, ms."""
        if self.rng.random() < 0.8:
            return self.rng.randint(-30000, 30000)
        return self.rng.randint(-600000, 600000)

    def start_agent(self, i):
        off = self.draw_offset()
        argv = self.agent_argv(i)
        if not self.a.legacy:
            argv += ["--dry-run-clock-offset-ms", str(off)]
        self.agents[i] = self.spawn(argv, os.path.join(self.out, "agent.%d.log" % i))
        self.offsets.append(off)
        # The checker needs it only for --legacy agents (the others write
        # theirs into their start line); it is written for every run.
        with open(self.faults_path, "a") as f:
            f.write("clock pid=%d offset_ms=%d at=%d\n" % (self.agents[i].pid, off, now_ns()))

    def init_store(self):
        """snowflake-agent --init-store: the marks of the pool (0: a new cluster)."""
        argv = self.agent_argv(0) + ["--init-store"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            self.bad("--init-store exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
            return False
        self.ok("the key space initialised (%s)" % (
            r.stderr.strip().split("event=store_initialised ")[-1][:120]))
        return True

    # ---- deleting every lease key (the marks stay); records: freed
    def delete_keys(self):
        """The number of lease keys deleted (records freed), or -1."""
        prefix = "sffaults:%s:worker:" % self.a.store
        if self.a.store == "mysql":
            return self.clear_rows()
        st = self.store
        try:
            if st.name == "zookeeper":
                # The ephemeral nodes are deleted by another session: a delete
                # needs no ownership (an operator's `deleteall`, a script).
                out = st.cli("ls " + st.ROOT, timeout=5)
                if "rc = 0" not in out:
                    return -1
                return sum(1 for name in out.split() if name.startswith(prefix) and
                           "rc = 0" in st.cli("delete %s/%s" % (st.ROOT, name), timeout=5))
            # Redis, etcd: one record per pair (docs/lease-record.md), its
            # mark a field of it.  An operator frees every held pair by
            # hand: the record written free (owner "-", its mark kept) at a
            # new version, over the very version read (a holder's renewal
            # in between is never overwritten with an older mark).  (A
            # string there is an older agent's lease key, --legacy's:
            # deleted, as before.)
            if st.name == "redis":
                lua = ("local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
                       "if redis.call('TYPE', k).ok == 'hash' then "
                       "local t = redis.call('HGET', k, 'rec') "
                       "if t and not string.find(t, ' owner=%-$') then "
                       "t = string.gsub(string.gsub(t, ' ttl=%d+ ', ' ttl=0 '), ' owner=.*$', ' owner=-') "
                       "local v = redis.call('INCR', ARGV[2]) "
                       "redis.call('HSET', k, 'ver', string.format('%d', v), 'rec', t) "
                       "n = n + 1 end "
                       "elseif redis.call('TYPE', k).ok == 'string' then "
                       "n = n + redis.call('DEL', k) end end return n")
                n = st.cmd("EVAL", lua, 0, prefix + "*", "sffaults:%s:rev" % self.a.store,
                           timeout=2)
                return n if isinstance(n, int) else -1
            end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            r = st.post("/v3/kv/range", {"key": S.b64(prefix), "range_end": S.b64(end)},
                        timeout=1)
            n = 0
            for kv in r.get("kvs") or []:
                t = base64.b64decode(kv.get("value", "")).decode(errors="replace")
                if not t.startswith("sf2 ") or t.endswith(" owner=-"):
                    continue
                t = re.sub(r" owner=.*$", " owner=-", re.sub(r" ttl=\d+ ", " ttl=0 ", t), flags=re.S)
                x = st.post("/v3/kv/txn", {
                    "compare": [{"key": kv["key"], "result": "EQUAL", "target": "MOD",
                                 "mod_revision": kv["mod_revision"]}],
                    "success": [{"request_put": {"key": kv["key"], "value": S.b64(t)}}]},
                    timeout=1)
                n += 1 if x.get("succeeded") else 0
            return n
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return -1

    def clear_rows(self):
        """mysql: an operator clears the leases, the rows and their marks kept.

        lease-clear empties owner and expiry (every holder's next renewal
        fails); lease-expire sets only the expiry in the past (the pairs are
        free to claim while their holders' renewals still match, until
        another agent claims one).  The rows changed, or -1."""
        kind = "lease-clear" if self.rng.random() < 0.5 else "lease-expire"
        owner = "owner = '', " if kind == "lease-clear" else ""
        out = self.store.sql(
            "UPDATE snowflake.snowflake_lease SET %sexpiry = '1970-01-01 00:00:00' "
            "WHERE prefix = 'sffaults' AND cluster = 'mysql' AND expiry > '1970-01-01 00:00:00'; "
            "SELECT ROW_COUNT()" % owner, timeout=2)
        try:
            n = int(out.split()[-1])
        except (AttributeError, IndexError, ValueError):
            return -1
        self.clear_kind = kind
        return n

    # ---- the run
    def main(self):
        try:
            return self.run()
        finally:
            self.polling_done.set()
            if self.poller:
                self.poller.join(timeout=10)
            S.stop_procs(self.procs)

    def end_agent_fault(self, busy):
        """(kind, index, resume_at, start_ns): SIGCONT, or a restart after a kill."""
        kind, i, _, t0 = busy
        if kind == "sigstop":
            os.kill(self.agents[i].pid, signal.SIGCONT)
            self.fault("sigstop", pid=self.agents[i].pid, at=t0, until=now_ns())
        else:
            self.start_agent(i)

    def end_store_fault(self, busy):
        """(kind, member(s), resume_at, start_ns): SIGCONT, or a restart after a kill."""
        kind, m, _, t0 = busy
        if kind == "store-stop2":
            for j in m:
                self.store.signal(j, signal.SIGCONT)
            self.fault("store-stop2", members="%d+%d" % tuple(m), at=t0, until=now_ns())
        elif kind == "store-stop":
            self.store.signal(m, signal.SIGCONT)
            self.fault("store-stop", member=m, at=t0, until=now_ns())
        else:
            self.start_member(m)

    def run(self):
        a = self.a
        ttl = a.ttl_ms / 1000.0
        t_store = now_ns()
        if not self.start_store():
            self.bad("the %s store did not start (logs in %s)" % (a.store, self.out))
            return
        self.ok("%s started (%s)" % (a.store, {"etcd": "3 members", "zookeeper": "3 servers"}.get(
            a.store, "one server")))
        self.clear_kind = None
        with open(self.faults_path, "a") as f:
            f.write("clockbase boot_to_wall_ns=%d\n" % (time.time_ns() - now_ns()))
        if a.store == "redis":
            # A new redis-server is young: the agents claim only after its restart wait.
            t = now_ns()
            self.fault("store-down", at=t_store, until=t + self.restart_wait_ns(True), answered=t)
        if not a.legacy and not self.init_store():
            return
        self.poller = threading.Thread(target=self.poll_store, daemon=True)
        self.poller.start()
        self.claimer = threading.Thread(target=self.watch_claims, daemon=True)
        self.claimer.start()
        self.offsets = []
        self.deleted = 0
        self.agents = [None] * a.agents
        for i in range(a.agents):
            self.start_agent(i)
        t_end = time.monotonic() + a.seconds
        agent_busy = None        # (kind, index, resume_at, start_ns)
        store_busy = None        # (kind, member, resume_at, start_ns)

        def settled():
            """A server fault may start: ZooKeeper's ensemble whole (a
            leader, two followers) for WHOLE_S; any other store at once.
            Debian's ZooKeeper 3.8.0 loses acknowledged writes when a
            server fails again within a synchronisation after an election
            (ZOOKEEPER-4643, -4646, -4785; the run of f3246c2, in
            docs/deployment-zookeeper.md): faults one on another within
            seconds test that defect of the store, not the agent."""
            if a.store != "zookeeper":
                return True
            with self.lock:
                w = self.whole_since
            return w is not None and now_ns() - w >= WHOLE_S * 1000000000
        next_agent = time.monotonic() + 2
        next_store = time.monotonic() + 4
        while time.monotonic() < t_end:
            t = time.monotonic()
            # end the faults whose time has come
            if agent_busy and t >= agent_busy[2]:
                self.end_agent_fault(agent_busy)
                agent_busy = None
                next_agent = t + self.rng.uniform(0.5, 2.0)
            if store_busy and t >= store_busy[2]:
                self.end_store_fault(store_busy)
                store_busy = None
                next_store = t + self.rng.uniform(1.0, 4.0)
            # start new ones
            if not agent_busy and t >= next_agent:
                i = self.rng.randrange(a.agents)
                p = self.agents[i]
                if self.rng.random() < 0.5:
                    os.kill(p.pid, signal.SIGSTOP)
                    agent_busy = ("sigstop", i, t + ttl * self.rng.uniform(1.2, 2.5), now_ns())
                else:
                    p.kill()
                    p.wait()
                    self.fault("kill", pid=p.pid, at=now_ns())
                    agent_busy = ("kill", i, t + self.rng.uniform(0.2, 2.0), now_ns())
            if not store_busy and t >= next_store and self.rng.random() < 0.2:
                n = self.delete_keys()
                if n >= 0:
                    self.deleted += n
                    self.fault(self.clear_kind if a.store == "mysql" else "key-delete",
                               deleted=n, at=now_ns())
                next_store = t + self.rng.uniform(1.0, 4.0)
            if not store_busy and t >= next_store and a.store == "zookeeper" and \
                    settled() and self.rng.random() < 0.2:
                # Two of three stopped: no quorum, for longer than the sessions' timeout.
                m = self.rng.sample(range(3), 2)
                for j in m:
                    self.store.signal(j, signal.SIGSTOP)
                store_busy = ("store-stop2", m, t + ttl * self.rng.uniform(1.2, 2.0), now_ns())
            if not store_busy and t >= next_store and settled():
                if a.store in ("zookeeper", "etcd"):
                    leader = self.store.leader()
                    if leader is None or self.rng.random() < 0.4:
                        m = self.rng.randrange(3)
                    else:
                        m = leader
                    role = "leader" if m == leader else "follower"
                else:
                    m, role = 0, "server"
                if self.rng.random() < 0.5:
                    self.store.kill(m)
                    self.fault("store-kill", member=m, role=role, at=now_ns())
                    store_busy = ("store-kill", m, t + self.rng.uniform(0.5, 3.0), now_ns())
                else:
                    self.store.signal(m, signal.SIGSTOP)
                    store_busy = ("store-stop", m, t + self.rng.uniform(0.5, 2 * ttl), now_ns())
                    self.counts["store-stop(" + role + ")"] = \
                        self.counts.get("store-stop(" + role + ")", 0) + 1
            time.sleep(0.05)
        # end the faults still running, let the agents settle, stop them
        if agent_busy:
            self.end_agent_fault(agent_busy)
        if store_busy:
            self.end_store_fault(store_busy)
        time.sleep(2 * ttl)
        rcs = []
        for p in self.agents:
            p.send_signal(signal.SIGTERM)
        for p in self.agents:
            try:
                rcs.append(p.wait(timeout=10))
            except subprocess.TimeoutExpired:
                rcs.append("hung")
        bad = [r for r in rcs if r != 0]
        if bad:
            self.bad("%d agents did not exit 0 on SIGTERM: %s" % (len(bad), bad[:5]))
        else:
            self.ok("all %d agents exited 0 on SIGTERM" % len(rcs))
        self.polling_done.set()
        self.poller.join(timeout=10)
        self.claimer.join(timeout=10)
        downs = self.counts.pop("store-down", 0)
        nfaults = sum(1 for ln in open(self.faults_path)
                      if ln.startswith("fault ") and not ln.startswith(("fault kind=store-down ",
                                                                         "fault kind=leader-change ")))
        if nfaults >= a.seconds // 5:
            self.ok("%d faults injected in %d s (%s)" % (nfaults, a.seconds, ", ".join(
                "%s %d" % kv for kv in sorted(self.counts.items()))))
        else:
            self.bad("only %d faults injected in %d s" % (nfaults, a.seconds))
        chk, fig = check.judge(a.store, self.faults_path, self.hist)
        sys.stdout.write(chk.stdout + chk.stderr)
        intervals = int(fig.get("intervals", 0))
        rt, ts = int(fig.get("overlaps", -1)), int(fig.get("ts_overlaps", -1))
        if a.legacy:
            # The negative control: the checker must see what the old agent does.
            if ts > 0:
                self.ok("lease-check sees %d timestamp overlaps of the agent without a window "
                        "(%d real-time overlaps)" % (ts, rt))
            else:
                self.bad("lease-check found no timestamp overlap of the agent without a window")
        elif chk.returncode == 0 and rt == 0 and ts == 0:
            self.ok("lease-check: no two owners ever held one pair at once, nor stamped one "
                    "timestamp (%d intervals)" % intervals)
        else:
            self.bad("lease-check: %s overlaps, %s timestamp overlaps (above)" % (rt, ts))
        settle = self.settle_ms()
        bound = a.ttl_ms + settle + 1000
        up_ms, up_down_ms = int(fig.get("gap_up_ms", -1)), int(fig.get("gap_down_ms", 0))
        wait_ms = int(fig.get("wait_up_ms", -1))
        vac_ms = int(fig.get("vacancy_up_ms", -1))
        liveness = ("longest wait for a free pair while the store answered %d ms since its "
                    "last fault (bound TTL + settle + 1 s = %d ms; one pair vacant %d ms), "
                    "%d ms summed over the outages within one wait (store-down time within it "
                    "%d ms); store down %d ms in %d periods (restart waits not counted)" % (
                        wait_ms, bound, vac_ms, up_ms, up_down_ms, self.down_ns // 1000000,
                        downs))
        # A counted check: the claims (stamped from the agents' logs, or
        # the agent's own history lines) keep a pair that an agent settles
        # on from counting as free.  No claim or no figure is no data: a
        # failure.  (The legacy agent, the negative control, is not held
        # to it.)
        nclaims = int(fig.get("claims", 0))
        if a.legacy:
            print("liveness: %s (legacy agent)" % liveness, flush=True)
        elif nclaims == 0 or wait_ms < 0:
            self.bad("liveness: no data (%d claims, wait figure %d)" % (nclaims, wait_ms))
        elif wait_ms <= bound:
            self.ok("liveness: %s, within the bound (%d claims)" % (liveness, nclaims))
        else:
            self.bad("liveness: %s, above the bound (%d claims; agent logs in %s)" % (
                liveness, nclaims, self.out))
        held = set()
        for line in open(self.hist):
            if line.startswith("interval "):
                held.add(line.split()[1])
        if len(held) == a.pairs and intervals >= a.seconds:
            self.ok("every one of the %d pairs was held, %d intervals" % (a.pairs, intervals))
        else:
            self.bad("pairs held: %d of %d, intervals %d" % (len(held), a.pairs, intervals))
        offs = self.offsets
        far = sum(1 for o in offs if abs(o) > 30000)
        # Store writes for the marks: one per raise (history "mark" lines),
        # per agent-second, scaled to 1,000 hosts.
        raises = int(fig.get("mark_raises", 0))
        serving_s = float(fig.get("serving_s", 0))
        per_k = raises / serving_s * 1000 if serving_s else 0
        if a.store == "mysql":
            deletions = "%d lease clears + %d lease expiries, %d rows" % (
                self.counts.get("lease-clear", 0), self.counts.get("lease-expire", 0), self.deleted)
        else:
            deletions = "%d key deletions, %d keys" % (self.counts.get("key-delete", 0),
                                                       self.deleted)
        print("figures: lease %s: %s, %d agents, %d pairs, TTL %d ms, %d s: %d intervals, "
              "%d faults (%s), clock offsets %d drawn (%d beyond 30 s, "
              "%+d..%+d ms), %s; longest gap store-down included %s ms (pair vacancy %s ms), mark writes %.1f/s "
              "(%.0f/s per 1,000 serving hosts), closest handoff %s ms, %s overlaps, %s timestamp "
              "overlaps%s" % (
                  a.store, {"etcd": "3 etcd members", "redis": "1 redis-server",
                            "zookeeper": "3 zookeeper servers", "mysql": "1 mariadbd"}[a.store],
                  a.agents, a.pairs, a.ttl_ms, a.seconds, intervals, nfaults,
                  deletions, len(offs), far,
                  min(offs) if offs else 0, max(offs) if offs else 0, liveness,
                  fig.get("gap_ms", "?"), fig.get("vacancy_ms", "?"), raises / a.seconds,
                  per_k, fig.get("closest_ms", "?"), rt, ts,
                  " (legacy agent: the negative control)" if a.legacy else ""), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", choices=("etcd", "redis", "zookeeper", "mysql"), required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=180)
    ap.add_argument("--ttl-ms", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--legacy", action="store_true",
                    help="an agent without --init-store and --dry-run-clock-offset-ms")
    ap.add_argument("--agent-arg", action="append", default=[],
                    help="one more argument for every agent (e.g. --agent-arg=--settle-ms=0)")
    args = ap.parse_args()
    r = Run(args)
    try:
        r.main()
    except Exception as e:  # a harness error is a failure, never a pass
        r.bad("harness error: %r" % (e,))
    print("lease-faults %s: %d passed, %d failed" % (args.store, r.passed, r.failed), flush=True)
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
