# SPDX-License-Identifier: GPL-2.0
"""The four stores of the contract suite: how to start, stop, kill, pause
and restart each one's real server(s), whether they answer, the agent's
flags for it, and how to read, edit and delete its keys and marks.  Nothing
else is per store: the scenarios (tests/contract/contract.py) are written
once.  The lease lane (tests/lease/faults.py) starts its stores here too.

A space is one (prefix, cluster): every scenario has its own cluster, so
one set of servers serves them all.  pair = (datacenter, worker).
"""
import base64
import hashlib
import json
import re
import os
import pwd
import random
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

PREFIX = "ct"
ZK_SERVER = "/usr/share/zookeeper/bin/zkServer.sh"
ZK_CLI = "/usr/lib/zookeeper/bin/cli_mt"
ZK_JCLI = "/usr/share/zookeeper/bin/zkCli.sh"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stopped(pid):
    """Whether every thread of process @pid is stopped (state T or t), or
    it is gone."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return True
    for t in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                st = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if st not in ("T", "t"):
            return False
    return True


def spawn(procs, argv, log, env=None):
    """Start @argv, its stderr appended to @log, and add it to @procs."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(log, "ab"),
                         stdin=subprocess.DEVNULL, env=env)
    procs.append(p)
    return p


def stop_procs(procs):
    """Stop every process of @procs still running (SIGCONT first: a stopped
    one), each by its pid, and reap them."""
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class Refused(Exception):
    """The server refuses a value for its type (MySQL's BIGINT UNSIGNED
    mark): the scenario cannot set that store up (contract.py NA_TABLE)."""


def key_name(cluster, kind, pair):
    return "%s:%s:%s:%d:%d" % (PREFIX, cluster, kind, pair[0], pair[1])


