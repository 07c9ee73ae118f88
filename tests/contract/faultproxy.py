#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A protocol-blind TCP fault proxy between snowflake-agent and its store.

  faultproxy.py --upstream HOST:PORT [--listen PORT] --control PATH

Listens on 127.0.0.1 (a free port unless --listen; the port is printed on
stdout), forwards every connection to the upstream byte for byte, and
applies one mode to what the store sends back (the replies):

  pass              forward as they come (the default)
  hold              keep the replies (the requests still go through); the
                    held bytes are sent when the mode changes
  trickle MS        one byte of reply every MS milliseconds
  inflate BYTES [HEXPREFIX]
                    after each reply chunk, BYTES of garbage ('x'), in
                    64 KiB writes (the reply made huge); with HEXPREFIX,
                    the reply chunk is replaced by those bytes and the
                    garbage (the harness's own header of a huge reply)
  hold-at HEXPATTERN[,HEXPATTERN...]
                    once: the first request containing the bytes HEXPATTERN
                    is forwarded, and from then on the mode is hold (its
                    reply and every later one kept: a store that stops
                    answering at that very request)
  delay-at HEXPATTERN[,HEXPATTERN...]
                    once: the first request containing the bytes HEXPATTERN
                    is not forwarded, nor is anything after it on that
                    connection, until "release" (in order; the replies
                    still flow): a request delayed in the network, after
                    everything before it was answered
  release           forward what delay-at kept back
  drop HEXPATTERN[,HEXPATTERN...]
                    once: the first request containing the bytes HEXPATTERN
                    is forwarded, its reply read and thrown away, and that
                    connection cut (a reply lost after the store committed)
  cut               close every open connection (new ones are accepted)

In-process only, arm_delay_detached(): the first request matching is not
forwarded but kept (its client may give up and close meanwhile: the
connection to the store stays open) until release_detached(), which sends
it to the store then and reads its reply, thrown away (a request delayed
in the network that the store runs after its sender gave it up).

It knows nothing of the protocols: a pattern is bytes the harness knows to
be in one request (the claim, a renewal); in-process, arm_drop() also takes
a predicate (the store's own reading of a request, tests/contract/stores.py
classify()).  Every fault it applies is REPORTED (acted: what, when, on
which connection, the request bytes it acted on; inflated and replaced:
how much), so that a check can prove its fault fired where it meant.
Control: one line per connection on the unix socket PATH ("mode pass",
"mode trickle 300", "inflate 1000000 2433...", "drop 45564...", "cut",
"stats"), answered with one line ("ok ...", or "err ...").  The class
FaultProxy is the same thing in-process (tests/contract/contract.py uses
it so).
"""
import argparse
import os
import socket
import sys
import threading
import time


class Conn:
    def __init__(self, proxy, client):
        self.p = proxy
        self.client = client
        self.server = None
        self.drop = False        # the reply to the request just seen is lost
        self.closed = False
        self.tail = b""          # the end of the request bytes before this chunk
        self.delayed = False     # delay-at: what the client sends is kept back
        self.pending = []        # ... here, until release()
        self.detached = None     # a detached request's bytes (arm_delay_detached())
        with proxy.lock:
            proxy.nconn += 1
            self.id = proxy.nconn

    def close(self):
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.server):
            if s is None:
                continue
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
        with self.p.lock:
            self.p.conns.discard(self)

    def run(self):
        try:
            self.server = socket.create_connection(self.p.upstream, timeout=5)
            self.server.settimeout(None)
        except OSError:
            self.close()
            return
        threading.Thread(target=self.up, daemon=True).start()
        self.down()

    def up(self):
        """client -> store: forwarded as is; a drop pattern armed here."""
        try:
            while True:
                b = self.client.recv(65536)
                if not b:
                    break
                # A request may straddle two reads: matched with the end
                # of the one before.
                seen = self.tail + b
                self.tail = seen[-4096:]
                if self.p.observe:
                    self.p.observe(seen)
                with self.p.lock:
                    m = self.p.drop_match
                    h = self.p.hold_match
                    if h and h(seen):
                        # before the request goes on: its reply is held
                        self.p.hold_match = None
                        self.p.mode = "hold"
                        self.p.acted.append({"fault": "hold", "conn": self.id,
                                             "at": time.monotonic(), "request": seen[-8192:]})
                    if m and m(seen):
                        if not self.p.drop_every:
                            self.p.drop_match = None
                        self.p.dropped += 1
                        self.p.acted.append({"fault": "drop", "conn": self.id,
                                             "at": time.monotonic(), "request": seen[-8192:]})
                        self.drop = True
                    dm = self.p.detach_match
                    if self.detached is None and dm and dm(seen):
                        self.p.detach_match = None
                        self.detached = b""
                        self.p.detached_conns.append(self)
                        self.p.acted.append({"fault": "delay", "conn": self.id,
                                             "at": time.monotonic(), "request": seen[-8192:]})
                    if self.detached is not None:
                        self.detached += b
                        continue
                    d = self.p.delay_match
                    if d and d(seen):
                        self.p.delay_match = None
                        self.delayed = True
                        self.p.delaying.append(self)
                        self.p.acted.append({"fault": "delay", "conn": self.id,
                                             "at": time.monotonic(), "request": seen[-8192:]})
                    if self.delayed:
                        # (release() sends it, under the lock: in order)
                        self.pending.append(b)
                        continue
                self.server.sendall(b)
        except OSError:
            pass
        if self.detached is not None:
            # The client gave up: the store's side waits for release_detached().
            return
        self.close()

    def release_detached(self):
        """Send the detached request to the store now; its reply is read
        and thrown away (down()), then the connection closed."""
        try:
            self.server.sendall(self.detached)
        except OSError:
            self.close()
            return False
        return True

    def down(self):
        """store -> client: the mode applies."""
        held = b""
        try:
            while True:
                b = self.server.recv(65536)
                if not b:
                    break
                if self.drop or self.detached is not None:
                    # The store answered: its reply is lost, the connection cut.
                    if self.detached is not None:
                        self.p.detached_replies.append(b)
                    time.sleep(0.05)
                    break
                mode, arg = self.p.mode, self.p.arg
                if mode == "hold":
                    held += b
                    while self.p.mode == "hold" and not self.closed:
                        time.sleep(0.02)
                    b, held = held, b""
                    mode, arg = self.p.mode, self.p.arg
                if mode == "trickle":
                    for i in range(len(b)):
                        if self.closed:
                            return
                        self.client.sendall(b[i:i + 1])
                        self.p.trickled += 1
                        if self.p.mode != "trickle":
                            self.client.sendall(b[i + 1:])
                            break
                        time.sleep(arg / 1000.0)
                    continue
                if mode == "inflate" and self.p.prefix:
                    b = self.p.prefix
                    self.p.replaced += 1
                self.client.sendall(b)
                if mode == "inflate":
                    junk = b"x" * 65536
                    left = arg
                    while left > 0 and not self.closed and self.p.mode == "inflate":
                        n = min(left, len(junk))
                        self.client.sendall(junk[:n])
                        left -= n
                        self.p.inflated += n
        except OSError:
            pass
        self.close()


class FaultProxy:
    def __init__(self, upstream, port=0, observe=None):
        self.upstream = upstream
        self.observe = observe   # called with every request's bytes
        self.lock = threading.Lock()
        self.conns = set()
        self.mode, self.arg = "pass", 0
        self.prefix = b""
        self.drop_match = None
        self.drop_every = False  # arm_drop(every=True): armed after it fires
        self.hold_match = None
        self.delay_match = None
        self.delaying = []       # connections delay-at keeps back
        self.detach_match = None
        self.detached_conns = []  # connections whose request is detached
        self.detached_replies = []  # what the store answered a released one
        self.released = 0        # requests' bytes forwarded late by release()
        self.dropped = 0
        self.acted = []          # the report: every request a fault acted on
        self.inflated = 0        # bytes of garbage sent after replies
        self.replaced = 0        # replies replaced by the huge reply's header
        self.trickled = 0        # bytes trickled
        self.nconn = 0
        self.accepted = 0
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            conn = Conn(self, c)
            with self.lock:
                self.conns.add(conn)
                self.accepted += 1
            threading.Thread(target=conn.run, daemon=True).start()

    def set_mode(self, mode, arg=0, prefix=b""):
        self.prefix = prefix
        self.mode, self.arg = mode, arg

    def arm_drop(self, *patterns, match=None, every=False):
        """The first request containing any of @patterns (or for which
        @match(request bytes) is true): its reply lost; reported in acted.
        With @every, every such request, until disarm_drop()."""
        def has(b):
            return any(p in b for p in patterns)
        with self.lock:
            self.drop_match = match or has
            self.drop_every = every

    def disarm_drop(self):
        with self.lock:
            self.drop_match = None
            self.drop_every = False

    def arm_hold(self, *patterns, match=None):
        """The first request containing any of @patterns (or for which
        @match(request bytes) is true) goes through, and from then on the
        mode is hold; reported in acted."""
        def has(b):
            return any(p in b for p in patterns)
        with self.lock:
            self.hold_match = match or has

    def arm_delay(self, *patterns, match=None):
        """The first request containing any of @patterns (or for which
        @match(request bytes) is true), and everything after it on its
        connection, kept back until release(); reported in acted."""
        def has(b):
            return any(p in b for p in patterns)
        with self.lock:
            self.delay_match = match or has

    def arm_delay_detached(self, *patterns, match=None):
        """The first request containing any of @patterns (or for which
        @match(request bytes) is true) is kept from the store until
        release_detached(), its client free to give up; reported in acted."""
        def has(b):
            return any(p in b for p in patterns)
        with self.lock:
            self.detach_match = match or has

    def release_detached(self, secs=5.0):
        """The detached request sent to the store now, and its reply waited
        for (@secs): the reply's bytes, or None."""
        with self.lock:
            conns = list(self.detached_conns)
            self.detached_conns = []
        n = len(self.detached_replies)
        if not conns or not conns[0].release_detached():
            return None
        t = time.monotonic() + secs
        while time.monotonic() < t and len(self.detached_replies) == n:
            time.sleep(0.02)
        return self.detached_replies[n] if len(self.detached_replies) > n else None

    def release(self):
        """Forward what delay-at kept back (to a connection still open):
        how many bytes."""
        n = 0
        with self.lock:
            for c in self.delaying:
                for b in c.pending:
                    try:
                        c.server.sendall(b)
                        n += len(b)
                    except OSError:
                        break
                c.pending = []
                c.delayed = False
            self.delaying = []
            self.released += n
        return n

    def cut(self):
        """Close every open connection: how many."""
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            c.close()
        return len(conns)

    def close(self):
        try:
            self.ls.close()
        except OSError:
            pass
        self.cut()

    def command(self, line):
        w = line.split()
        if not w:
            return "err empty"
        if w[0] == "mode" and len(w) >= 2 and w[1] in ("pass", "hold", "trickle", "inflate"):
            self.set_mode(w[1], int(w[2]) if len(w) > 2 else 0,
                          bytes.fromhex(w[3]) if len(w) > 3 else b"")
        elif w[0] == "drop" and len(w) == 2:
            self.arm_drop(*(bytes.fromhex(x) for x in w[1].split(",")))
        elif w[0] == "hold-at" and len(w) == 2:
            self.arm_hold(*(bytes.fromhex(x) for x in w[1].split(",")))
        elif w[0] == "delay-at" and len(w) == 2:
            self.arm_delay(*(bytes.fromhex(x) for x in w[1].split(",")))
        elif w[0] == "release":
            self.release()
        elif w[0] == "cut":
            self.cut()
        elif w[0] != "stats":
            return "err unknown command"
        return "ok mode=%s accepted=%d dropped=%d released=%d inflated=%d replaced=%d trickled=%d open=%d%s" % (
            self.mode, self.accepted, self.dropped, self.released, self.inflated, self.replaced,
            self.trickled,
            len(self.conns), "".join(" acted=%s:conn%d:%s" % (x["fault"], x["conn"],
                                                             x["request"][-200:].hex())
                                     for x in self.acted))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--listen", type=int, default=0)
    ap.add_argument("--control", required=True)
    a = ap.parse_args()
    host, _, port = a.upstream.rpartition(":")
    p = FaultProxy((host, int(port)), a.listen)
    print(p.port, flush=True)
    if os.path.exists(a.control):
        os.unlink(a.control)
    cs = socket.socket(socket.AF_UNIX)
    cs.bind(a.control)
    cs.listen(4)
    while True:
        c, _ = cs.accept()
        with c:
            line = c.makefile().readline()
            c.sendall((p.command(line) + "\n").encode())


if __name__ == "__main__":
    sys.exit(main())
