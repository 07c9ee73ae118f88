#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge snowflake-agent histories (--history): no two owners ever held one
(datacenter, worker) pair at the same instant.

Input: history files (agents may share one; lines in any order), and
optionally the fault log of a harness.  All times are CLOCK_BOOTTIME ns of
one host, so the agents' lines compare directly.

  start owner=O space=S pid=P at=T      an agent started, claiming in space S
                                        (PREFIX:CLUSTER: pairs of different
                                        spaces are different ids)
  interval pair=D:W space=S owner=O from=T until=U [ts_from=A ts_until=B]
                                        the device was given pair D:W from T
                                        on, valid until U (the kernel deadline),
                                        and could stamp timestamps A..B (Unix
                                        ms; the floor and ceiling it was given)
  mark pair=D:W space=S owner=O value=V at=T
                                        the owner raised the pair's mark to V
  fence pair=D:W space=S owner=O at=T   the device was fenced at T
  claim pair=D:W space=S owner=O at=T ttl_ms=L settle_ms=M
                                        the owner's claim of D:W committed at T
                                        (it settles, then serves); from the
                                        agent's history, or (by=log) stamped by
                                        a harness from the agent's log, late by
                                        its polling
  exit owner=O code=C at=T              the agent ended
  fault kind=K pid=P at=T [until=T2]    (harness) K = sigstop (the agent did
                                        not run from T to T2), kill (SIGKILL
                                        at T), or a fault on the store
                                        (store-down: the store did not answer
                                        from T to T2; leader-change: an
                                        election between T and T2, its
                                        fresh TTLs included; both left out
                                        of gap_up_ms);
                                        key-delete, lease-clear, lease-expire:
                                        the leases taken away at T (wait_up_ms
                                        starts again)
  clock pid=P offset_ms=N at=T          (harness) the agent of pid P ran with
                                        its wall clock N ms away from ours
  clockbase boot_to_wall_ns=X           (harness) CLOCK_REALTIME - CLOCK_BOOTTIME

An owner issues with pair D:W from `from` to the earlier of `until` and its
next fence on D:W.  Two different owners' such spans on one pair must never
overlap.  Timestamps: an ID is (pair, timestamp, sequence), so no two
owners of one pair may ever stamp one timestamp, whatever their clocks:
their [ts_from, ts_until] windows must not intersect either.  An interval
without a window (an agent before the window) gets one derived from its
owner's clock offset (the harness's clock line) over its real-time span.
Figures: intervals checked, faults, and the longest time a live
(started, not stopped, not ended) agent went without a pair while some pair
of the pool was free, and the longest time one pair was served by nobody
while a live agent waited (how long a lost pair takes to be served again).
A pair claimed is taken, and its claimant has a pair, from the claim until
the claimant serves it, or at most settle + TTL after the claim, or a TTL
after the claimant ended, or until the leases are taken away (a key
deletion): a claimant that settles is not waiting, nor is its pair free.

Prints "lease-check: ..." lines; exits 1 on an overlap or unreadable input.
"""
import argparse
import bisect
import collections
import os
import subprocess
import sys


def records(paths):
    """Every line of @paths as (kind, its key=value words as a dict of
    strings, the line)."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                words = line.split()
                if words:
                    yield words[0], dict(w.partition("=")[::2] for w in words[1:]), line


def parse(paths):
    ev = collections.defaultdict(list)
    bad = 0
    for kind, kv, _ in records(paths):
        try:
            for k in ("at", "from", "until", "pid", "code", "ts_from", "ts_until",
                      "offset_ms", "clock_offset_ms", "boot_to_wall_ns", "value",
                      "ttl_ms", "settle_ms"):
                if k in kv:
                    kv[k] = int(kv[k])
        except ValueError:
            bad += 1
            continue
        ev[kind].append(kv)
    return ev, bad


def evidence(paths, pair, o1, o2, a, label):
    """The history lines behind a timestamp overlap on @pair: @o2's from
    its start to its first window reaching @a, and @o1's last lines on the
    pair before then (its start, claims, windows, marks, fences, exit),
    with the harness's faults meanwhile; so that a failing run's log alone
    tells the story (CI keeps no history file)."""
    space, _, dw = pair.partition("/")
    lines = []
    for kind, kv, line in records(paths):
        t = kv.get("at") or kv.get("from")
        if not t or not t.lstrip("-").isdigit():
            continue
        same = kv.get("pair") == dw and kv.get("space", "") == space
        if (kind in ("start", "exit") and kv.get("owner") in (o1, o2)) or \
                (kind in ("interval", "mark", "claim", "fence") and same and
                 kv.get("owner") in (o1, o2)) or kind in ("fault", "clock"):
            lines.append((int(t), line.rstrip()))
    lines.sort()
    t_end = None
    for t, ln in lines:
        if ln.startswith("interval ") and " owner=%s " % o2 in ln + " " and \
                "ts_until=" in ln and int(ln.split("ts_until=")[1].split()[0]) >= a:
            t_end = t
            break
    if t_end is None:
        return
    own = [(t, ln) for t, ln in lines if t <= t_end and (" owner=%s" % o1 in ln or
                                                          " owner=%s" % o2 in ln)]
    first = min(t for t, _ in own)
    keep = [x for x in own if " owner=%s" % o2 in x[1]][-15:] + \
        [x for x in own if " owner=%s" % o1 in x[1]][-15:]
    keep += [x for x in own if x[1].startswith("start ")]
    keep += [x for x in lines if first <= x[0] <= t_end and x[1].startswith(("fault ", "clock "))][-8:]
    print(f"lease-check: {label}the history behind {pair} ({o1} then {o2}):")
    for _, ln in sorted(set(keep))[-45:]:
        print(f"lease-check: {label}  {ln}")


def merge(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def judge(label, faults, hist, timeout=600):
    """This checker on @hist with the fault log @faults, in a process of its
    own (the lanes' harnesses): its CompletedProcess and its
    lease-check-figures as a dict of strings."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--label", label,
                        "--faults", faults, hist], capture_output=True, text=True,
                       timeout=timeout)
    fig = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("lease-check-figures: "):
            for w in ln.split()[1:]:
                k, _, v = w.partition("=")
                fig[k] = v
    return r, fig


class Longest:
    """Runs that grow a step at a time, one per key (an owner waiting, a pair
    vacant), each ended when its condition stops: the longest run seen
    (ns), its key and the time it reached that length (at)."""

    def __init__(self):
        self.runs, self.ns, self.key, self.at = {}, 0, None, None

    def grow(self, k, step, t, on):
        """@k's run grows by @step at @t while @on holds, else it ends."""
        if not on:
            self.runs.pop(k, None)
            return
        r = self.runs[k] = self.runs.get(k, 0) + step
        if r > self.ns:
            self.ns, self.key, self.at = r, k, t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("history", nargs="+")
    ap.add_argument("--faults", help="the harness's fault log")
    ap.add_argument("--label", default="", help="name of the run in the output")
    ap.add_argument("--step-ms", type=int, default=10, help="resolution of the gap figure")
    args = ap.parse_args()

    ev, bad = parse(args.history + ([args.faults] if args.faults else []))
    label = (args.label + ": ") if args.label else ""
    if bad:
        print(f"lease-check: {label}{bad} unreadable lines")
        return 1

    fences = collections.defaultdict(list)  # (owner, pair) -> sorted fence times
    for f in ev["fence"]:
        fences[(f["owner"], f.get("space", "") + "/" + f["pair"])].append(f["at"])
    for v in fences.values():
        v.sort()

    # What each owner issued with, per pair: [from, min(until, next fence)].
    spans = collections.defaultdict(list)  # (pair, owner) -> [(a, b)]
    for iv in ev["interval"]:
        iv["pair"] = iv.get("space", "") + "/" + iv["pair"]
        key = (iv["owner"], iv["pair"])
        end = iv["until"]
        fl = fences.get(key, [])
        i = bisect.bisect_left(fl, iv["from"])
        if i < len(fl):
            end = min(end, fl[i])
        if end > iv["from"]:
            spans[(iv["pair"], iv["owner"])].append((iv["from"], end))

    # The timestamps each owner could stamp, per pair.
    base = ev["clockbase"][0]["boot_to_wall_ns"] if ev["clockbase"] else None
    pid_off = {c["pid"]: c["offset_ms"] for c in ev["clock"]}
    owner_off = {}
    for st in ev["start"]:
        if "clock_offset_ms" in st:
            owner_off[st["owner"]] = st["clock_offset_ms"]
        elif st.get("pid") in pid_off:
            owner_off[st["owner"]] = pid_off[st["pid"]]
    windows = collections.defaultdict(list)  # pair -> [(a, b, owner)]
    underived = 0
    for iv in ev["interval"]:
        if "ts_from" in iv and "ts_until" in iv:
            a, b = iv["ts_from"], iv["ts_until"]
        elif base is not None and iv["owner"] in owner_off:
            off = owner_off[iv["owner"]]
            end = iv["until"]
            fl = fences.get((iv["owner"], iv["pair"]), [])
            i = bisect.bisect_left(fl, iv["from"])
            if i < len(fl):
                end = min(end, fl[i])
            a = (iv["from"] + base) // 1000000 + off
            b = (end + base) // 1000000 + off
        else:
            underived += 1
            continue
        if b >= a:
            windows[iv["pair"]].append((a, b, iv["owner"]))
    ts_overlaps = []
    closest = None
    for pair, lst in windows.items():
        per_owner = collections.defaultdict(list)
        for a, b, o in lst:
            per_owner[o].append((a, b))
        merged = sorted((a, b, o) for o, s in per_owner.items() for a, b in merge(s))
        max_end, max_owner = None, None
        for a, b, owner in merged:
            if max_end is not None and owner != max_owner:
                if a <= max_end:
                    ts_overlaps.append((pair, max_owner, owner, a, max_end))
                elif closest is None or a - max_end < closest:
                    closest = a - max_end
            if max_end is None or b > max_end:
                max_end, max_owner = b, owner

    overlaps = []
    by_pair = collections.defaultdict(list)
    for (pair, owner), s in spans.items():
        for a, b in merge(s):
            by_pair[pair].append((a, b, owner))
    for pair, lst in by_pair.items():
        lst.sort()
        max_end, max_owner = None, None
        for a, b, owner in lst:
            if max_end is not None and a < max_end and owner != max_owner:
                overlaps.append((pair, max_owner, owner, a, max_end))
            if max_end is None or b > max_end:
                max_end, max_owner = b, owner

    # The longest gap: a live agent without a pair while a pair was free.
    starts = {s["owner"]: s for s in ev["start"]}
    pid_owner = {s["pid"]: s["owner"] for s in ev["start"]}
    times = [s["at"] for s in ev["start"]] + [iv["until"] for iv in ev["interval"]]
    gap = Longest()
    # The same, the time the store was down (fault kind=store-down at=T
    # until=T2: killed or stopped, or within its restart wait) left out:
    # the longest such wait, and the store-down time within it.
    up_ns, up_down_ns, up_owner, up_at = 0, 0, None, None
    downs = [(f["at"], f.get("until", f["at"])) for f in ev["fault"]
             if f.get("kind") in ("store-down", "leader-change")]
    # And the longest such wait without a store fault in it: from the
    # later of the agent's want, the store answering again (the end of a
    # store-down) or the leases taken away (a key deletion: the claim of an
    # agent still settling is gone too) until it serves or no pair is free.
    wait = Longest()
    resets = sorted(f["at"] for f in ev["fault"]
                    if f.get("kind") in ("key-delete", "lease-clear", "lease-expire"))
    vac = Longest()   # a pair nobody serves while a live agent of its space waits
    vup = Longest()   # the same since the last store fault
    if starts and times:
        t0, t1 = min(times), max(times + [e["at"] for e in ev["exit"]])
        ends = {e["owner"]: e["at"] for e in ev["exit"]}
        stopped = collections.defaultdict(list)
        for f in ev["fault"]:
            owner = pid_owner.get(f.get("pid"))
            if owner is None:
                continue
            if f.get("kind") == "kill":
                ends[owner] = min(ends.get(owner, f["at"]), f["at"])
            elif f.get("kind") == "sigstop":
                stopped[owner].append((f["at"], f.get("until", t1)))
        held = {}  # owner -> merged spans over all pairs
        for (pair, owner), s in spans.items():
            held.setdefault(owner, []).extend(s)
        # The claims: settling, the pair taken and its claimant not waiting.
        firsts = collections.defaultdict(list)  # (pair, owner) -> interval starts
        for iv in ev["interval"]:
            firsts[(iv["pair"], iv["owner"])].append(iv["from"])
        cspans = collections.defaultdict(list)  # pair -> [(a, b)]
        for c in ev["claim"]:
            pair, owner, at = c.get("space", "") + "/" + c["pair"], c["owner"], c["at"]
            ttl_ns = c.get("ttl_ms", 0) * 1000000
            end = at + c.get("settle_ms", 0) * 1000000 + ttl_ns
            later = [f for f in firsts.get((pair, owner), ()) if f >= at]
            if later:
                end = min(end, min(later))
            if owner in ends:
                end = min(end, ends[owner] + ttl_ns)
            i = bisect.bisect_right(resets, at)
            if i < len(resets):
                end = min(end, resets[i])
            if end > at:
                cspans[pair].append((at, end))
                held.setdefault(owner, []).append((at, end))
        held = {o: merge(s) for o, s in held.items()}
        pair_spans = {p: merge([(a, b) for a, b, _ in by_pair[p]] + cspans.get(p, []))
                      for p in set(by_pair) | set(cspans)}
        space_pairs = collections.defaultdict(list)
        for p in pair_spans:
            space_pairs[p.split("/")[0]].append(p)

        def covered(lst, t):
            i = bisect.bisect_right(lst, [t, float("inf")]) - 1
            return i >= 0 and lst[i][0] <= t < lst[i][1]

        step = args.step_ms * 1000000
        urun = {}   # owner -> [waited while the store answered, waited while it was down]
        t = t0
        while t <= t1:
            down = any(a <= t < b for a, b in downs)
            if bisect.bisect_right(resets, t) != bisect.bisect_right(resets, t - step):
                wait.runs.clear()
                vup.runs.clear()
            freep = {p: not covered(pair_spans[p], t) for p in pair_spans}
            free = {sp: any(freep[p] for p in ps) for sp, ps in space_pairs.items()}
            waiting = set()
            for owner, s in starts.items():
                live = s["at"] <= t < ends.get(owner, t1 + 1) and not any(
                    a <= t < b for a, b in stopped.get(owner, ()))
                unpaired = live and not covered(held.get(owner, []), t)
                if unpaired:
                    waiting.add(s.get("space", ""))
                wants = unpaired and free.get(s.get("space", ""), False)
                gap.grow(owner, step, t, wants)
                wait.grow(owner, step, t, wants and not down)
                if wants:
                    u = urun.setdefault(owner, [0, 0])
                    u[1 if down else 0] += step
                    if u[0] > up_ns:
                        up_ns, up_down_ns, up_owner, up_at = u[0], u[1], owner, t
                else:
                    urun.pop(owner, None)
            # a pair nobody serves while a live agent of its space waits
            for p, f in freep.items():
                vacant = f and p.split("/")[0] in waiting
                vac.grow(p, step, t, vacant)
                vup.grow(p, step, t, vacant and not down)
            t += step
    gap_ns, gap_owner = gap.ns, gap.key
    wait_ns, wait_owner, wait_at = wait.ns, wait.key, wait.at
    vac_ns, vac_pair = vac.ns, vac.key
    vup_ns, vup_pair, vup_at = vup.ns, vup.key, vup.at

    nfaults = len(ev["fault"])
    kinds = collections.Counter(f.get("kind", "?") for f in ev["fault"])
    print(f"lease-check: {label}{len(ev['interval'])} intervals of {len(starts)} agent runs on "
          f"{len(by_pair)} pairs, {len(ev['fence'])} fences; faults {nfaults}"
          + (" (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")" if kinds else ""))
    print(f"lease-check: {label}longest gap {gap_ns // 1000000} ms (a live agent without a pair "
          f"while one was free{', ' + gap_owner if gap_owner else ''})")
    if up_owner:
        print(f"lease-check: {label}longest wait while the store answered {up_ns // 1000000} ms "
              f"(store-down {up_down_ns // 1000000} ms within it), {up_owner} until at={up_at}")
    if wait_owner:
        print(f"lease-check: {label}longest wait since the last store fault {wait_ns // 1000000} ms"
              f", {wait_owner} until at={wait_at}")
    if vup_pair:
        print(f"lease-check: {label}longest vacancy since the last store fault "
              f"{vup_ns // 1000000} ms, {vup_pair} until at={vup_at}")
    print(f"lease-check: {label}longest vacancy {vac_ns // 1000000} ms (a pair served by nobody "
          f"while a live agent waited{', ' + vac_pair if vac_pair else ''})")
    for pair, o1, o2, a, b in overlaps[:10]:
        print(f"lease-check: {label}OVERLAP {pair}: {o1} until {b}, {o2} from {a} "
              f"({(b - a) / 1e6:.1f} ms)")
    for pair, o1, o2, a, b in ts_overlaps[:10]:
        print(f"lease-check: {label}TIMESTAMP OVERLAP {pair}: {o1} stamped up to {b}, {o2} "
              f"from {a} ({b - a + 1} ms of timestamps)")
    for pair, o1, o2, a, b in ts_overlaps[:3]:
        evidence(args.history + ([args.faults] if args.faults else []), pair, o1, o2, a, label)
    if underived:
        print(f"lease-check: {label}{underived} intervals without a window or a clock offset")
    print(f"lease-check: {label}{len(overlaps)} overlaps, {len(ts_overlaps)} timestamp overlaps")
    serving_ns = sum(b - a for lst in by_pair.values() for a, b in merge([(x, y) for x, y, _ in lst]))
    print(f"lease-check-figures: intervals={len(ev['interval'])} overlaps={len(overlaps)} "
          f"serving_s={serving_ns / 1e9:.1f} "
          f"ts_overlaps={len(ts_overlaps)} mark_raises={len(ev['mark'])} "
          f"gap_ms={gap_ns // 1000000} vacancy_ms={vac_ns // 1000000} "
          f"gap_up_ms={up_ns // 1000000} gap_down_ms={up_down_ns // 1000000} "
          f"wait_up_ms={wait_ns // 1000000} vacancy_up_ms={vup_ns // 1000000} "
          f"closest_ms={closest if closest is not None else '-'} underived={underived} "
          f"claims={len(ev['claim'])}")
    return 1 if overlaps or ts_overlaps or underived else 0


if __name__ == "__main__":
    sys.exit(main())
