#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A TCP proxy that loses one reply after its request was delivered.

    reply-drop-proxy.py PORTFILE TARGET_PORT PATTERN

Listens on 127.0.0.1 (a free port, written to PORTFILE once listening),
forwards every connection to 127.0.0.1:TARGET_PORT both ways, blind to the
protocol.  The first time a client sends bytes that contain PATTERN (a
Python regular expression over bytes, matched on what the client sent on
that connection so far), the proxy forwards them to the server as usual,
then drops everything the server sends back on that connection, and cuts
the connection 0.5 s later: the request was delivered (and, for a store,
committed), its reply is lost.  Only once; every other connection and
byte passes through.  PORTFILE.fired is written when it happens.

Used by scripts/agent-test.sh (etcd), agent-zk-test.sh and
agent-mysql-test.sh for "a claim that committed but whose reply was lost".
"""
import re
import socket
import sys
import threading
import time

portfile, target, pattern = sys.argv[1], int(sys.argv[2]), re.compile(sys.argv[3].encode())
fired = threading.Event()
lock = threading.Lock()


def pump(src, dst, state, from_client):
    seen = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if from_client:
                seen = (seen + data)[-65536:]
                with lock:
                    if not fired.is_set() and pattern.search(seen):
                        fired.set()
                        state["drop"] = True
                        open(portfile + ".fired", "w").write("%d\n" % time.time())
                        threading.Timer(0.5, cut, (src, dst)).start()
                dst.sendall(data)
            elif not state.get("drop"):
                dst.sendall(data)
    except OSError:
        pass
    cut(src, dst)


def cut(a, b):
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    try:
        server = socket.create_connection(("127.0.0.1", target), timeout=5)
        server.settimeout(None)
    except OSError:
        client.close()
        return
    state = {}
    threading.Thread(target=pump, args=(client, server, state, True), daemon=True).start()
    threading.Thread(target=pump, args=(server, client, state, False), daemon=True).start()


def main():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    import os
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        serve(c)


main()
