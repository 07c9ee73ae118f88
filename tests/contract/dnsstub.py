#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A DNS server on 127.0.0.0/8 port 53 (UDP) that the harness controls:
the resolver of an agent started with it as its only nameserver (a mount
namespace of its own with this server's resolv.conf, run_argv()).

  hang      every query is kept unanswered (a resolver that never answers;
            the default)
  answer    the queries kept, and every one from now on, answered: NAME's
            A query with ADDR, any other query NOERROR with no record

Every query is recorded (client address and port, id, name, type): a
lookup of glibc's getaddrinfo() uses a socket of its own, so the distinct
client ports count the lookups started.  Needs root (port 53, the mount
namespace).
"""
import os
import socket
import struct
import threading


class DnsStub:
    def __init__(self, name, addr="127.0.0.1", tag=1):
        self.name, self.addr = name.lower().rstrip("."), addr
        self.lock = threading.Lock()
        self.mode = "hang"
        self.queries = []        # (client, id, name, qtype)
        self.kept = []           # unanswered (client, data)
        self.answered = 0
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # a free address of 127.53.0.0/16 (several stores run at once)
        err = None
        for i in range(tag, tag + 500):
            ip = "127.53.%d.%d" % (i // 250 % 250, i % 250 + 1)
            try:
                self.s.bind((ip, 53))
                self.ip = ip
                break
            except OSError as e:
                err = e
        else:
            raise OSError("no free 127.53.x.y:53 for the DNS stub: %s" % err)
        threading.Thread(target=self.serve, daemon=True).start()

    def lookups(self):
        """How many lookups asked (distinct client addresses and ports)."""
        with self.lock:
            return len({q[0] for q in self.queries if q[2] == self.name})

    @staticmethod
    def question(data):
        """(name, qtype, end of the question) of a query."""
        i, labels = 12, []
        while i < len(data) and data[i]:
            n = data[i]
            labels.append(data[i + 1:i + 1 + n].decode(errors="replace"))
            i += 1 + n
        qtype = struct.unpack(">H", data[i + 1:i + 3])[0] if len(data) >= i + 5 else 0
        return ".".join(labels).lower(), qtype, i + 5

    def reply(self, data):
        name, qtype, end = self.question(data)
        ans = b""
        if name == self.name and qtype == 1:
            ans = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 1, 4) + socket.inet_aton(self.addr)
        # id, QR RD RA NOERROR, one question, the answers, no others
        return (data[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if ans else 0, 0, 0) +
                data[12:end] + ans)

    def serve(self):
        while True:
            try:
                data, client = self.s.recvfrom(4096)
            except OSError:
                return
            if len(data) < 17:
                continue
            name, qtype, _ = self.question(data)
            with self.lock:
                self.queries.append((client, data[:2], name, qtype))
                if self.mode == "hang":
                    self.kept.append((client, data))
                    continue
            self.send(client, data)

    def send(self, client, data):
        try:
            self.s.sendto(self.reply(data), client)
            self.answered += 1
        except OSError:
            pass

    def answer(self):
        """From now on every query is answered, and the kept ones now."""
        with self.lock:
            self.mode = "answer"
            kept, self.kept = self.kept, []
        for client, data in kept:
            self.send(client, data)

    def run_argv(self, d, argv):
        """@argv run with this server as its resolver: a mount namespace of
        its own (unshare), where @d/resolv.conf (this server, one try of
        30 s: a lookup ends when the server answers) and @d/nsswitch.conf
        (hosts: files dns) are bound over /etc's; exec keeps the pid."""
        rc, ns = os.path.join(d, "resolv.conf"), os.path.join(d, "nsswitch.conf")
        with open(rc, "w") as f:
            f.write("nameserver %s\noptions timeout:30 attempts:1\n" % self.ip)
        with open(ns, "w") as f:
            f.write("hosts: files dns\n")
        sh = ('mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /etc/nsswitch.conf '
              '&& shift 2 && exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", sh, "sh",
                rc, ns] + list(argv)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass
