#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The contract harness's own rules, checked without a store (issue 31
a-c): each case is a scenario made to break one rule, run by the very
StoreRun.scenario() the lane uses, on a store that starts no server.

  - n/a comes only from NA_TABLE: an unlisted scenario that raises NA
    fails; a listed one that passes fails; a listed one that raises NA is
    n/a with the table's reason;
  - an agent that ends by itself (exit 3, a SIGSEGV the test did not send)
    fails the scenario, even one whose checks all held; a dead agent does
    not serve, whatever it logged last;
  - a history with no interval fails unless nobody was to serve; an agent
    that served without an interval in the history fails;
  - a mutant's scenario that ends in a harness error (its agent cannot
    be run) is moot, not killed: nothing was proven of the mutant;
  - the proxy's report names the request it acted on: a drop armed for a
    claim is not taken by another request's bytes; a hold armed for a
    request lets the replies before it through and holds its own (etcd:
    a lease revoke is a release, named by its lease);
  - a scenario's outage ends with it: one that fails with its store
    paused or a member killed leaves the store running for the next
    (Store.restore), and one after which the store does not answer fails;
    pause_all() returns once every thread is stopped;
  - issue 40 item 4, the mutants: a failure counts as a kill only when its
    Reason matches; every listed scenario runs (none skipped after a
    kill); a scenario that fails with the real agent makes the cell moot;
    a patch without a Reason, or with one that is not a regex, is a
    failure; a mutant whose cells are all n/a on a store fails there;
  - issue 42 finding 8, the count: an unknown --only name or store is an
    error before any store starts; liveness is n/a only when --only holds
    no scenario that measures it; an output whose TAP lines disagree with
    its closing count fails contract.py --tally (run.sh's check);
    sigterm_init fails an exit that is not the interrupted init's,
    sigterm_walk an agent that was not in its walk at the signal.

Prints TAP lines and "contract-selftest: N passed, M failed".
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import contract as C  # noqa: E402
import stores as S  # noqa: E402
from tap import Tap  # noqa: E402

TAP = Tap()
check = TAP.check


class NoStore(S.Store):
    """A store without servers: the rules under test need none."""
    name = "redis"

    def __init__(self, out, procs):
        super().__init__(out, procs)

    def agent_args(self, host_port=None):
        return []


class Args:
    def __init__(self, out, agent):
        self.agent, self.out, self.store, self.only, self.mutants = agent, out, "redis", "", ""


def fake_agent(d, body):
    """A program standing in for the agent: a shell script of @body."""
    p = os.path.join(d, "fake-agent-%d" % len(os.listdir(d)))
    with open(p, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(p, 0o755)
    return p


def hold_at(check):
    """The proxy's hold-at, in front of a line echo server of its own."""
    import socket
    import threading
    import time
    from faultproxy import FaultProxy
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def echo():
        c, _ = ls.accept()
        for line in c.makefile("rb"):
            c.sendall(line)
    threading.Thread(target=echo, daemon=True).start()
    px = FaultProxy(ls.getsockname())
    px.arm_hold(match=lambda b: b.endswith(b"RELEASE\n"))
    cs = socket.create_connection(("127.0.0.1", px.port), timeout=2)
    f = cs.makefile("rb")
    cs.sendall(b"RENEW\n")
    check("hold-at: a reply before the request goes through", f.readline() == b"RENEW\n")
    cs.settimeout(0.5)
    cs.sendall(b"RELEASE\n")
    try:
        got = cs.recv(100)
    except socket.timeout:
        got = None
    check("hold-at: the request's own reply is held (got %r)" % (got,), got is None)
    check("hold-at: the report names the request (%s)" % [
        (x["fault"], x["request"]) for x in px.acted],
        len(px.acted) == 1 and px.acted[0]["fault"] == "hold" and
        px.acted[0]["request"].endswith(b"RELEASE\n"))
    px.set_mode("pass")
    cs.settimeout(2)
    t = time.monotonic()
    got = cs.recv(100)
    check("hold-at: the mode pass again, the held reply comes (%r, %.1f s)" % (
        got, time.monotonic() - t), got == b"RELEASE\n")
    cs.close()
    px.close()
    ls.close()


class SleepStore(NoStore):
    """Two members that are real processes (sleep), for the rule that a
    scenario's outage ends with the scenario."""
    def start_member(self, i):
        self.m[i] = S.spawn(self.procs, ["sleep", "600"], os.devnull)

    def wait_up(self, secs):
        return all(m is not None and not S.stopped(m.pid) for m in self.m)


def outage_rules(d):
    """A scenario that fails half way through an outage it made (every
    member paused, or one killed) leaves its store running for the next
    (the CI run of 153696e: etcd left stopped, 36 later checks failed)."""
    procs = []
    st = SleepStore(d, procs)
    st.m = [None, None]
    for i in range(2):
        st.start_member(i)
    C.S.STORES["redis"] = lambda out, p: st
    run = C.StoreRun(Args(d, "/bin/true"))

    def paused_fails(c):
        c.expect(c.s.pause_all(), "a member did not stop")
        c.expect(False, "failed while the store was paused")
    v = run.scenario("selftest_paused", paused_fails)
    check("pause_all() returns once every member is stopped, and a scenario failing while "
          "they are leaves them continued (%s: %s)" % (v[0], v[1][:60]),
          v[0] == "FAIL" and "while the store was paused" in v[1] and
          all(m is not None and not S.stopped(m.pid) for m in st.m))
    first = st.m[0].pid

    def killed_fails(c):
        c.s.kill(0)
        c.expect(False, "failed while a member was down")
    v = run.scenario("selftest_killed", killed_fails)
    check("a scenario failing with a member killed leaves it started again (%s: %s)" %
          (v[0], v[1][:60]), v[0] == "FAIL" and st.m[0] is not None and st.m[0].pid != first)
    st.wait_up = lambda secs: False
    v = run.scenario("selftest_not_back", lambda c: c.s.kill(1))
    check("a scenario after which the store does not answer again fails (%s: %s)" %
          (v[0], v[1][:60]), v[0] == "FAIL" and "Store.restore" in v[1])
    S.stop_procs(procs)
    C.S.STORES["redis"] = NoStore


def manifest(md, *lines):
    os.makedirs(md, exist_ok=True)
    with open(os.path.join(md, "manifest"), "w") as f:
        for ln in lines:
            f.write("\t".join(ln) + "\n")
    open(os.path.join(md, "done"), "w").close()


def mutant_rules(d, run):
    """Issue 40 item 4: a mutant is killed by its Reason, every scenario
    runs, a failing control makes the cell moot."""
    fails = fake_agent(d, 'echo "x: info: event=start owner=o3" >&2\nexit 0')
    calls = []

    def fails_a(c):
        calls.append(("a", c.run.agent))
        c.expect(c.run.agent != fails, "the defect A showed")

    def fails_b(c):
        calls.append(("b", c.run.agent))
        c.expect(c.run.agent != fails, "something else broke")

    def control_fails(c):
        calls.append(("c", c.run.agent))
        raise C.Fail("the scenario fails with any agent")
    C.SCENARIOS.extend([("selftest_ma", fails_a), ("selftest_mb", fails_b),
                        ("selftest_mc", control_fails)])
    md = os.path.join(d, "mutants-reason")
    manifest(md, ("m-reason", "built", fails, "redis", "selftest_ma selftest_mb selftest_mc",
                  "defect A showed", "a defect"))
    run.mutants, real = md, run.agent
    cells = run.run_mutants({}).get("m-reason", {})
    run.agent = real
    check("a failure matching the Reason kills (%s)" % (cells.get("selftest_ma"),),
          cells.get("selftest_ma", ("-",))[0] == "killed")
    check("a failure not matching the Reason is not a kill (%s)" % (cells.get("selftest_mb"),),
          cells.get("selftest_mb", ("-",))[0] == "other")
    check("every listed scenario ran after the first kill (%s)" % sorted(cells),
          sorted(cells) == ["selftest_ma", "selftest_mb", "selftest_mc"])
    check("a scenario that fails with the real agent (its control, run here) is moot (%s)" %
          (cells.get("selftest_mc"),), cells.get("selftest_mc", ("-",))[0] == "moot" and
          ("c", real) in calls and ("c", fails) not in calls)
    check("the control ran with the real agent before the mutant's (%s)" % calls[:2],
          calls[:2] == [("a", real), ("a", fails)])
    check("Scenarios: SCENARIO@STORE runs on that store only (%s, %s)" % (
        C.mutant_scenarios("a b@etcd,mysql c", "redis"), C.mutant_scenarios("a b@etcd", "etcd")),
        C.mutant_scenarios("a b@etcd,mysql c", "redis") == ["a", "c"] and
        C.mutant_scenarios("a b@etcd", "etcd") == ["a", "b"])
    v = C.mutant_verdict("ok", "fine", [("s", C.BOUND + 1, 0, 0)], re.compile(r"liveness \d+ ms"))
    check("a liveness figure over the bound kills by a Reason naming it (%s)" % (v,),
          v[0] == "killed")
    check("a scenario that passes: SURVIVED", C.mutant_verdict(
        "ok", "fine", [], re.compile("x"))[0] == "SURVIVED")
    # the manifest: a Reason that is not a regex; the table's verdicts
    manifest(md, ("m-bad", "built", fails, "redis", "selftest_ma", "(unclosed", "a defect"),
             ("m-na", "built", fails, "redis", "selftest_ma", "x", "a defect"),
             ("m-ok", "built", fails, "redis", "selftest_ma", "x", "a defect"),
             ("m-other", "built", fails, "redis", "selftest_ma", "x", "a defect"))
    check("a Reason that is not a regex: status bad-reason", [
        r[1] for r in C.read_manifest(md)][0] == "bad-reason")
    fig = {"redis": {"mutants": {"m-na": {"selftest_ma": ("n/a", "why")},
                                 "m-ok": {"selftest_ma": ("killed", "x")},
                                 "m-other": {"selftest_ma": ("other", "y")}}}}
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        n, p, f = C.mutant_table(md, ["redis"], fig, 0)
    out = buf.getvalue()
    check("the table: m-bad, m-na (n/a only), m-other fail; m-ok passes (%d passed, %d failed)"
          % (p, f), (p, f) == (2, 3) and re.search(r"not ok \d+ mutant m-na on redis: every scenario n/a", out)
          and re.search(r"^ok \d+ mutant m-ok on redis selftest_ma: killed", out, re.M) and
          re.search(r"^mutants: m-ok +selftest_ma +killed", out, re.M))
    # mutants.sh: a patch without a Reason is not run
    pd = os.path.join(d, "noreason")
    os.makedirs(pd)
    pp = os.path.join(pd, "x-no-reason.patch")
    with open(pp, "w") as f:
        f.write("Mutant: a defect\nStores: redis\nScenarios: race\n\ndiff --git a/x b/x\n")
    r = subprocess.run(["bash", os.path.join(HERE, "mutants.sh"), os.path.join(pd, "out"), pp],
                       capture_output=True, text=True, timeout=60)
    line = open(os.path.join(pd, "out", "manifest")).read() if r.returncode == 0 else r.stderr
    check("mutants.sh: a patch without a Reason is no-reason (%s)" % line.strip()[:80],
          line.split("\t")[1:2] == ["no-reason"])


def count_rules(d, sc):
    """Issue 42 finding 8: what the count rests on."""
    me = os.path.join(HERE, "contract.py")
    for only, what in (("race,no_such_scenario", "an unknown --only name"),
                       (",", "an --only of no name")):
        r = subprocess.run([sys.executable, me, "--agent", "/bin/true", "--out",
                            os.path.join(d, "only"), "--only", only],
                           capture_output=True, text=True, timeout=30)
        check("%s is an error before any store starts (exit %d: %s)" % (
            what, r.returncode, r.stderr.strip()[:60]), r.returncode == 2 and
            "no such scenario" in r.stderr and not os.path.exists(os.path.join(d, "only")))
    r = subprocess.run([sys.executable, me, "--agent", "/bin/true", "--out",
                        os.path.join(d, "only"), "--stores", "redis,nosql"],
                       capture_output=True, text=True, timeout=30)
    check("an unknown store is an error (exit %d)" % r.returncode, r.returncode == 2)
    res = {"gaps": [], "worst": ["-", 0, 0, 0]}
    v = C.liveness_tap("redis", res, ["oversized", "oversized_spin"])
    check("liveness: n/a for --only without a liveness scenario (%s)" % (v,), v[0] == "n/a")
    v = C.liveness_tap("redis", res, ["oversized", "race"])
    check("liveness: --only with a liveness scenario and no figure fails (%s)" % (v,),
          v[0] == "FAIL")
    v = C.liveness_tap("redis", res, None)
    check("liveness: a whole run with no figure fails (%s)" % (v,), v[0] == "FAIL")
    v = C.liveness_tap("redis", {"gaps": [("race", C.BOUND + 1, 0, 0)],
                                 "worst": ["race", C.BOUND + 1, 0, 0]}, None)
    check("liveness: over the bound fails (%s)" % (v,), v[0] == "FAIL")
    check("LIVENESS holds the scenarios that measure it (%s)" % sorted(C.LIVENESS)[:3],
          {"race", "kill9", "long_wait"} <= C.LIVENESS and "oversized" not in C.LIVENESS)
    good = ["ok 1 redis race: x", "not ok 2 redis kill9: y", "contract: 1 passed, 1 failed"]
    cases = [("a count that holds", good, True),
             ("a count above its TAP lines", good[:2] + ["contract: 2 passed, 1 failed"], False),
             ("a TAP line missing", [good[0], "not ok 3 redis kill9: y", good[2]], False),
             ("no closing count", good[:2], False),
             ("no TAP line at all", ["contract: 0 passed, 0 failed"], False)]
    for what, lines, want in cases:
        p = os.path.join(d, "tally-%d" % len(os.listdir(d)))
        with open(p, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([sys.executable, me, "--tally", p], capture_output=True, text=True,
                           timeout=30)
        check("contract.py --tally: %s %s (exit %d %s)" % (
            what, "passes" if want else "fails", r.returncode, r.stdout.strip()[-70:]),
            (r.returncode == 0) == want)
    # sigterm_init: the interrupted init's exit 1 and summary, nothing else
    term0 = fake_agent(d, 'trap "exit 0" TERM\nwhile :; do sleep 0.05; done')
    term1 = fake_agent(d, 'trap \'echo "x: err: event=store_initialised prefix=p cluster=c '
                          'datacenters=0-511 workers=0-511 pairs=262144 created=100 present=0 '
                          'replaced=0 invalid=0 failed=0 mark_ms=0 interrupted=1" >&2; exit 1\' '
                          'TERM\nwhile :; do sleep 0.05; done')
    v = sc("selftest_init0", C.s_sigterm_init, term0)
    check("sigterm_init fails an init that exits 0 at the SIGTERM (%s)" % v[1][:70],
          v[0] == "FAIL" and "interrupted" in v[1])
    term2 = fake_agent(d, 'trap \'echo "x: err: event=store_initialised prefix=p cluster=c '
                          'datacenters=0-511 workers=0-511 pairs=262144 created=100 present=0 '
                          'replaced=0 invalid=0 failed=2 mark_ms=0 interrupted=1" >&2; exit 1\' '
                          'TERM\nwhile :; do sleep 0.05; done')
    v = sc("selftest_init2", C.s_sigterm_init, term2)
    check("sigterm_init fails an init where pairs failed besides the one in flight (%s)" %
          v[1][:70], v[0] == "FAIL" and "interrupted" in v[1])
    v = sc("selftest_init1", C.s_sigterm_init, term1)
    check("sigterm_init passes the interrupted init's exit 1 (%s: %s)" % (v[0], v[1][:60]),
          v[0] == "ok")
    idle = fake_agent(d, 'trap "exit 0" TERM\necho "x: info: event=start owner=o4" >&2\n'
                         'for i in 1 2 3; do echo "x: debug: event=mark_missing" >&2; done\n'
                         'while :; do sleep 0.05; done')
    walks = fake_agent(d, 'trap "exit 0" TERM\necho "x: info: event=start owner=o5" >&2\n'
                          'while :; do echo "x: debug: event=mark_missing" >&2; sleep 0.01; done')
    v = sc("selftest_walk0", C.s_sigterm_walk, idle)
    check("sigterm_walk fails an agent whose walk ended before the SIGTERM (%s)" % v[1][:70],
          v[0] == "FAIL" and "not in its walk" in v[1])
    v = sc("selftest_walk1", C.s_sigterm_walk, walks)
    check("sigterm_walk passes an agent in its walk (%s: %s)" % (v[0], v[1][:60]),
          v[0] == "ok")


def main():
    d = tempfile.mkdtemp(prefix="contract-selftest.")
    C.S.STORES["redis"] = NoStore
    run = C.StoreRun(Args(d, "/bin/true"))

    def sc(name, fn, agent="/bin/true"):
        run.agent = agent
        return run.scenario(name, fn)

    # n/a only from the table
    def says_na(c):
        raise C.NA("the store cannot")
    v = sc("selftest_1", says_na)
    check("an unlisted scenario that raises NA fails (%s: %s)" % v, v[0] == "FAIL")
    listed = ("store_restart_volatile", "etcd")
    C.NA_TABLE[("selftest_listed", "redis")] = "listed here"
    v = sc("selftest_listed", lambda c: None)
    check("a listed scenario that passes fails (%s: %s)" % v, v[0] == "FAIL")
    v = sc("selftest_listed", says_na)
    check("a listed scenario that raises NA is n/a with the table's reason (%s: %s)" % v,
          v == ("n/a", "listed here"))
    check("NA_TABLE is the only n/a source: %s listed" % (listed,), listed in C.NA_TABLE)

    def harness_error(c):
        raise OSError("a store command failed")
    v = sc("selftest_2", harness_error)
    check("an exception is a failure, never n/a (%s)" % v[0], v[0] == "FAIL")

    # crashes
    crash3 = fake_agent(d, 'echo "x: info: event=start owner=o1" >&2\n'
                           'echo "x: info: event=unfenced" >&2\nsleep 0.3\nexit 3')
    segv = fake_agent(d, 'echo "x: info: event=unfenced" >&2\nsleep 0.3\nkill -SEGV $$')

    def runs_agent(c):
        a = c.agent()
        c.expect(a.wait("event=unfenced", 5), "never served")
        import time
        time.sleep(1)
        check("a dead agent does not serve, whatever it logged last", not a.serving())
    v = sc("selftest_3", runs_agent, crash3)
    check("an agent that exits 3 by itself fails the scenario (%s)" % v[1][:80],
          v[0] == "FAIL" and "exit 3" in v[1])
    v = sc("selftest_4", runs_agent, segv)
    check("an agent killed by a signal the test did not send fails it (%s)" % v[1][:80],
          v[0] == "FAIL" and "signal 11" in v[1])

    def stops_agents(c):
        c.agent()
        import time
        time.sleep(1)
        c.stop_agents()
    v = sc("selftest_5", stops_agents, crash3)
    check("stop_agents sees an agent that died before the SIGTERM (%s)" % v[1][:80],
          v[0] == "FAIL" and "exit 3" in v[1])

    # the history
    def empty_history(c):
        c.history()
    v = sc("selftest_6", empty_history)
    check("a history of 0 intervals fails (%s)" % v[1][:80], v[0] == "FAIL")
    v = sc("selftest_7", lambda c: c.history(none_served=True))
    check("a history of 0 intervals passes where nobody was to serve (%s)" % v[0],
          v[0] == "ok")
    served = fake_agent(d, 'trap "exit 0" TERM\n'
                           'echo "x: info: event=start owner=o2" >&2\n'
                           'echo "x: info: event=unfenced" >&2\n'
                           'while :; do sleep 0.1; done')

    def served_no_interval(c):
        a = c.agent()
        c.expect(a.wait("event=unfenced", 5), "never served")
        c.stop_agents()
        c.history()
    v = sc("selftest_8", served_no_interval, served)
    check("an agent that served with no interval in the history fails (%s)" % v[1][:80],
          v[0] == "FAIL" and "no interval" in v[1])

    # the proxy's report: what a record request is (etcd: a Range of a
    # record is a read; a Txn that puts a record is a claim, a renewal or a
    # release by the text it writes), and a claim matcher is not taken by a read
    st = S.Etcd(d, [])
    cl = "c"
    key = S.key_name(cl, "worker", (0, 0))
    k = S.b64(key)

    def req(path, body):
        return ("POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" %
                (path, len(body), body)).encode()

    def put(text):
        return req("/v3/kv/txn", '{"compare":[{"key":"%s","result":"EQUAL","target":"MOD",'
                   '"mod_revision":"5"}],"success":[{"request_put":{"key":"%s","value":"%s"}}]}'
                   % (k, k, S.b64(text)))
    read = req("/v3/kv/range", '{"key":"%s"}' % k)
    check("etcd: a record's Range is a read, not a claim (%s)" % (st.classify(read, cl),),
          st.classify(read, cl) == ("read", key))
    for text, kind in ((S.Etcd.rec_text("o:1", 5, 2000, 0), "claim"),
                       (S.Etcd.rec_text("o:1", 5, 2000, 3), "renewal"),
                       (S.Etcd.rec_text("-", 5, 0, 3), "release")):
        check("etcd: a Txn putting %r is a %s of its key (%s)" % (text[-30:], kind,
                                                               st.classify(put(text), cl)),
              st.classify(put(text), cl) == (kind, key))
    check("etcd: a put of another cluster's record is none of this cluster's (%s)" %
          (st.classify(put(S.Etcd.rec_text("o:1")), "other"),),
          st.classify(put(S.Etcd.rec_text("o:1")), "other")[0] == "other")
    # a mutant cell: a harness error proves nothing (a mutant whose agent
    # cannot be run is not killed by it)
    md = os.path.join(d, "mutants")
    os.makedirs(md)
    with open(os.path.join(md, "manifest"), "w") as f:
        f.write("selftest-mutant\tbuilt\t%s\tredis\tselftest_mutant\tnever served\tnone\n" %
                os.path.join(d, "no-such-agent"))
    open(os.path.join(md, "done"), "w").close()

    def runs_mutant(c):
        c.expect(c.agent().wait("event=unfenced", 5), "never served")
        c.stop_agents()
    C.SCENARIOS.append(("selftest_mutant", runs_mutant))
    run.mutants, real = md, run.agent
    v = run.run_mutants({"selftest_mutant": ("ok", "")}).get("selftest-mutant", {}).get(
        "selftest_mutant", ("-", "no cell"))
    run.agent = real
    check("a mutant whose agent cannot run is not killed by the harness error (%s: %s)" %
          (v[0], v[1][:80]), v[0] == "error" and "harness error" in v[1])
    hold_at(check)
    outage_rules(d)
    mutant_rules(d, run)
    count_rules(d, sc)
    run.stop()
    print("contract-selftest: %d passed, %d failed" % (TAP.passed, TAP.failed))
    return 1 if TAP.failed else 0


if __name__ == "__main__":
    sys.exit(main())