class Store:
    name = "?"
    members = 1
    # After an outage, how long the store itself may still show the leases
    # of before it as held (its restart wait, not the agents' doing): ms,
    # or "ttl".  Redis: the agents claim only from a Redis up for
    # redis-min-uptime-ms (default: the TTL); etcd: a new leader gives every
    # lease a fresh TTL; ZooKeeper: the ephemeral nodes of sessions that
    # died during the outage live until the server expires them (one
    # session timeout, the TTL, after it runs again); MySQL: none (an
    # expiry is a time on the server's clock).
    restart_wait = "ttl"

    def poll(self):
        """(answers(), the leader's epoch or None, whole): what a poller
        reads of the store in one round (tests/lease/faults.py).  The epoch
        (leader_epoch(), where the store has one) changes at an election;
        whole: every member in its place (a store of one member: it answers)."""
        up = self.answers()
        epoch = self.leader_epoch() if up and hasattr(self, "leader_epoch") else None
        return up, epoch, up

    def __init__(self, out, procs):
        self.out = out
        self.procs = procs          # every Popen, stopped by the harness
        self.m = []                 # the members' Popen (None: down)
        self.paused = False         # pause_all() without cont_all()

    def spawn(self, argv, log, env=None):
        return spawn(self.procs, argv, log, env)

    # ---- servers
    def kill(self, i):
        if self.m[i] is not None:
            self.m[i].kill()
            self.m[i].wait()
            self.m[i] = None

    def signal(self, i, sig):
        os.kill(self.m[i].pid, sig)

    def pause_all(self):
        """Every member stopped (SIGSTOP), returning once each of their
        threads is (a thread already running may answer one more request
        after kill() returns; the CI run of 153696e saw etcd answer); True
        when all stopped within 5 s."""
        self.paused = True
        for i in range(len(self.m)):
            self.signal(i, signal.SIGSTOP)
        t = time.monotonic() + 5
        while time.monotonic() < t:
            if all(m is None or stopped(m.pid) for m in self.m):
                return True
            time.sleep(0.01)
        return False

    def cont_all(self):
        for i in range(len(self.m)):
            self.signal(i, signal.SIGCONT)
        self.paused = False

    def restore(self):
        """After a scenario, however it ended: every member running again
        (continued if paused, started on its data if killed), so that one
        scenario's failure half way through its outage is not every later
        scenario's (a store_paused that failed before SIGCONT left etcd
        stopped for the rest of the run of 153696e).  True when it answers."""
        if not self.m:
            return True
        down = False
        if self.paused:
            for m in self.m:
                if m is not None:
                    os.kill(m.pid, signal.SIGCONT)
            self.paused = False
            down = True
        for i, m in enumerate(self.m):
            if m is None:
                self.start_member(i)
                down = True
        return self.wait_up(60) if down else True

    def stop(self):
        for i in range(len(self.m)):
            if self.m[i] is not None:
                try:
                    os.kill(self.m[i].pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                self.kill(i)

    # ---- marks: the value read (None: missing or not digits), written in
    # the agent's form (20 digits; MySQL: a number)
    def mark_value(self, cl, pair):
        v = self.mark_get(cl, pair)
        return int(v) if v and v.isdigit() else None

    def mark_set_value(self, cl, pair, v):
        self.mark_set(cl, pair, "%020d" % v)

    def mark_written_form(self, text):
        """Whether @text is a valid mark as the agent writes it here (20
        digits in a string: never one the scenarios call invalid)."""
        return False

    # ---- the proxy's upstream; what a request is
    def upstream(self):
        raise NotImplementedError

    def observe(self, req):
        """Every request through the proxy (what a store must learn from
        the traffic: Redis' scripts)."""

    def classify(self, req, cluster):
        """What the request bytes @req (the end of what the agent sent on
        one connection) are, read in the store's own protocol: (kind, key)
        with kind claim, renewal, read, release or other; key the worker
        key it is about ("" when none of @cluster's)."""
        raise NotImplementedError

    def matcher(self, kind, cluster):
        """A predicate for the proxy: the last request in the bytes is a
        @kind of a key of @cluster."""
        return lambda req: self.classify(req, cluster)[0] == kind


class RecordLayout:
    """A store of the record design (docs/lease-record.md): one record per
    pair at the pair key's name, "sf2 nonce=N beat=B ttl=T mark=M owner=O",
    the mark a field of it.  The scenarios' edits in its terms: the "key"
    is the record's holder (None when free or absent); deleting it (1.4.0:
    the pair's lease key, its mark left) is writing the record free, its
    mark kept (an operator freeing the pair by hand); replacing it writes
    another owner that keeps the pair for a minute (ttl=60000); the mark is
    the record's field, set (a new version, as any write) or deleted (the
    whole record deleted: no mark).  A subclass has _rec_get (the text,
    None: no record), _rec_put (written at a new version), _rec_del and
    reply_committed (a cas reply's bytes: committed)."""
    FIELDS = re.compile(r"^sf2 nonce=(\S*) beat=(\S*) ttl=(\S*) mark=(\S*) owner=(.*)$", re.S)

    @staticmethod
    def rec_text(owner="-", mark=0, ttl=0, beat=0, nonce=None):
        nonce = nonce if nonce is not None else "%016x" % random.getrandbits(64)
        m = mark if isinstance(mark, str) else "%020d" % mark
        return "sf2 nonce=%s beat=%d ttl=%d mark=%s owner=%s" % (nonce, beat, ttl, m, owner)

    def _fields(self, cl, pair):
        t = self._rec_get(cl, pair)
        m = self.FIELDS.match(t) if t is not None else None
        return m.groups() if m else None

    def key_get(self, cl, pair):
        f = self._fields(cl, pair)
        return None if not f or f[4] == "-" else f[4]

    def key_del(self, cl, pair):
        f = self._fields(cl, pair)
        if f:
            self._rec_put(cl, pair, self.rec_text("-", f[3], 0, int(f[1])))
        else:
            self._rec_del(cl, pair)

    def key_replace(self, cl, pair, owner):
        f = self._fields(cl, pair)
        self._rec_put(cl, pair, self.rec_text(owner, f[3] if f else 0, 60000, 0))

    def mark_get(self, cl, pair):
        f = self._fields(cl, pair)
        return f[3] if f else None

    def mark_set(self, cl, pair, text):
        f = self._fields(cl, pair)
        if f:
            nonce, beat, ttl, _, owner = f
            self._rec_put(cl, pair, self.rec_text(owner, text, int(ttl), int(beat), nonce))
        else:
            self._rec_put(cl, pair, self.rec_text("-", text))

    def mark_del(self, cl, pair):
        self._rec_del(cl, pair)


class Redis(RecordLayout, Store):
    name = "redis"

    def start(self):
        self.port = free_port()
        self.m = [None]
        self.start_member(0)
        return self.wait_up(20)

    def argv(self, port, d, durable=True):
        a = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", d,
             "--maxmemory-policy", "noeviction", "--daemonize", "no"]
        if durable:
            return a + ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]
        return a

    def start_member(self, i):
        self.m[0] = self.spawn(self.argv(self.port, self.out), os.path.join(self.out, "redis.log"))

    def cmd(self, *args, port=None, timeout=3):
        """One command (RESP), its reply: str, int, None, list, or an Exception for -ERR."""
        port = port or self.port
        req = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            req += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(req)
            f = s.makefile("rb")
            return self._reply(f)

    def _reply(self, f):
        line = f.readline().rstrip(b"\r\n")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return Exception(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            d = f.read(n + 2)[:-2]
            return d.decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply(f) for _ in range(n)]
        raise OSError("odd reply %r" % line)

    def wait_up(self, secs, port=None):
        t = time.monotonic() + secs
        while time.monotonic() < t:
            try:
                if self.cmd("PING", port=port) == "PONG":
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def answers(self):
        """Whether it answers a client now (PING, 0.5 s)."""
        try:
            return self.cmd("PING", timeout=0.5) == "PONG"
        except OSError:
            return False

    def agent_args(self, host_port=None):
        h, p = host_port or ("127.0.0.1", self.port)
        return ["--backend", "redis", "--redis-host", h, "--redis-port", str(p),
                "--redis-timeout-ms", "300"]

    def upstream(self):
        return ("127.0.0.1", self.port)

    # The agent's scripts, learnt from the SCRIPT LOADs (and EVALs) the
    # proxy passes: the one that HSETs a record is a write (a claim, a
    # renewal or a release by the text it writes: record_kind()), the one
    # that HMGETs it a read.
    scripts = {}

    @staticmethod
    def _resp(req):
        """The last complete RESP command in @req: its arguments (bytes)."""
        for m in reversed(list(re.finditer(rb"\*(\d+)\r\n", req))):
            i, args = m.end(), []
            try:
                for _ in range(int(m.group(1))):
                    if req[i:i + 1] != b"$":
                        raise ValueError
                    j = req.index(b"\r\n", i)
                    n = int(req[i + 1:j])
                    args.append(req[j + 2:j + 2 + n])
                    if len(req) < j + 4 + n:
                        raise ValueError
                    i = j + 4 + n
            except ValueError:
                continue
            # only the last request, whole (not one before it, not a part)
            return args if i == len(req) else []
        return []

    @staticmethod
    def _script_kind(lua):
        if b"'HSET', KEYS[1]" in lua:
            return "write"
        if b"'HMGET', KEYS[1]" in lua:
            return "read"
        return "other"

    def observe(self, req):
        a = self._resp(req)
        if len(a) >= 3 and a[0].upper() == b"SCRIPT" and a[1].upper() == b"LOAD":
            self.scripts[hashlib.sha1(a[2]).hexdigest().encode()] = self._script_kind(a[2])

    def classify(self, req, cluster):
        a = self._resp(req)
        if len(a) < 4 or a[0].upper() not in (b"EVALSHA", b"EVAL"):
            return ("other", "")
        kind = (self.scripts.get(a[1].lower(), "other") if a[0].upper() == b"EVALSHA"
                else self._script_kind(a[1]))
        key = a[3].decode(errors="replace")
        if not key.startswith("%s:%s:worker:" % (PREFIX, cluster)):
            return ("other", key)
        if kind == "write":
            try:
                n = int(a[2])
                kind = record_kind(a[3 + n + 1].decode(errors="replace"))
            except (ValueError, IndexError):
                kind = "other"
        return (kind, key)

    # the header of a reply of 300 MB (a bulk string)
    huge_reply = b"$300000000\r\n"

    # The record: a hash (ver, rec) at the pair key's name, ver from the
    # store's counter PREFIX:CLUSTER:rev (userspace/agent/redis.c).
    def _rec_get(self, cl, pair):
        v = self.cmd("HGET", key_name(cl, "worker", pair), "rec")
        return None if v is None or isinstance(v, Exception) else v

    def _rec_put(self, cl, pair, text):
        r = self.cmd("EVAL", "local v = redis.call('INCR', KEYS[2]) "
                     "redis.call('HSET', KEYS[1], 'ver', string.format('%d', v), 'rec', ARGV[1]) "
                     "return v", "2", key_name(cl, "worker", pair),
                     "%s:%s:rev" % (PREFIX, cl), text)
        if isinstance(r, Exception):
            raise OSError("writing a record: %s" % r)

    def _rec_del(self, cl, pair):
        self.cmd("DEL", key_name(cl, "worker", pair))

    @staticmethod
    def reply_committed(reply):
        """The cas script's reply: the new version (a bulk string), not 0."""
        return reply.startswith(b"$") and not reply.startswith(b"$-1")

    # 1.4.0's layout (the upgrade): its mark key, its pair key (the owner, a TTL)
    def legacy_mark_set(self, cl, pair, text):
        self.cmd("SET", key_name(cl, "mark", pair), text)

    def legacy_key_set(self, cl, pair, owner, ttl_ms):
        self.cmd("SET", key_name(cl, "worker", pair), owner, "PX", str(ttl_ms))

    def legacy_key_get(self, cl, pair):
        v = self.cmd("GET", key_name(cl, "worker", pair))
        return None if isinstance(v, Exception) else v


class Etcd(RecordLayout, Store):
    name = "etcd"
    token = "sf-contract"       # --initial-cluster-token

    def start(self):
        self.cports = [free_port() for _ in range(3)]
        self.pports = [free_port() for _ in range(3)]
        self.m = [None] * 3
        for i in range(3):
            self.start_member(i)
        return self.wait_up(60)

    def start_member(self, i):
        cluster = ",".join("n%d=http://127.0.0.1:%d" % (j, self.pports[j]) for j in range(3))
        argv = ["etcd", "--name", "n%d" % i, "--data-dir", os.path.join(self.out, "n%d" % i),
                "--listen-client-urls", "http://127.0.0.1:%d" % self.cports[i],
                "--advertise-client-urls", "http://127.0.0.1:%d" % self.cports[i],
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.pports[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.pports[i],
                "--initial-cluster", cluster, "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new",
                "--heartbeat-interval", "100", "--election-timeout", "1000"]
        self.m[i] = self.spawn(argv, os.path.join(self.out, "etcd-n%d.log" % i))

    def post(self, path, body, i=None, timeout=2):
        for j in ([i] if i is not None else range(3)):
            if self.m[j] is None:
                continue
            req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.cports[j], path),
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    return json.loads(r.read())
            except (OSError, ValueError):
                continue
        raise OSError("no etcd member answered " + path)

    def wait_up(self, secs):
        t = time.monotonic() + secs
        while time.monotonic() < t:
            try:
                st = self.post("/v3/maintenance/status", {})
                if st.get("leader"):
                    self.post("/v3/kv/range", {"key": b64("x")})
                    return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def leader(self):
        """The index of the member that is the leader, or None."""
        for i in range(3):
            try:
                st = self.post("/v3/maintenance/status", {}, i=i, timeout=0.5)
            except OSError:
                continue
            if st.get("leader") and st["header"]["member_id"] == st["leader"]:
                return i
        return None

    def answers(self):
        """Whether a leader answers now."""
        return self.leader() is not None

    def leader_epoch(self):
        """(leader's member id, raft term) as a member says now, or None:
        a new value is an election, after which the new leader gives every
        lease a fresh TTL (etcd's lessor Promote), held or not."""
        try:
            st = self.post("/v3/maintenance/status", {}, timeout=0.5)
        except OSError:
            return None
        if not st.get("leader"):
            return None
        return (st["leader"], st.get("header", {}).get("raft_term"))

    def agent_args(self, host_port=None):
        eps = ("http://%s:%d" % host_port if host_port else
               ",".join("http://127.0.0.1:%d" % p for p in self.cports))
        return ["--backend", "etcd", "--etcd-timeout-ms", "400", "--etcd-endpoints", eps]

    def upstream(self):
        return ("127.0.0.1", self.cports[0])

    def classify(self, req, cluster):
        """The last HTTP request in @req: a Txn that puts a worker key (a
        record) is a claim, a renewal or a release by the text it puts
        (record_kind()); a range of a worker key, a read."""
        i = req.rfind(b"POST /v3/")
        if i < 0:
            return ("other", "")
        path = req[i + 5:req.find(b" ", i + 5)].decode(errors="replace")
        j = req.find(b"\r\n\r\n", i)
        try:
            body = json.loads(req[j + 4:]) if j >= 0 else None
        except ValueError:
            body = None
        pre = "%s:%s:worker:" % (PREFIX, cluster)

        def dec(v):
            try:
                return base64.b64decode(v or "").decode(errors="replace")
            except ValueError:
                return ""
        if not isinstance(body, dict):
            return ("other", "")
        if path == "/v3/kv/range":
            k = dec(body.get("key"))
            return ("read", k) if k.startswith(pre) else ("other", k)
        if path != "/v3/kv/txn":
            return ("other", "")
        for x in body.get("success") or []:
            put = x.get("request_put") if isinstance(x, dict) else None
            if put and dec(put.get("key")).startswith(pre):
                return (record_kind(dec(put.get("value"))), dec(put.get("key")))
        return ("other", "")

    huge_reply = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 300000000\r\n\r\n{\"header\":\"")

    def _get(self, k):
        r = self.post("/v3/kv/range", {"key": b64(k)})
        kvs = r.get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode(errors="replace") if kvs else None

    # The record: a plain key at the pair key's name, its mod_revision the
    # version (userspace/agent/etcd.c).
    def _rec_get(self, cl, pair):
        return self._get(key_name(cl, "worker", pair))

    def _rec_put(self, cl, pair, text):
        self.post("/v3/kv/put", {"key": b64(key_name(cl, "worker", pair)), "value": b64(text)})

    def _rec_del(self, cl, pair):
        self.post("/v3/kv/deleterange", {"key": b64(key_name(cl, "worker", pair))})

    @staticmethod
    def reply_committed(reply):
        return b'"succeeded":true' in reply

    # 1.4.0's layout (the upgrade): its mark key, its pair key (the owner, bound to a lease)
    def legacy_mark_set(self, cl, pair, text):
        self.post("/v3/kv/put", {"key": b64(key_name(cl, "mark", pair)), "value": b64(text)})

    def legacy_key_set(self, cl, pair, owner, ttl_ms):
        lease = self.post("/v3/lease/grant", {"TTL": max(1, ttl_ms // 1000)})["ID"]
        self.post("/v3/kv/put", {"key": b64(key_name(cl, "worker", pair)), "value": b64(owner),
                                 "lease": lease})

    def legacy_key_get(self, cl, pair):
        return self._get(key_name(cl, "worker", pair))


def record_kind(text):
    """What a record write is, by the text it writes (record.c): free
    (owner=-) a release (or --init-store's record), beat=0 a claim, else a
    renewal (a re-adoption, a raise)."""
    if text.endswith(" owner=-"):
        return "release"
    if " beat=0 " in text:
        return "claim"
    return "renewal" if text.startswith("sf2 ") else "other"


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


class ZooKeeper(Store):
    name = "zookeeper"
    ROOT = "/contract"
    init_limit, sync_limit = 20, 6     # ticks

    def start(self):
        self.cports = [free_port() for _ in range(3)]
        peers = [(free_port(), free_port()) for _ in range(3)]
        self.m = [None] * 3
        for i in range(3):
            d = os.path.join(self.out, "zk%d" % i)
            os.makedirs(os.path.join(d, "data"), exist_ok=True)
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write("%d\n" % (i + 1))
            # tickTime 500 ms: sessions of 1..10 s (2..20 ticks); the
            # agents' margin (TTL/5) covers a follower's half-tick delay
            # in passing a session's pings to the leader.
            cfg = ["tickTime=500", "initLimit=%d" % self.init_limit,
                   "syncLimit=%d" % self.sync_limit,
                   "dataDir=" + os.path.join(d, "data"), "clientPort=%d" % self.cports[i],
                   "clientPortAddress=127.0.0.1", "admin.enableServer=false",
                   "4lw.commands.whitelist=srvr", "maxClientCnxns=0"]
            cfg += ["server.%d=127.0.0.1:%d:%d" % (j + 1, peers[j][0], peers[j][1])
                    for j in range(3)]
            with open(os.path.join(d, "zoo.cfg"), "w") as f:
                f.write("\n".join(cfg) + "\n")
        for i in range(3):
            self.start_member(i)
        return self.wait_up(120)

    def start_member(self, i):
        d = os.path.join(self.out, "zk%d" % i)
        env = dict(os.environ, JMXDISABLE="true", ZOO_LOG_DIR=d,
                   JVMFLAGS="-Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k")
        # start-foreground execs java: the pid is the server's.
        self.m[i] = self.spawn([ZK_SERVER, "start-foreground", os.path.join(d, "zoo.cfg")],
                               os.path.join(self.out, "zk-n%d.log" % i), env=env)

    def mode(self, i):
        """leader, follower, or None (down, stopped, no quorum)."""
        if self.m[i] is None:
            return None
        try:
            with socket.create_connection(("127.0.0.1", self.cports[i]), timeout=0.5) as s:
                s.settimeout(0.5)
                s.sendall(b"srvr")
                out = b""
                while True:
                    b = s.recv(4096)
                    if not b:
                        break
                    out += b
        except OSError:
            return None
        for line in out.decode(errors="replace").splitlines():
            if line.startswith("Mode: "):
                return line[6:].strip()
        return None

    def wait_up(self, secs):
        t = time.monotonic() + secs
        while time.monotonic() < t:
            modes = [self.mode(i) for i in range(3)]
            if modes.count("leader") == 1 and modes.count("follower") == 2:
                return True
            time.sleep(0.3)
        return False

    def leader(self):
        """The index of the server that is the leader, or None."""
        modes = [self.mode(j) for j in range(3)]
        return modes.index("leader") if "leader" in modes else None

    def answers(self):
        """Whether a leader with a follower (a quorum) answers now."""
        modes = [self.mode(j) for j in range(3)]
        return "leader" in modes and "follower" in modes

    def poll(self):
        """As Store.poll, from one srvr to each server: the epoch is the
        leader's index (a new one is an election, after which the new
        leader gives every session a fresh timeout); whole, a leader and two
        followers.  (answers() and leader() each ask the three again.)"""
        modes = [self.mode(j) for j in range(3)]
        leader = modes.index("leader") if "leader" in modes else None
        return ("leader" in modes and "follower" in modes, leader,
                modes.count("leader") == 1 and modes.count("follower") == 2)

    def hosts(self):
        return ",".join("127.0.0.1:%d" % p for p in self.cports)

    def agent_args(self, host_port=None):
        hosts = "%s:%d" % host_port if host_port else self.hosts()
        return ["--backend", "zookeeper", "--zookeeper-timeout-ms", "400",
                "--zookeeper-hosts", hosts, "--zookeeper-root", self.ROOT]

    def upstream(self):
        return ("127.0.0.1", self.cports[0])

    def path(self, cl, kind, pair):
        return self.ROOT + "/" + key_name(cl, kind, pair)

    def classify(self, req, cluster):
        """A multi (OpCode 14) whose first op is a create (MultiHeader type
        1, done false, err -1) of a worker node of @cluster is a claim; one
        whose first op is a check (type 13) of one, a raise of the mark; an
        exists (OpCode 3) of one, a renewal's proof; a delete (2), a
        release."""
        pre = (self.ROOT + "/" + "%s:%s:worker:" % (PREFIX, cluster)).encode()
        for kind, head in (("claim", struct.pack(">i", 14) + struct.pack(">iBi", 1, 0, -1)),
                           ("raise", struct.pack(">i", 14) + struct.pack(">iBi", 13, 0, -1)),
                           ("renewal", struct.pack(">i", 3)), ("release", struct.pack(">i", 2))):
            i = req.rfind(head)
            while i >= 0:
                at = i + len(head)
                n = struct.unpack(">i", req[at:at + 4])[0] if len(req) >= at + 4 else -1
                p = req[at + 4:at + 4 + n] if 0 < n < 4096 else b""
                # the packet (length, xid, then @head) ends the bytes: the
                # request just sent, not one before it
                whole = i >= 8 and struct.unpack(">i", req[i - 8:i - 4])[0] == len(req) - i + 4
                if whole and p.startswith(pre) and len(p) == n:
                    return (kind, p.decode(errors="replace"))
                i = req.rfind(head, 0, i)
        return ("other", "")

    # a reply whose length prefix says 256 MB
    huge_reply = struct.pack(">i", 256 << 20)

    def cli(self, cmd, timeout=10):
        """One command of the C client's cli_mt, in a session of its own."""
        r = subprocess.run([ZK_CLI, "-h", self.hosts(), "-c", cmd],
                           capture_output=True, text=True, timeout=timeout)
        return r.stdout + r.stderr

    def _get(self, path):
        out = self.cli("get " + path)
        lines = out.splitlines()
        for i, ln in enumerate(lines):
            if "value_len = " in ln:
                if ln.strip().endswith("= -1"):
                    return ""
                return lines[i + 1] if i + 1 < len(lines) else ""
        return None

    def key_get(self, cl, pair):
        return self._get(self.path(cl, "worker", pair))

    def key_del(self, cl, pair):
        self.cli("delete " + self.path(cl, "worker", pair))

    def key_replace(self, cl, pair, owner):
        p = self.path(cl, "worker", pair)
        self.cli("delete " + p)
        self.cli("create " + p)
        self.cli("set %s %s" % (p, owner))

    def mark_get(self, cl, pair):
        return self._get(self.path(cl, "mark", pair))

    def mark_set(self, cl, pair, text):
        p = self.path(cl, "mark", pair)
        if self._get(p) is None:
            self.cli("create " + p)
        self.cli("set %s %s" % (p, text))

    def mark_value(self, cl, pair):
        v = self.mark_get(cl, pair)
        v = (v or "").split(" ")[0]
        return int(v) if v.isdigit() else None

    def mark_del(self, cl, pair):
        self.cli("delete " + self.path(cl, "mark", pair))

    def mark_read_only(self, cl, pair, perms="r"):
        """The mark node's ACL set to world:anyone:@perms (r: readable, not
        writable: ZNOAUTH on a setData; wa: not readable), by the Java
        zkCli.sh (cli_mt has no setAcl); its getAcl read back."""
        p = self.path(cl, "mark", pair)
        env = dict(os.environ, CLIENT_JVMFLAGS="-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1",
                   ZOO_LOG_DIR=self.out)
        out = ""
        for cmd in ("setAcl %s world:anyone:%s" % (p, perms), "getAcl %s" % p):
            r = subprocess.run([ZK_JCLI, "-server", self.hosts()] + cmd.split(),
                               capture_output=True, text=True, timeout=60, env=env)
            out = r.stdout + r.stderr
        return out


class MySQL(Store):
    name = "mysql"
    restart_wait = 0
    extra_args = ()     # more mariadbd arguments (a scenario's own server: server-id, binlog)

    def start(self):
        d = os.path.join(self.out, "mysql")
        os.makedirs(d, exist_ok=True)
        self.user = pwd.getpwuid(os.getuid()).pw_name
        r = subprocess.run(["mariadb-install-db", "--no-defaults",
                            "--tmpdir=" + self.tmpdir(),
                            "--datadir=" + os.path.join(d, "data"), "--user=" + self.user,
                            "--auth-root-authentication-method=normal", "--skip-test-db",
                            "--innodb-log-file-size=8M"],
                           capture_output=True, text=True, timeout=180)
        if r.returncode != 0:
            print(r.stdout[-500:] + r.stderr[-500:], flush=True)
            return False
        self.port = free_port()
        self.m = [None]
        self.start_member(0)
        if not self.wait_up(60):
            return False
        with open(os.path.join(self.out, "agent.conf"), "w") as f:
            f.write("mysql-password = sfpw\n")
        # The agents' user: the privileges of docs/deployment-mysql.md, a password over TCP.
        return self.sql(
            "CREATE DATABASE snowflake; CREATE USER 'sf'@'127.0.0.1' IDENTIFIED BY 'sfpw'; "
            "GRANT SELECT, INSERT, UPDATE, CREATE ON snowflake.* TO 'sf'@'127.0.0.1'") is not None

    def sock(self):
        """The server's socket: in its directory, or in a directory of its own
        under /tmp when that path would pass a socket's 107 bytes (a mutant's
        scenario server in a clone at a long path: mariadbd would not start)."""
        if getattr(self, "_sock", None) is None:
            self._sock = os.path.join(os.path.abspath(self.out), "mysql", "sock")
            if len(self._sock.encode()) > 100:
                self._sock = os.path.join(tempfile.mkdtemp(prefix="sf-mysql-"), "sock")
        return self._sock

    def tmpdir(self):
        """The server's temporary directory, its own, not the host's /tmp: in
        the run of 53012c1 the lease lane's bootstrap found its Aria
        temporary tables gone from /tmp ("#sql-temptable-...MAD not found")
        and aborted."""
        t = os.path.join(self.out, "mysql", "tmp")
        os.makedirs(t, exist_ok=True)
        return t

    def start_member(self, i):
        d = os.path.join(self.out, "mysql")
        argv = ["mariadbd", "--no-defaults", "--datadir=" + os.path.join(d, "data"),
                "--tmpdir=" + self.tmpdir(),
                "--user=" + self.user, "--bind-address=127.0.0.1", "--port=%d" % self.port,
                "--socket=" + self.sock(), "--pid-file=" + os.path.join(d, "pid"),
                "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=1",
                "--max-connections=200", "--log-error=" + os.path.join(self.out, "mariadbd.err")
                ] + list(self.extra_args)
        self.m[0] = self.spawn(argv, os.path.join(self.out, "mariadbd.log"))

    def sql(self, q, timeout=5):
        """Run @q as root over the server's socket: its output, or None."""
        try:
            r = subprocess.run(["mariadb", "--no-defaults", "-S", self.sock(), "-uroot", "-N", "-B",
                                "-e", q], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout if r.returncode == 0 else None

    def wait_up(self, secs):
        t = time.monotonic() + secs
        while time.monotonic() < t:
            if self.sql("SELECT 1", timeout=2) is not None:
                return True
            time.sleep(0.1)
        return False

    def answers(self):
        return self.sql("SELECT 1", timeout=1) is not None

    def agent_args(self, host_port=None):
        h, p = host_port or ("127.0.0.1", self.port)
        return ["--config", os.path.join(self.out, "agent.conf"), "--backend", "mysql",
                "--mysql-host", h, "--mysql-port", str(p), "--mysql-user", "sf",
                "--mysql-timeout-ms", "300"]

    def upstream(self):
        return ("127.0.0.1", self.port)

    def classify(self, req, cluster):
        """The last COM_QUERY (0x03) in @req: an UPDATE of @cluster's rows
        that sets the owner is a claim; one that sets a new expiry only, a
        renewal; one that sets the expiry to 1970, a release."""
        # the packet (3-byte length, sequence, 0x03, the query) that ends
        # the bytes: the request just sent
        i = req.rfind(b"\x03")
        while i >= 4 and int.from_bytes(req[i - 4:i - 1], "little") != len(req) - i:
            i = req.rfind(b"\x03", 0, i)
        if i < 4:
            return ("other", "")
        q = req[i + 1:].decode(errors="replace")
        if not re.search(r"\bUPDATE\b", q):
            return ("read", "")
        m = re.search(r"cluster\s*=\s*'([^']*)'", q)
        if not m or m.group(1) != cluster:
            return ("other", "")
        m = re.search(r"datacenter\s*=\s*(\d+)\s+AND\s+worker\s*=\s*(\d+)", q)
        k = "%s:%s:worker:%s:%s" % ((PREFIX, cluster) + (m.groups() if m else ("?", "?")))
        if "1970-01-01" in q:
            return ("release", k)
        if re.search(r"SET\s+owner\s*=\s*'[^']", q):
            return ("claim", k)
        if re.search(r"SET\s+expiry\s*=\s*UTC_TIMESTAMP", q):
            return ("renewal", k)
        return ("other", k)

    # a packet of the longest length (16 MB - 1: more packets follow)
    huge_reply = b"\xff\xff\xff\x01"

    def where(self, cl, pair):
        return ("prefix = '%s' AND cluster = '%s' AND datacenter = %d AND worker = %d"
                % (PREFIX, cl, pair[0], pair[1]))

    def key_get(self, cl, pair):
        out = self.sql("SELECT owner FROM snowflake.snowflake_lease WHERE %s AND "
                       "expiry > UTC_TIMESTAMP(6)" % self.where(cl, pair))
        return out.strip() or None if out is not None else None

    def key_del(self, cl, pair):
        # an operator clears the lease (the row and its mark stay)
        self.sql("UPDATE snowflake.snowflake_lease SET owner = '', expiry = '1970-01-01' "
                 "WHERE %s" % self.where(cl, pair))

    def key_replace(self, cl, pair, owner):
        self.sql("UPDATE snowflake.snowflake_lease SET owner = '%s', expiry = UTC_TIMESTAMP(6) "
                 "+ INTERVAL 60 SECOND WHERE %s" % (owner, self.where(cl, pair)))

    def mark_get(self, cl, pair):
        out = self.sql("SELECT mark FROM snowflake.snowflake_lease WHERE %s" % self.where(cl, pair))
        return out.strip() or None if out is not None else None

    def mark_set(self, cl, pair, text):
        r = subprocess.run(["mariadb", "--no-defaults", "-S", self.sock(),
                            "-uroot", "-N", "-B", "-e",
                            "SET SESSION sql_mode = 'STRICT_ALL_TABLES'; UPDATE "
                            "snowflake.snowflake_lease SET mark = %s WHERE %s"
                            % (text, self.where(cl, pair))],
                           capture_output=True, text=True, timeout=5)
        if r.returncode == 0:
            return
        # ER_WARN_DATA_OUT_OF_RANGE 1264, ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
        # 1366, ER_BAD_FIELD_ERROR 1054 (abc read as a column), ER_DATA_OUT_OF_RANGE 1690
        if re.search(r"ERROR (1264|1366|1054|1690)\b", r.stderr):
            raise Refused("mysql refused mark %r: %s" % (text, r.stderr.strip()[:80]))
        raise OSError("mysql: setting mark %r: %s" % (text, r.stderr.strip()[:160]))

    def mark_written_form(self, text):
        """A number within the layout's timestamps (41 bits) is a mark as
        written here: the column holds numbers, not their text."""
        return text.isdigit() and text == str(int(text)) and int(text) < 1 << 41

    def mark_set_value(self, cl, pair, v):
        self.mark_set(cl, pair, str(v))

    def mark_del(self, cl, pair):
        # the mark is a column of the row: the row goes
        self.sql("DELETE FROM snowflake.snowflake_lease WHERE %s" % self.where(cl, pair))


STORES = {"redis": Redis, "etcd": Etcd, "zookeeper": ZooKeeper, "mysql": MySQL}
