#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# P10's agent N+1 (bench/fleet.py, Fleet.extra()) on a store too slow to
# answer it for 12 s: it must still be seen to say event=pool_full and claim
# nothing, after those 12 s.  Under a fleet of 512 the agent's walk of the
# whole pool took longer than the 10 s fleet.py watched it for, and P10
# read "no pool_full said" (etcd 512, ZooKeeper 256 on a 2-core host).
# The real agent (dry run) and a real Redis (tests/contract/stores.py), 4
# agents holding a pool of 4 pairs; agent 5 reaches Redis through the
# contract suite's fault proxy, which holds every reply for 12 s.  Run by
# the static stage; prints "fleet-test: N passed, M failed".
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "contract"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import fleet  # noqa: E402
import stores as S  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402
from tap import Tap  # noqa: E402

HOLD_S = 12
TAP = Tap()
check = TAP.check


def main():
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    agent = os.path.join(build, "userspace", "snowflake-agent")
    r = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "userspace"),
                        "OUT=" + os.path.join(build, "userspace"), "agent"],
                       capture_output=True, text=True)
    if r.returncode:
        print(r.stdout + r.stderr)
        check("snowflake-agent builds", False)
        return
    out = tempfile.mkdtemp(prefix="fleet-test.")
    procs = []
    st = S.Redis(out, procs)
    proxy = None
    f = None
    try:
        if not st.start():
            check("redis-server starts", False)
            return
        args = argparse.Namespace(agent=agent, ttl_ms=3000, timeout_s=60)
        n = 4
        f = fleet.Fleet(args, st, n, "ft", out)
        ok, err = f.init()
        check("--init-store %s" % (err if not ok else "ok"), ok)
        ids = list(range(n))
        f.start(ids, 0)
        secs, held, dead = f.wait_all(ids, 0, fleet.time.monotonic())
        check("%d agents hold %d distinct pairs (%s s)" % (n, held, secs and round(secs, 2)), secs is not None)
        proxy = FaultProxy(st.upstream())
        proxy.set_mode("hold")
        t = threading.Timer(HOLD_S, proxy.set_mode, ("pass",))
        t.start()
        res = f.extra(via=("127.0.0.1", proxy.port))
        t.cancel()
        check("agent %d says pool_full, after the store's %d s of silence (%s)" % (n + 1, HOLD_S, res),
              res["extra_pool_full"] and res["extra_s"] is not None and res["extra_s"] >= HOLD_S)
        check("agent %d claims nothing" % (n + 1), not res["extra_claimed"])
        check("the %d still hold their pairs" % n, len(f.claims(ids, 0)) == n and
              all(f.procs[i][0].poll() is None for i in ids))
    finally:
        if f:
            f.kill([i for i in f.procs], fleet.signal.SIGTERM)
        if proxy:
            proxy.close()
        st.stop()
        S.stop_procs(procs)
        if TAP.failed:
            print("logs kept in %s" % out)
        else:
            shutil.rmtree(out, ignore_errors=True)


main()
TAP.finish("fleet-test")
