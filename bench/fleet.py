#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench/fleet.py AGENT OUT [--stores etcd,redis,zookeeper,mysql]
[--counts 128,256,512,1024] [--ttl-ms 3000] [--hold-s 10] [--timeout-s 300]

P10 of `make bench` (issue 41, item 4): a fleet of dry-run agents started
at once against each real store on this machine (tests/contract/stores.py
starts them, as the contract suite does: etcd and ZooKeeper three members,
Redis one, MariaDB one), N agents on a pool of N pairs:

  cold   seconds from the start until every agent holds a pair and the N
         pairs are distinct (each agent's event=claimed), and the store's
         requests per second meanwhile;
  hold   the store's requests per second while they all hold, over
         --hold-s;
  kill   every agent killed with SIGKILL and all started again at once:
         seconds until every new agent holds a distinct pair (the dead
         ones' leases must expire first: one TTL), requests per second;
  extra  one more agent: it must serve nothing and say event=pool_full
         (seconds until it says so: a walk of the whole pool, watched
         for up to --timeout-s).

The store's requests are counted by the store itself: Redis'
total_commands_processed, etcd's grpc_server_handled_total (summed over
its members), ZooKeeper's "Received" of srvr (summed), MariaDB's
Questions.  It measures, never asserts: a count the machine cannot hold
(processes, memory, the store) is reported as reached so far, with why.
Prints one line per (store, N) and writes OUT/fleet.json.  The settings a
store needs for a fleet this size are in the deployment docs (MariaDB's
max_connections; ZooKeeper's maxClientCnxns).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "contract"))
import stores as S  # noqa: E402

CLAIM = re.compile(rb"event=claimed datacenter=(\d+) worker=(\d+)")


def pool_flags(n):
    """Datacenter and worker ranges of a pool of @n pairs (n a power of two,
    at most 1024: 5/5 bits)."""
    w = min(n, 32)
    d = n // w
    return ["--datacenter-ids", "0-%d" % (d - 1), "--worker-ids", "0-%d" % (w - 1)]


def requests(st):
    """The store's own count of the requests it has handled so far."""
    if st.name == "redis":
        m = re.search(r"total_commands_processed:(\d+)", st.cmd("INFO", "stats") or "")
        return int(m.group(1)) if m else None
    if st.name == "etcd":
        tot = 0
        for p in st.cports:
            try:
                out = subprocess.run(["curl", "-s", "-m", "2", "http://127.0.0.1:%d/metrics" % p],
                                     capture_output=True, text=True, timeout=5).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            tot += sum(int(float(v)) for v in re.findall(r"^grpc_server_handled_total\{[^}]*\} (\S+)$", out, re.M))
        return tot
    if st.name == "zookeeper":
        tot = 0
        for p in st.cports:
            try:
                out = subprocess.run(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/%d; echo srvr >&3; timeout 2 cat <&3" % p],
                                     capture_output=True, text=True, timeout=5).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            m = re.search(r"Received: (\d+)", out)
            tot += int(m.group(1)) if m else 0
        return tot
    if st.name == "mysql":
        out = st.sql("SHOW GLOBAL STATUS LIKE 'Questions'") or ""
        m = re.search(r"Questions\s+(\d+)", out)
        return int(m.group(1)) if m else None
    return None


class Fleet:
    def __init__(self, args, st, n, cluster, out):
        self.args, self.st, self.n, self.cl, self.out = args, st, n, cluster, out
        self.procs = {}

    def argv(self, i, via=None):
        sa = self.st.agent_args(via)
        return [self.args.agent] + ([] if "--config" in sa else ["--config", "/dev/null"]) + sa + [
            "--dry-run", "--ttl-ms", str(self.args.ttl_ms), "--settle-ms", "0",
            "--prefix", "fleet", "--cluster", self.cl, "--state-file", "", "--owner", "fleet%d" % i,
            "--log-level", "info"] + pool_flags(self.n)

    def init(self):
        r = subprocess.run(self.argv(0) + ["--init-store"], capture_output=True, text=True, timeout=300)
        return r.returncode == 0, r.stderr.strip()[-300:]

    def start(self, ids, gen, via=None):
        for i in ids:
            log = open(os.path.join(self.out, "agent-%s-%d-%d.%d.log" % (self.st.name, self.n, i, gen)), "wb")
            self.procs[i] = (subprocess.Popen(self.argv(i, via), stdout=subprocess.DEVNULL, stderr=log,
                                              stdin=subprocess.DEVNULL), log)

    def claims(self, ids, gen):
        """{i: (dc, w)} of the agents of @ids that logged a claim in @gen."""
        got = {}
        for i in ids:
            try:
                with open(os.path.join(self.out, "agent-%s-%d-%d.%d.log" % (self.st.name, self.n, i, gen)), "rb") as f:
                    m = None
                    for m in CLAIM.finditer(f.read()):
                        pass
            except OSError:
                continue
            if m:
                got[i] = (int(m.group(1)), int(m.group(2)))
        return got

    def wait_all(self, ids, gen, t0):
        """Seconds until every agent of @ids holds a distinct pair (None:
        not within the timeout), and how many did."""
        deadline = t0 + self.args.timeout_s
        while True:
            got = self.claims(ids, gen)
            dead = [i for i in ids if self.procs[i][0].poll() is not None]
            if len(got) == len(ids) and len(set(got.values())) == len(ids):
                return time.monotonic() - t0, len(got), dead
            if time.monotonic() > deadline or len(dead) == len(ids):
                return None, len(set(got.values())), dead
            time.sleep(0.25)

    def extra(self, via=None):
        """Agent N+1, started while the N hold their pairs (through @via,
        (host, port), when given): whether it says event=pool_full and
        claims nothing, and after how many seconds.  It must walk the whole
        pool first, one request or more a pair, on a store that serves the
        N meanwhile: watched until it says pool_full or claims, or for
        --timeout-s (as the fleet's own start), then stopped."""
        n = self.n
        self.start([n], 0, via)
        path = os.path.join(self.out, "agent-%s-%d-%d.0.log" % (self.st.name, n, n))
        t0 = time.monotonic()
        said = claimed = False
        while not said and not claimed and time.monotonic() - t0 < self.args.timeout_s:
            time.sleep(0.25)
            with open(path, "rb") as fh:
                text = fh.read()
            said = b"event=pool_full" in text
            claimed = bool(CLAIM.search(text))
            if self.procs[n][0].poll() is not None:
                break
        res = {"extra_pool_full": said, "extra_claimed": claimed,
               "extra_s": round(time.monotonic() - t0, 2) if said or claimed else None}
        self.kill([n], signal.SIGTERM)
        return res

    def kill(self, ids, sig=signal.SIGKILL):
        for i in ids:
            p, log = self.procs[i]
            if p.poll() is None:
                p.send_signal(sig)
        for i in ids:
            p, log = self.procs[i]
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()


def rate(st, c0, t0):
    c1 = requests(st)
    dt = time.monotonic() - t0
    return None if c0 is None or c1 is None or dt <= 0 else round((c1 - c0) / dt, 1)


def run_one(args, st, n, out):
    res = {"store": st.name, "agents": n, "ttl_ms": args.ttl_ms}
    f = Fleet(args, st, n, "f%d" % n, out)
    ok, err = f.init()
    if not ok:
        res["error"] = "--init-store failed: " + err
        return res
    ids = list(range(n))
    # cold start
    c0, t0 = requests(st), time.monotonic()
    f.start(ids, 0)
    secs, held, dead = f.wait_all(ids, 0, t0)
    res["cold_s"] = None if secs is None else round(secs, 2)
    res["cold_held"] = held
    res["cold_req_per_s"] = rate(st, c0, t0)
    if dead:
        res["cold_dead"] = len(dead)
    if secs is None:
        res["error"] = "cold start: %d of %d held distinct pairs within %d s (%d agents exited)" % (
            held, n, args.timeout_s, len(dead))
        f.kill(ids)
        return res
    # holding
    c0, t0 = requests(st), time.monotonic()
    time.sleep(args.hold_s)
    res["hold_req_per_s"] = rate(st, c0, t0)
    # the extra agent: pool_full, serves nothing
    res.update(f.extra())
    # SIGKILL all, all again at once
    f.kill(ids)
    c0, t0 = requests(st), time.monotonic()
    f.start(ids, 1)
    secs, held, dead = f.wait_all(ids, 1, t0)
    res["restart_s"] = None if secs is None else round(secs, 2)
    res["restart_held"] = held
    res["restart_req_per_s"] = rate(st, c0, t0)
    if secs is None:
        res["error"] = "after SIGKILL: %d of %d held distinct pairs within %d s" % (held, n, args.timeout_s)
    f.kill(ids, signal.SIGTERM)
    return res


def extra_text(r, timeout_s):
    """What agent N+1 did, in words (not started: the N did not all hold)."""
    if "extra_pool_full" not in r:
        return "not started (the fleet did not hold)"
    if r["extra_claimed"]:
        return "claimed a pair!"
    if r["extra_pool_full"]:
        return "pool_full after %s s, served nothing" % r["extra_s"]
    return "no pool_full said within %d s" % timeout_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("agent")
    ap.add_argument("out")
    ap.add_argument("--stores", default="etcd,redis,zookeeper,mysql")
    ap.add_argument("--counts", default="128,256,512,1024")
    ap.add_argument("--ttl-ms", type=int, default=3000)
    ap.add_argument("--hold-s", type=int, default=10)
    ap.add_argument("--timeout-s", type=int, default=300)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    classes = {"etcd": S.Etcd, "redis": S.Redis, "zookeeper": S.ZooKeeper, "mysql": S.MySQL}
    results = []
    for name in args.stores.split(","):
        procs = []
        sdir = os.path.join(args.out, name)
        os.makedirs(sdir, exist_ok=True)
        st = classes[name](sdir, procs)
        try:
            if not st.start():
                print("P10 %s: the store did not start (see %s)" % (name, sdir), flush=True)
                results.append({"store": name, "error": "the store did not start"})
                continue
            if name == "mysql":
                st.sql("SET GLOBAL max_connections = 1200")
            for n in (int(x) for x in args.counts.split(",")):
                r = run_one(args, st, n, sdir)
                results.append(r)
                print("P10 %-9s %5d agents: cold %s s (%s req/s), holding %s req/s, after SIGKILL %s s (%s req/s); "
                      "agent %d: %s%s" % (
                          name, n, r.get("cold_s"), r.get("cold_req_per_s"), r.get("hold_req_per_s"),
                          r.get("restart_s"), r.get("restart_req_per_s"), n + 1,
                          extra_text(r, args.timeout_s),
                          ("; " + r["error"]) if "error" in r else ""), flush=True)
                if "error" in r:
                    break
        finally:
            st.stop()
            S.stop_procs(procs)
    with open(os.path.join(args.out, "fleet.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
