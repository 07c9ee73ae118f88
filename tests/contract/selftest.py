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
    a lease revoke is a release, named by its lease).

Prints TAP lines and "contract-selftest: N passed, M failed".
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import contract as C  # noqa: E402
import stores as S  # noqa: E402

passed = failed = 0


def check(what, cond):
    global passed, failed
    if cond:
        passed += 1
        print("ok %d %s" % (passed + failed, what))
    else:
        failed += 1
        print("not ok %d %s" % (passed + failed, what))


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

    # the proxy's report: a claim matcher is not taken by a read
    st = S.Etcd(d, [])
    cl = "c"
    k = S.b64(S.key_name(cl, "worker", (0, 0)))
    m = S.b64(S.key_name(cl, "mark", (0, 0)))
    body = ('{"success":[{"request_range":{"key":"%s"}},{"request_range":{"key":"%s",'
            '"count_only":true}}]}' % (m, k))
    read = ("POST /v3/kv/txn HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode()
    body = ('{"compare":[{"key":"%s","result":"EQUAL","target":"CREATE","create_revision":"0"}],'
            '"success":[{"request_put":{"key":"%s","value":"bw==","lease":"7"}}],'
            '"failure":[{"request_range":{"key":"%s","count_only":true}}]}' % (k, k, k))
    claim = ("POST /v3/kv/txn HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode()
    check("etcd: read_pair()'s read-only Txn is a read, not a claim (%s)" %
          (st.classify(read, cl),), st.classify(read, cl)[0] == "read")
    check("etcd: the claim's Txn is a claim of its key (%s)" % (st.classify(claim, cl),),
          st.classify(claim, cl) == ("claim", S.key_name(cl, "worker", (0, 0))))
    check("etcd: b0278b3's drop pattern also matched the read (why finding a was possible)",
          b'"count_only":true}}]}' in read)
    body = '{"ID":"7"}'
    revoke = ("POST /v3/lease/revoke HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" %
              (len(body), body)).encode()
    check("etcd: a lease revoke is a release of its lease (%s)" % (st.classify(revoke, cl),),
          st.classify(revoke, cl) == ("release", "lease 7"))
    # a mutant cell: a harness error proves nothing (a mutant whose agent
    # cannot be run is not killed by it)
    md = os.path.join(d, "mutants")
    os.makedirs(md)
    with open(os.path.join(md, "manifest"), "w") as f:
        f.write("selftest-mutant\tbuilt\t%s\tredis\tselftest_mutant\tnone\n" %
                os.path.join(d, "no-such-agent"))
    open(os.path.join(md, "done"), "w").close()

    def runs_mutant(c):
        c.expect(c.agent().wait("event=unfenced", 5), "never served")
        c.stop_agents()
    C.SCENARIOS.append(("selftest_mutant", runs_mutant))
    run.mutants, real = md, run.agent
    v = run.run_mutants({}).get("selftest-mutant", ("-", "no cell"))
    run.agent = real
    check("a mutant whose agent cannot run is not killed by the harness error (%s: %s)" %
          (v[0], v[1][:80]), v[0] == "moot" and "harness error" in v[1])
    hold_at(check)
    run.stop()
    print("contract-selftest: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
