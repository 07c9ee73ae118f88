#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the BENCH lines of `make bench` into results.json, table.md and a
gnuplot script (bench.gp, drawing bench.svg).

usage: report.py RAW.txt OUTDIR
       report.py --compare OLD.json NEW.json   (per P, old -> new, Markdown)
       report.py --placements RAW.txt OUTDIR   (make bench-compare: HEAD/BASE
                                                per P over the placements,
                                                compare.md and compare.json)

RAW.txt holds the lines "BENCH <section> [name] key=value ..." printed by the
guest (bench/snowflake_bench.c) and by scripts/bench.sh (meta, p5, p8core).  Nothing
is asserted: goals are reported as met or missed.
"""
import json
import shlex
import sys

CAP = 4096000.0  # IDs/s: 12 sequence bits, 1 ms ticks

GOALS = {
    "p1": "single-ID read <= 1.25x an 8-byte read of /dev/zero (median)",
    "p2": ">= 95% of the cap (4.096 M IDs/s) for batches >= 512",
    "p3": "aggregate with 4 readers >= 90% of one reader",
    "p4": "none: peers for comparison (ns per ID)",
    "p5": "<= 15 instructions per ID in batches",
    "p8": "a batch read of /dev/uuidv7 costs <= 2x a 4096-ID batch of /dev/snowflake per byte delivered (CPU time)",
    "p6": "batch reads with an uncapped layout (41/0/0/22) deliver >= 50% of /dev/zero's bytes per second at the same read size (4096 IDs, the per-call cap)",
    "p7": "one ID from the device (one client, p50) <= 1/10 of one Redis INCR over loopback TCP and <= 1/30 of one ticket-server round trip; with 8 client processes the device's aggregate >= 10x Redis INCR's",
}

PEER_LABELS = {
    "snowflake": "/dev/snowflake",
    "uuidv7": "/dev/uuidv7",
    "redis_tcp": "Redis INCR/INCRBY, loopback TCP",
    "redis_unix": "Redis INCR/INCRBY, Unix socket",
    "mariadb_ticket": "MariaDB ticket server (Flickr), Unix socket",
    "textbook": "textbook in-process generator (one per process)",
    "snowflake_uncapped": "/dev/snowflake, uncapped layout 41/0/0/22",
}

TCG_NOTE = ("The guest runs under QEMU TCG (software emulation of the CPU, "
            "no KVM): absolute times are not native and are several times "
            "slower than on hardware; only the ratios measured in the same "
            "boot are meaningful.")


def num(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def parse(path):
    recs = []
    with open(path) as f:
        for line in f:
            if not line.startswith("BENCH "):
                continue
            toks = shlex.split(line.strip())[1:]
            sec = toks[0]
            name = None
            kv = {}
            for t in toks[1:]:
                if "=" in t:
                    k, v = t.split("=", 1)
                    kv[k] = num(v)
                elif name is None:
                    name = t
            recs.append((sec, name, kv))
    return recs


def fmt_rate(x):
    if x >= 1e5:
        return "%.3f M/s" % (x / 1e6)
    return "%.0f /s" % x


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    m = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    if all(isinstance(x, int) for x in xs):
        m = int(round(m))
    return m


def merge(kvs):
    """The median of every numeric field over the rounds."""
    out = {}
    for k in kvs[0]:
        vals = [kv[k] for kv in kvs if k in kv]
        if all(isinstance(v, (int, float)) for v in vals):
            out[k] = median(vals)
        else:
            out[k] = vals[0]
    return out


def pctl(xs, p):
    """Percentile p (0-100) of xs, linear between the sorted values."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * p / 100.0
    i = int(k)
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (k - i)


def placement_results(recs):
    """Issue 34: {label: {"placements": [...], "p1": {...}, "p6": {...}}} from
    the host's "placement" lines (scripts/bench-place.sh) and the guest's
    "place_p1"/"place_p6" lines.  A placement's figure is the median of its
    rounds; a label's is the median over its placements, with the spread
    (min, max, and max - min in % of the median)."""
    info = {kv["ko"]: kv for sec, _, kv in recs if sec == "placement"}
    per = {}
    for sec, name, kv in recs:
        if sec == "place_p1" and name in ("zero", "snowflake"):
            per.setdefault(kv["ko"], {}).setdefault("p1", {}).setdefault(kv["round"], {})[name] = kv["median_ns"]
        elif sec == "place_p6":
            per.setdefault(kv["ko"], {}).setdefault("p6", []).append((kv["round"], kv["ratio"]))
    out = {}
    for ko, d in per.items():
        i = info.get(ko, {})
        label, pad = ko.rsplit("-", 1)
        p1r = [round(v["snowflake"] / v["zero"], 3) for _, v in sorted(d.get("p1", {}).items())
               if v.get("zero") and "snowflake" in v]
        p6r = [x for _, x in sorted(d.get("p6", []))]
        out.setdefault(i.get("label", label), {"placements": []})["placements"].append({
            "ko": ko, "pad": i.get("pad", int(pad)), "sf_read_iter": i.get("sf_read_iter", "?"),
            "p1": median(p1r) if p1r else None, "p1_per_round": p1r,
            "p6": median(p6r) if p6r else None, "p6_per_round": p6r})
    for lab in out.values():
        lab["placements"].sort(key=lambda r: r["pad"])
        for p in ("p1", "p6"):
            v = [r[p] for r in lab["placements"] if r[p] is not None]
            if v:
                m = median(v)
                lab[p] = {"median": round(m, 3), "min": min(v), "max": max(v),
                          "spread_pct": round(100.0 * (max(v) - min(v)) / m, 1), "placements": len(v)}
    return out


# P1 is a time ratio (lower is faster), P6 a bandwidth ratio (higher is).
PLACE_PS = (("p1", "P1", "single-ID read vs 8-byte read of /dev/zero (time)", True),
            ("p6", "P6", "uncapped layout, 4096-ID reads vs /dev/zero (bytes/s)", False))


def compare_placements(pl, base="base", head="head"):
    """HEAD against BASE per P: the ratio of the medians over the placements,
    and the per-placement ratios (the same padding, measured in the same
    rounds), their median and range: the ratio's spread.  A change is named
    only beyond that spread, when every placement's ratio lies on the same
    side of 1 (with 8 placements and no change, a chance of 2 in 256), and
    never with fewer than 4 placements; all placements but one on the same
    side is "likely" a change (a chance of 18 in 256), never "no change".
    A P measured on one side only is a row that says so."""
    rows = []
    for p, name, what, low_is_fast in PLACE_PS:
        if p not in pl.get(base, {}) or p not in pl.get(head, {}):
            miss = [lab for lab in (base, head) if p not in pl.get(lab, {})]
            rows.append({"p": name, "what": what, "change": "missing",
                         "missing": "%s not measured in %s" % (name, " and ".join(miss))})
            continue
        b = {r["pad"]: r[p] for r in pl[base]["placements"] if r[p] is not None}
        h = {r["pad"]: r[p] for r in pl[head]["placements"] if r[p] is not None}
        q = [h[x] / b[x] for x in sorted(set(b) & set(h))]
        if len(q) < 4:
            verdict = "too few placements to judge"
        elif min(q) > 1.0:
            verdict = "slower" if low_is_fast else "faster"
        elif max(q) < 1.0:
            verdict = "faster" if low_is_fast else "slower"
        elif sum(x > 1.0 for x in q) == len(q) - 1:
            verdict = "likely slower" if low_is_fast else "likely faster"
        elif sum(x < 1.0 for x in q) == len(q) - 1:
            verdict = "likely faster" if low_is_fast else "likely slower"
        else:
            verdict = None
        rows.append({"p": name, "what": what,
                     "base": pl[base][p], "head": pl[head][p],
                     "ratio_of_medians": round(pl[head][p]["median"] / pl[base][p]["median"], 3),
                     "per_placement": [round(x, 3) for x in q],
                     "per_placement_median": round(median(q), 3),
                     "per_placement_range": [round(min(q), 3), round(max(q), 3)],
                     "change": verdict})
    return rows


def compare_table(rows, base_name, head_name):
    """Markdown lines of compare_placements()."""
    sp = lambda d: "%.3f (%.3f-%.3f, %.1f%%)" % (d["median"], d["min"], d["max"], d["spread_pct"])
    L = ["| | %s: median over placements (range, spread) | %s | HEAD/BASE, ratio of the medians | "
         "spread: per-placement HEAD/BASE, median and range | |" % (base_name, head_name),
         "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["change"] == "missing":
            L.append("| %s | - | - | - | - | **%s** |" % (r["p"], r["missing"]))
            continue
        if r["change"] in ("likely faster", "likely slower"):
            v = "**likely a change: HEAD %s** (%+.1f%%, all placements but one)" % (
                r["change"].split()[1], 100 * (r["ratio_of_medians"] - 1))
        elif r["change"] in ("faster", "slower"):
            v = "**a change: HEAD %s** (%+.1f%%, every placement)" % (r["change"], 100 * (r["ratio_of_medians"] - 1))
        elif r["change"]:
            v = r["change"]
        else:
            v = "within the spread: no change"
        L.append("| %s | %s | %s | **%.3f** | %.3f (%.3f-%.3f) | %s |"
                 % (r["p"], sp(r["base"]), sp(r["head"]), r["ratio_of_medians"], r["per_placement_median"],
                    r["per_placement_range"][0], r["per_placement_range"][1], v))
    return L


def placement_table(lab):
    """Markdown lines: every placement of one label with its rounds."""
    L = ["| padding | `sf_read_iter` in `.text` | P1 | rounds | P6 at 4096 IDs | rounds |",
         "| ---: | --- | ---: | --- | ---: | --- |"]
    for r in lab["placements"]:
        L.append("| %d | %s | %s | %s | %s | %s |"
                 % (r["pad"], r["sf_read_iter"], "%.3f" % r["p1"] if r["p1"] is not None else "-",
                    ", ".join("%.3f" % x for x in r["p1_per_round"]),
                    "%.3f" % r["p6"] if r["p6"] is not None else "-",
                    ", ".join("%.3f" % x for x in r["p6_per_round"])))
    return L


def placements_main(raw, out):
    """report.py --placements RAW OUTDIR (scripts/bench-compare.sh)."""
    recs = parse(raw)
    meta = {}
    for sec, _, kv in recs:
        if sec in ("meta", "clock"):
            meta.update(kv)
    pl = placement_results(recs)
    for lab in ("base", "head"):
        if lab not in pl or "p1" not in pl[lab] or "p6" not in pl[lab]:
            sys.exit("report.py: no placement results for %s in %s" % (lab, raw))
    rows = compare_placements(pl)
    bn = "BASE %s" % meta.get("base", "?")
    hn = "HEAD %s" % meta.get("head", "?")
    L = ["`make bench-compare`: %s against %s, one guest boot (%s, %s vCPUs, QEMU %s), "
         "%s placements of the module's text %s bytes apart, %s rounds each, BASE and HEAD "
         "alternating in every round; host load average %s while the guest ran; VM_MODE=%s, patches of "
         "kernel text with two CPUs up (vm_textpoke): %s; %s."
         % (hn, bn, meta.get("guest_kernel", "?"), meta.get("vcpus", "?"), meta.get("accel", "?"),
            meta.get("placements", "?"), meta.get("step", "?"), meta.get("rounds", "?"),
            meta.get("host_loadavg", "?"), meta.get("vm_mode", "?"), meta.get("textpoke", "?"),
            meta.get("date", "?")), ""]
    L += compare_table(rows, bn, hn)
    for lab, name in (("base", bn), ("head", hn)):
        L += ["", "%s, each placement (P1: device/`/dev/zero` time; P6: device/`/dev/zero` bytes per second):" % name, ""]
        L += placement_table(pl[lab])
    with open(out + "/compare.json", "w") as f:
        json.dump({"meta": meta, "compare": rows, "placements": pl}, f, indent=2)
        f.write("\n")
    with open(out + "/compare.md", "w") as f:
        f.write("\n".join(L) + "\n")


def headline(res):
    """{P: (figure, rounds)} of a results.json: the figure each goal is about."""
    h = {}
    r = res["p1_single_id_latency"]
    h["P1"] = ("%.3fx" % r["ratio"], r["ratio_per_round"])
    if "over_placements" in r:
        o = r["over_placements"]
        h["P1"] = ("%.3fx (median of %d placements, %.3f-%.3f)" % (o["median"], o["placements"], o["min"], o["max"]),
                   [x["p1"] for x in res["placements"]["head"]["placements"]])
    pts = {p["batch"]: p for p in res["p2_batch_throughput"]["points"]}
    h["P2"] = ("512: %.1f%%, 4096: %.1f%%" % (pts[512]["cap_pct"], pts[4096]["cap_pct"]),
               pts[4096]["cap_pct_per_round"])
    four = next(p for p in res["p3_contention"]["points"] if p["readers"] == 4)
    h["P3"] = ("%.1f%%" % four["vs_one_pct"], four.get("vs_one_pct_per_round", []))
    r = res["p4_peers"]["ns_per_id"]
    h["P4"] = ("single %.0f ns, batch %.0f ns per ID" % (r["snowflake_single"], r.get("snowflake_batch4096", 0)),
               res["p4_peers"]["ns_per_id_per_round"].get("snowflake_single", []))
    r = res["p5_core_instructions"]
    h["P5"] = ("%.4f (single %.1f)" % (r["batch"]["instructions_per_id"], r["single"]["instructions_per_id"]), [])
    if "p6_bandwidth" in res:
        cap = res["p6_bandwidth"]["points"][-1]
        h["P6"] = ("%.1f%%" % (100 * cap["ratio"]), cap["ratio_per_round"])
        if "over_placements" in res["p6_bandwidth"]:
            o = res["p6_bandwidth"]["over_placements"]
            h["P6"] = ("%.1f%% (median of %d placements, %.1f-%.1f%%)" % (100 * o["median"], o["placements"],
                                                                          100 * o["min"], 100 * o["max"]),
                       [x["p6"] for x in res["placements"]["head"]["placements"]])
    if "p7_peers" in res:
        c = res["p7_peers"]["checks"]
        parts, rr = [], []
        if "device_vs_redis_tcp_incr" in c:
            x = c["device_vs_redis_tcp_incr"]
            parts.append("1/%.0f of Redis INCR" % (x["redis_p50_ns"] / x["device_p50_ns"]))
        if "device_vs_ticket_server" in c:
            x = c["device_vs_ticket_server"]
            parts.append("1/%.0f of the ticket server" % (x["ticket_p50_ns"] / x["device_p50_ns"]))
        if "eight_clients_device_vs_redis_tcp_incr" in c:
            parts.append("8 clients %.0fx" % c["eight_clients_device_vs_redis_tcp_incr"]["ratio"])
            rr = c["eight_clients_device_vs_redis_tcp_incr"]["ratio_per_round"]
        h["P7"] = (", ".join(parts), rr)
    if "p8_uuidv7" in res:
        r = res["p8_uuidv7"]
        h["P8"] = ("%.2fx (%.3f vs %.3f CPU ns/byte)" % (r["batch_vs_snowflake_per_byte"],
                                                        r["cpu_ns_per_byte"]["uuid_batch4096"],
                                                        r["cpu_ns_per_byte"]["snowflake_batch4096"]),
                   r["batch_vs_snowflake_per_byte_per_round"])
        if "core_instructions_per_uuid" in r:
            h["P8"] = (h["P8"][0] + "; natively %.1f instructions per UUID"
                       % r["core_instructions_per_uuid"]["instructions"], h["P8"][1])
    return h


def compare(old_path, new_path):
    """report.py --compare OLD.json NEW.json: a Markdown table, per P, old -> new."""
    with open(old_path) as f:
        old = json.load(f)
    with open(new_path) as f:
        new = json.load(f)
    ho, hn = headline(old), headline(new)
    rounds = lambda v: ", ".join("%g" % x for x in v) if v else "-"
    print("| | %s (%s) | rounds | %s (%s) | rounds |" % (old["meta"].get("date", "?"), "old",
                                                     new["meta"].get("date", "?"), "new"))
    print("| --- | --- | --- | --- | --- |")
    for p in sorted(set(ho) | set(hn)):
        o, n = ho.get(p, ("-", [])), hn.get(p, ("-", []))
        print("| %s | %s | %s | %s | %s |" % (p, o[0], rounds(o[1]), n[0], rounds(n[1])))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--placements":
        placements_main(sys.argv[2], sys.argv[3])
        return
    raw, out = sys.argv[1], sys.argv[2]
    recs = parse(raw)
    # Tag every record with its round (BENCH round i=N).
    rnd = 0
    tagged = []
    for sec, name, kv in recs:
        if sec == "round":
            rnd = kv["i"]
            continue
        tagged.append((sec, name, kv, rnd))
    by = lambda s: [(n, kv) for sec, n, kv, _ in tagged if sec == s]
    rounds = sorted({r for *_, r in tagged if r})

    def grouped(sec, key):
        """{identity: [kv of round 1, kv of round 2, ...]} in first-seen order."""
        g = {}
        for s_, n, kv, _ in tagged:
            if s_ == sec:
                g.setdefault(key(n, kv), []).append(kv)
        return g

    meta = {}
    for _, kv in by("meta") + by("env") + by("clock"):
        meta.update(kv)
    if by("clock_end"):
        meta["clocksource_at_end"] = by("clock_end")[0][1].get("clocksource", "")
    meta["guest_clock_messages"] = []
    with open(raw) as f:
        for line in f:
            if line.startswith("BENCH-DMESG "):
                meta["guest_clock_messages"].append(line[len("BENCH-DMESG "):].strip())
    stats = dict(by("stats")[0][1]) if by("stats") else {}

    g1 = grouped("p1", lambda n, kv: n)
    g1.pop("ratio", None)
    p1 = {n: merge(kvs) for n, kvs in g1.items()}
    ratios = [round(s_["median_ns"] / z["median_ns"], 3)
              for s_, z in zip(g1["snowflake"], g1["zero"])]
    p1r = {
        "zero_median_ns": p1["zero"]["median_ns"],
        "snowflake_median_ns": p1["snowflake"]["median_ns"],
        "ratio": round(p1["snowflake"]["median_ns"] / p1["zero"]["median_ns"], 3),
        "ratio_per_round": ratios,
        "median_ns_per_round": {n: [kv["median_ns"] for kv in kvs] for n, kvs in g1.items()},
    }
    if "clock_syscall" in p1:
        # Profiling aids: a bare syscall, and a syscall that reads the
        # kernel's clocksource as the device does on every read.
        p1r["clock_gettime_syscall_median_ns"] = p1["clock_syscall"]["median_ns"]
    if "getppid_syscall" in p1:
        p1r["getppid_syscall_median_ns"] = p1["getppid_syscall"]["median_ns"]
    p1r["goal"] = GOALS["p1"]
    p1r["met"] = p1r["ratio"] <= 1.25

    g2 = grouped("p2", lambda n, kv: kv["batch"])
    p2 = []
    for b, kvs in g2.items():
        m = merge(kvs)
        m["ids_per_s_per_round"] = [kv["ids_per_s"] for kv in kvs]
        m["cap_pct_per_round"] = [kv["cap_pct"] for kv in kvs]
        p2.append(m)
    big = [r for r in p2 if r["batch"] >= 512]
    p2r = {"points": p2, "cap_ids_per_s": CAP, "goal": GOALS["p2"],
           "met": all(r["cap_pct"] >= 95.0 for r in big)}

    g3 = grouped("p3", lambda n, kv: kv["readers"])
    one_per_round = [kv["ids_per_s"] for kv in g3[1]]
    p3 = []
    for nr, kvs in g3.items():
        m = merge(kvs)
        m.pop("vs_one_pct", None)
        vs = [round(100.0 * kv["ids_per_s"] / o, 1) for kv, o in zip(kvs, one_per_round)]
        m["vs_one_pct"] = round(100.0 * m["ids_per_s"] / median(one_per_round), 1)
        m["vs_one_pct_per_round"] = vs
        m["p99_ns_per_round"] = [kv["p99_ns"] for kv in kvs]
        p3.append(m)
    one = next(r for r in p3 if r["readers"] == 1)["ids_per_s"]
    four = next(r for r in p3 if r["readers"] == 4)
    p3r = {"points": p3, "goal": GOALS["p3"],
           "four_vs_one_pct": four["vs_one_pct"],
           "met": four["vs_one_pct"] >= 90.0}

    g4 = grouped("p4", lambda n, kv: n)
    first = g4.pop("getrandom_first_call", [])
    p4 = {n: merge(kvs) for n, kvs in g4.items()}
    p4r = {"ns_per_id": {n: kv["ns_per_id"] for n, kv in p4.items()},
           "ids_per_s": {n: kv["ids_per_s"] for n, kv in p4.items()},
           "ns_per_id_per_round": {n: [kv["ns_per_id"] for kv in kvs] for n, kvs in g4.items()},
           "goal": GOALS["p4"]}
    if first:
        p4r["getrandom_first_call_ns"] = first[0]["ns"]
    b4096 = next((r for r in p2 if r["batch"] == 4096), None)
    if b4096:
        p4r["ns_per_id"]["snowflake_batch4096"] = round(1e9 / b4096["ids_per_s"], 1)

    p5 = {n if n else kv["mode"]: kv for n, kv in by("p5")}
    p5r = {}
    for mode, kv in p5.items():
        p5r[mode] = {"calls": kv["calls"], "ids": kv["ids"],
                     "instructions": kv["instructions"],
                     "instructions_per_id": round(kv["instructions"] / kv["ids"], 4),
                     "instructions_per_call": round(kv["instructions"] / kv["calls"], 1)}
    p5r["goal"] = GOALS["p5"]
    p5r["met"] = p5r["batch"]["instructions_per_id"] <= 15
    meta["rounds"] = len(rounds)

    # P8 (P6 before issue 14): /dev/uuidv7 (absent from runs before it existed).
    g6 = grouped("p8", lambda n, kv: n)
    p8r = None
    if g6:
        p8 = {n: merge(kvs) for n, kvs in g6.items()}
        p8r = {"ns_per_uuid": {n: kv["ns_per_record"] for n, kv in p8.items()},
               "ns_per_record_per_round": {n: [kv["ns_per_record"] for kv in kvs]
                                           for n, kvs in g6.items()},
               "cpu_ns_per_byte": {n: kv["cpu_ns_per_byte"] for n, kv in p8.items()
                                   if "cpu_ns_per_byte" in kv},
               "goal": GOALS["p8"]}
        if "proc_uuid" in p4r["ns_per_id"]:
            p8r["ns_per_uuid"]["proc_uuid"] = p4r["ns_per_id"]["proc_uuid"]
        per_round = [round(u["cpu_ns_per_byte"] / sf["cpu_ns_per_byte"], 3)
                     for u, sf in zip(g6["uuid_batch4096"], g6["snowflake_batch4096"])]
        p8r["batch_vs_snowflake_per_byte"] = median(per_round)
        p8r["batch_vs_snowflake_per_byte_per_round"] = per_round
        p8r["met"] = p8r["batch_vs_snowflake_per_byte"] <= 2.0
        # Its native half (scripts/bench.sh, bench/uuid_bench.c): callgrind's
        # instructions per UUID of a 4096-UUID read, by function.
        core = by("p8core")
        if core:
            kv = core[0][1]
            p8r["core_instructions_per_uuid"] = {
                k: round(kv[k] / kv["uuids"], 2)
                for k in ("instructions", "random", "format_store", "reserve", "loop")}
            p8r["core_reads"] = kv["reads"]

    # Issue 14: P6 (bandwidth, uncapped layout), P7 (peers), scaling, Node.
    def peer_points(sec):
        g = grouped(sec, lambda n, kv: (kv["peer"], kv["batch"], kv["clients"]))
        pts = []
        for (peer, batch, clients), kvs in g.items():
            m = merge(kvs)
            m["ids_per_s_per_round"] = [kv["ids_per_s"] for kv in kvs]
            m["p50_ns_per_round"] = [kv["p50_ns"] for kv in kvs]
            m["p99_ns_per_round"] = [kv["p99_ns"] for kv in kvs]
            m["p50_ns_per_id"] = round(m["p50_ns"] / batch, 2)
            m["p99_ns_per_id"] = round(m["p99_ns"] / batch, 2)
            pts.append(m)
        return pts

    def find(pts, peer, batch, clients):
        return next((r for r in pts if r["peer"] == peer and r["batch"] == batch
                     and r["clients"] == clients), None)

    p7pts = peer_points("p7")
    p7r = None
    if p7pts:
        p7r = {"points": p7pts, "goal": GOALS["p7"], "checks": {}}
        dev1, dev8 = find(p7pts, "snowflake", 1, 1), find(p7pts, "snowflake", 1, 8)
        rt1, rt8 = find(p7pts, "redis_tcp", 1, 1), find(p7pts, "redis_tcp", 1, 8)
        my1 = find(p7pts, "mariadb_ticket", 1, 1)
        g7 = grouped("p7", lambda n, kv: (kv["peer"], kv["batch"], kv["clients"]))

        def per_round(a, b, key, inv=False):
            xs = g7.get(a, [])
            ys = g7.get(b, [])
            return [round((y[key] / x[key]) if inv else (x[key] / y[key]), 4) for x, y in zip(xs, ys)]
        if dev1 and rt1:
            v = dev1["p50_ns"] / rt1["p50_ns"]
            p7r["checks"]["device_vs_redis_tcp_incr"] = {
                "device_p50_ns": dev1["p50_ns"], "redis_p50_ns": rt1["p50_ns"], "ratio": round(v, 4),
                "ratio_per_round": per_round(("snowflake", 1, 1), ("redis_tcp", 1, 1), "p50_ns"),
                "goal": "<= 0.1", "met": v <= 0.1}
        if dev1 and my1:
            v = dev1["p50_ns"] / my1["p50_ns"]
            p7r["checks"]["device_vs_ticket_server"] = {
                "device_p50_ns": dev1["p50_ns"], "ticket_p50_ns": my1["p50_ns"], "ratio": round(v, 4),
                "ratio_per_round": per_round(("snowflake", 1, 1), ("mariadb_ticket", 1, 1), "p50_ns"),
                "goal": "<= 1/30 (0.0333)", "met": v <= 1 / 30}
        if dev8 and rt8:
            v = dev8["ids_per_s"] / rt8["ids_per_s"]
            p7r["checks"]["eight_clients_device_vs_redis_tcp_incr"] = {
                "device_ids_per_s": dev8["ids_per_s"], "redis_ids_per_s": rt8["ids_per_s"],
                "ratio": round(v, 2),
                "ratio_per_round": per_round(("snowflake", 1, 8), ("redis_tcp", 1, 8), "ids_per_s"),
                "goal": ">= 10", "met": v >= 10}
        p7r["met"] = bool(p7r["checks"]) and len(p7r["checks"]) == 3 and all(c["met"] for c in p7r["checks"].values())
    pin = peer_points("p7pin")
    if p7r and pin:
        p7r["one_vcpu"] = {"points": pin, "note": "one client, the client and the servers' threads pinned to CPU 0: no wake-up of an idle vCPU in a round trip"}
        d, rt, my = find(pin, "snowflake", 1, 1), find(pin, "redis_tcp", 1, 1), find(pin, "mariadb_ticket", 1, 1)
        if d and rt:
            p7r["one_vcpu"]["device_vs_redis_tcp_incr"] = round(d["p50_ns"] / rt["p50_ns"], 4)
        if d and my:
            p7r["one_vcpu"]["device_vs_ticket_server"] = round(d["p50_ns"] / my["p50_ns"], 4)
    nat = peer_points("native")
    if p7r and nat:
        z1, rt1n, my1n = find(nat, "zero8", 1, 1), find(nat, "redis_tcp", 1, 1), find(nat, "mariadb_ticket", 1, 1)
        rt8n = find(nat, "redis_tcp", 1, 8)
        natr = {"points": nat, "note": "on the host, natively, the same client code: servers on a private port and sockets; "
                "the device cannot be loaded into the host's kernel, so its native cost is estimated as an 8-byte "
                "read of /dev/zero times P1's ratio (device / /dev/zero, in the guest)"}
        if z1:
            est = z1["p50_ns"] * p1r["ratio"]
            natr["device_single_p50_ns_estimate"] = round(est, 1)
            if rt1n:
                natr["device_vs_redis_tcp_incr_estimate"] = round(est / rt1n["p50_ns"], 4)
            if my1n:
                natr["device_vs_ticket_server_estimate"] = round(est / my1n["p50_ns"], 4)
            d1, d8 = find(p7pts, "snowflake", 1, 1), find(p7pts, "snowflake", 1, 8)
            if rt8n and d1 and d8:
                agg = 1e9 / est * d8["ids_per_s"] / d1["ids_per_s"]
                natr["device_8_clients_ids_per_s_estimate"] = round(agg)
                natr["eight_clients_device_vs_redis_tcp_incr_estimate"] = round(agg / rt8n["ids_per_s"], 2)
        p7r["native"] = natr
    scale = peer_points("scale")
    g6b = grouped("p6", lambda n, kv: kv["ids"])
    p6r = None
    if g6b:
        pts = []
        for ids_, kvs in g6b.items():
            m = merge(kvs)
            m["ratio_per_round"] = [kv["ratio"] for kv in kvs]
            m["ratio"] = median(m["ratio_per_round"])
            pts.append(m)
        cap = next((r for r in pts if r["ids"] == 4096), None)
        p6r = {"layout": "timestamp_bits=41 datacenter_bits=0 worker_bits=0 sequence_bits=22",
               "points": pts, "goal": GOALS["p6"],
               "ratio_at_cap": cap["ratio"] if cap else None,
               "met": bool(cap) and cap["ratio"] >= 0.5}
    gn = grouped("node", lambda n, kv: (kv["peer"], kv["batch"]))
    noder = None
    if gn:
        noder = {"points": []}
        for (peer, batch), kvs in gn.items():
            m = merge(kvs)
            m["ids_per_s_per_round"] = [kv["ids_per_s"] for kv in kvs]
            noder["points"].append(m)
        ne = by("node_env")
        if ne:
            noder["env"] = ne[0][1]
    skips = []
    with open(raw) as f:
        for line in f:
            if line.startswith("BENCH-SKIP "):
                skips.append(line[len("BENCH-SKIP "):].strip())

    # Issue 34: the headline figures over the placements of the module's
    # text; "head" is this tree ("base" only in BENCH_SMOKE, the same sources).
    pl = placement_results([(sec, n, kv) for sec, n, kv, _ in tagged])
    head = pl.get("head", {})
    if "p1" in head:
        p1r["over_placements"] = head["p1"]
        p1r["met"] = head["p1"]["median"] <= 1.25
    if "p6" in head and p6r:
        p6r["over_placements"] = head["p6"]
        p6r["met"] = head["p6"]["median"] >= 0.5
    # The read path's own cost without an emulator (core_bench read, time).
    nat = {}
    nr = by("native_read")
    if nr:
        kv = nr[0][1]
        nat["read4096_instructions_per_id"] = {k: round(kv[k] / kv["ids"], 3)
                                               for k in ("instructions", "reserve", "put", "loop")}
        nat["read4096_reads"] = kv["reads"]
    if "single" in p5r:
        nat["single_instructions_per_id"] = p5r["single"]["instructions_per_id"]
    nt = [kv for _, kv in by("native_time")]
    if nt:
        for k in ("single_ns_per_id", "read4096_ns_per_id"):
            nat[k] = median([kv[k] for kv in nt])
            nat[k + "_per_round"] = [kv[k] for kv in nt]

    res = {"note": TCG_NOTE, "meta": meta, "guest_counters": stats,
           "p1_single_id_latency": p1r, "p2_batch_throughput": p2r,
           "p3_contention": p3r, "p4_peers": p4r, "p5_core_instructions": p5r}
    if p8r:
        res["p8_uuidv7"] = p8r
    if p6r:
        res["p6_bandwidth"] = p6r
    if p7r:
        res["p7_peers"] = p7r
    if scale:
        res["scaling"] = {"points": scale}
    if noder:
        res["node"] = noder
    if pl:
        res["placements"] = pl
    if nat:
        res["native_read_path"] = nat
    if skips:
        res["skipped"] = skips
    cmp_rows = compare_placements(pl) if "base" in pl and "head" in pl else []
    if cmp_rows:
        res["compare_base_head"] = cmp_rows
    with open(out + "/results.json", "w") as f:
        json.dump(res, f, indent=2, sort_keys=False)
        f.write("\n")

    ok = lambda b: "met" if b else "**missed**"
    L = []
    L.append("> " + TCG_NOTE)
    L.append("")
    L.append("Guest: Linux %s, %s vCPUs, QEMU %s, kernel command line + '%s', clocksource %s; %s s per throughput point; "
             "every figure is the median of %d rounds in the same boot (each round's figures are in results.json); %s."
             % (meta.get("kernel", "?"), meta.get("cpus", "?"),
                meta.get("accel", "?"), meta.get("append", ""),
                meta.get("clocksource", "?") + (" (at the end: %s)" % meta["clocksource_at_end"]
                                                if meta.get("clocksource_at_end", meta.get("clocksource")) != meta.get("clocksource") else ""),
                meta.get("point_s", "?"), meta["rounds"], meta.get("date", "?")))
    if "host_load_during_guest" in meta or "vm_mode" in meta:
        L.append("")
        L.append("Host: %s CPUs, load average %s while the guest ran (1-minute, every 10 s). Guest boot: VM_MODE=%s "
                 "(multi-threaded TCG, the second CPU brought up by the guest before measuring); patches of kernel "
                 "text with two CPUs up (vm_textpoke): %s."
                 % (meta.get("host_cpus", "?"), meta.get("host_load_during_guest", "?"), meta.get("vm_mode", "?"),
                    meta.get("textpoke", "?")))
    L.append("")
    L.append("| | measure | result | goal | |")
    L.append("| --- | --- | --- | --- | --- |")
    if "over_placements" in p1r:
        o = p1r["over_placements"]
        L.append("| P1 | single-ID read vs 8-byte read of /dev/zero: median over %d placements of the module's text "
                 "(range; spread) | **%.3fx** (%.3f-%.3f; %.1f%%); the shipped layout, in the full run: %d ns vs %d ns, "
                 "%.2fx | <= 1.25x | %s |"
                 % (o["placements"], o["median"], o["min"], o["max"], o["spread_pct"],
                    p1r["snowflake_median_ns"], p1r["zero_median_ns"], p1r["ratio"], ok(p1r["met"])))
    else:
        L.append("| P1 | single-ID read vs 8-byte read of /dev/zero, median | %d ns vs %d ns: **%.2fx** | <= 1.25x | %s |"
                 % (p1r["snowflake_median_ns"], p1r["zero_median_ns"], p1r["ratio"], ok(p1r["met"])))
    worst = min(big, key=lambda r: r["cap_pct"]) if big else None
    L.append("| P2 | IDs/s, batches >= 512, vs cap 4.096 M/s | %s | >= 95%% | %s |"
             % (", ".join("%d: %s (%.1f%%)" % (r["batch"], fmt_rate(r["ids_per_s"]), r["cap_pct"]) for r in big),
                ok(p2r["met"])))
    L.append("| P3 | 4 readers' aggregate vs 1 reader; p99 per call | %.1f%% (%s vs %s); p99 %d ns with 4 | >= 90%% | %s |"
             % (four["vs_one_pct"], fmt_rate(four["ids_per_s"]), fmt_rate(one),
                four["p99_ns"], ok(p3r["met"])))
    L.append("| P4 | ns per ID: device single / batch 4096 / mutex generator / getrandom / uuid | %s | (peers) | |"
             % " / ".join("%.0f" % p4r["ns_per_id"].get(k, float("nan")) for k in
                          ("snowflake_single", "snowflake_batch4096", "mutex_generator", "getrandom", "proc_uuid")))
    L.append("| P5 | sf_core_reserve() instructions per ID, batches of 4096 (single) | **%.3f** (%.1f) | <= 15 | %s |"
             % (p5r["batch"]["instructions_per_id"], p5r["single"]["instructions_per_id"], ok(p5r["met"])))
    if p6r and p6r["ratio_at_cap"] is not None:
        c = next(r for r in p6r["points"] if r["ids"] == 4096)
        if "over_placements" in p6r:
            o = p6r["over_placements"]
            L.append("| P6 | uncapped layout, reads of 4096 IDs (32 KiB, the per-call cap): device vs /dev/zero, bytes/s, "
                     "median over %d placements (range; spread) | **%.1f%%** (%.1f-%.1f%%; %.1f%%); the shipped layout, "
                     "in the full run: %.0f vs %.0f MB/s, %.0f%% | >= 50%% | %s |"
                     % (o["placements"], 100 * o["median"], 100 * o["min"], 100 * o["max"], o["spread_pct"],
                        c["snowflake_bytes_per_s"] / 1e6, c["zero_bytes_per_s"] / 1e6, 100 * p6r["ratio_at_cap"],
                        ok(p6r["met"])))
        else:
            L.append("| P6 | uncapped layout, reads of 4096 IDs (32 KiB, the per-call cap): device vs /dev/zero, bytes/s | %.0f vs %.0f MB/s: **%.0f%%** | >= 50%% | %s |"
                     % (c["snowflake_bytes_per_s"] / 1e6, c["zero_bytes_per_s"] / 1e6, 100 * p6r["ratio_at_cap"], ok(p6r["met"])))
    if p7r:
        ch = p7r["checks"]
        parts = []
        if "device_vs_redis_tcp_incr" in ch:
            c = ch["device_vs_redis_tcp_incr"]
            parts.append("one ID, p50: device %d ns vs Redis INCR (TCP) %d ns: **1/%.1f** (goal 1/10: %s)"
                         % (c["device_p50_ns"], c["redis_p50_ns"], c["redis_p50_ns"] / c["device_p50_ns"], ok(c["met"])))
        if "device_vs_ticket_server" in ch:
            c = ch["device_vs_ticket_server"]
            parts.append("vs the ticket server %d ns: **1/%.1f** (goal 1/30: %s)"
                         % (c["ticket_p50_ns"], c["ticket_p50_ns"] / c["device_p50_ns"], ok(c["met"])))
        if "eight_clients_device_vs_redis_tcp_incr" in ch:
            c = ch["eight_clients_device_vs_redis_tcp_incr"]
            parts.append("8 clients: %s vs %s: **%.1fx** (goal 10x: %s)"
                         % (fmt_rate(c["device_ids_per_s"]), fmt_rate(c["redis_ids_per_s"]), c["ratio"], ok(c["met"])))
        L.append("| P7 | device against Redis INCR and a MariaDB ticket server | %s | 1/10, 1/30, 10x | %s |"
                 % ("; ".join(parts), ok(p7r["met"])))
    if p8r:
        L.append("| P8 | /dev/uuidv7 batch vs /dev/snowflake batch, CPU ns per byte; ns per UUID: 1 per read / 4096 per read / getrandom(16) / /proc uuid | **%.2fx** (%.3f vs %.3f); %s | <= 2x | %s |"
                 % (p8r["batch_vs_snowflake_per_byte"], p8r["cpu_ns_per_byte"]["uuid_batch4096"],
                    p8r["cpu_ns_per_byte"]["snowflake_batch4096"],
                    " / ".join("%.0f" % p8r["ns_per_uuid"].get(k, float("nan")) for k in
                               ("uuid_single", "uuid_batch4096", "getrandom16", "proc_uuid")),
                    ok(p8r["met"])))
    if "head" in pl:
        L.append("")
        L.append("P1 and P6 on every placement of the module's text (issue 34: the module built with a bench-only "
                 "padding of N bytes before its text, `scripts/bench-place.sh`; the median of each placement's "
                 "rounds, in the same boot after everything else). These are the emulator's figures: under TCG "
                 "a hot loop that straddles a 4 KiB page runs far slower, so one layout alone is chance:")
        L.append("")
        L += placement_table(pl["head"])
        if cmp_rows:
            L.append("")
            L.append("The same sources as \"base\" and \"head\", alternating (BENCH_SMOKE: the code path of "
                     "`make bench-compare`):")
            L.append("")
            L += compare_table(cmp_rows, "base", "head")
    if nat:
        L.append("")
        L.append("The code's own cost, natively (no emulator; `bench/core_bench.c`: the pure core and the driver's "
                 "store loop, `sf_put_ids()`, to memory; the system call, the clock, the lock and "
                 "`user_access_begin()` are per read and not here):")
        L.append("")
        L.append("| | instructions per ID (callgrind) | ns per ID on this host | rounds |")
        L.append("| --- | ---: | ---: | --- |")
        if "single_ns_per_id" in nat:
            L.append("| one ID per read: the reservation (P5 single) | %.1f | %.2f | %s |"
                     % (nat.get("single_instructions_per_id", float("nan")), nat["single_ns_per_id"],
                        ", ".join("%.2f" % x for x in nat["single_ns_per_id_per_round"])))
        if "read4096_instructions_per_id" in nat:
            ri = nat["read4096_instructions_per_id"]
            L.append("| 4096 IDs per read: reservation %.3f + stores %.3f + loop %.3f | %.3f | %s | %s |"
                     % (ri["reserve"], ri["put"], ri["loop"], ri["instructions"],
                        "%.4f" % nat["read4096_ns_per_id"] if "read4096_ns_per_id" in nat else "-",
                        ", ".join("%.4f" % x for x in nat.get("read4096_ns_per_id_per_round", []))))
    if "clock_gettime_syscall_median_ns" in p1r:
        L.append("")
        L.append("P1 detail (median ns per call, samples of 200 calls): getppid() %s, "
                 "clock_gettime(CLOCK_BOOTTIME) as a system call %d, 8-byte read of /dev/zero %d, "
                 "of /dev/snowflake %d; ratio per round: %s."
                 % (p1r.get("getppid_syscall_median_ns", "?"), p1r["clock_gettime_syscall_median_ns"],
                    p1r["zero_median_ns"], p1r["snowflake_median_ns"],
                    ", ".join("%.2f" % r for r in p1r["ratio_per_round"])))
    L.append("")
    L.append("P2, batch throughput (one reader):")
    L.append("")
    L.append("| batch | IDs/s | % of cap | reads | short reads |")
    L.append("| ---: | ---: | ---: | ---: | ---: |")
    for r in p2:
        L.append("| %d | %s | %.1f%% | %d | %d |" % (r["batch"], fmt_rate(r["ids_per_s"]), r["cap_pct"],
                                                  r["calls"], r["short_reads"]))
    L.append("")
    L.append("P3, contention (single-ID reads, separate processes, 2 vCPUs):")
    L.append("")
    L.append("| readers | aggregate IDs/s | vs 1 reader | p50 ns | p99 ns | max ns |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in p3:
        L.append("| %d | %s | %.1f%% | %d | %d | %d |" % (r["readers"], fmt_rate(r["ids_per_s"]), r["vs_one_pct"],
                                                      r["p50_ns"], r["p99_ns"], r["max_ns"]))
    L.append("")
    L.append("P4, peers (one thread/process, in the same guest):")
    L.append("")
    L.append("| generator | ns per ID | IDs/s |")
    L.append("| --- | ---: | ---: |")
    names = {"snowflake_single": "/dev/snowflake, one ID per read",
             "snowflake_batch4096": "/dev/snowflake, 4096 per read (P2)",
             "mutex_generator": "in-process pthread-mutex Twitter generator",
             "clock_realtime_vdso": "(its clock read alone: clock_gettime(CLOCK_REALTIME), vDSO)",
             "getrandom": "getrandom(8 bytes)",
             "proc_uuid": "/proc/sys/kernel/random/uuid (open, read, close)"}
    for k, label in names.items():
        if k in p4r["ns_per_id"]:
            ns = p4r["ns_per_id"][k]
            L.append("| %s | %.1f | %s |" % (label, ns, fmt_rate(1e9 / ns)))
    if "getrandom_first_call_ns" in p4r:
        L.append("")
        L.append("The first getrandom() of the boot waited %.1f ms for the CRNG (not counted above)."
                 % (p4r["getrandom_first_call_ns"] / 1e6))
    L.append("")
    L.append("P5, sf_core_reserve() natively under callgrind (`--toggle-collect=bench_reserve`, its out-of-line copy):")
    L.append("")
    L.append("| mode | calls | IDs | instructions | per call | per ID |")
    L.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for mode in ("batch", "single"):
        r = p5r[mode]
        L.append("| %s | %d | %d | %d | %.1f | %.4f |" % (mode, r["calls"], r["ids"], r["instructions"],
                                                      r["instructions_per_call"], r["instructions_per_id"]))
    if p8r:
        L.append("")
        L.append("P8 (P6 before issue 14), /dev/uuidv7 (one thread, in the same guest):")
        L.append("")
        L.append("| source | ns per UUID (wall) | UUIDs/s | CPU ns per byte |")
        L.append("| --- | ---: | ---: | ---: |")
        labels = {"uuid_single": "/dev/uuidv7, one UUID per read",
                  "uuid_batch4096": "/dev/uuidv7, 4096 per read",
                  "snowflake_batch4096": "(/dev/snowflake, 4096 IDs per read: ns per ID)",
                  "getrandom16": "getrandom(16 bytes)",
                  "proc_uuid": "/proc/sys/kernel/random/uuid (open, read, close; P4)"}
        for k, label in labels.items():
            if k in p8r["ns_per_uuid"]:
                ns = p8r["ns_per_uuid"][k]
                cpu = p8r["cpu_ns_per_byte"].get(k)
                L.append("| %s | %.1f | %s | %s |" % (label, ns, fmt_rate(1e9 / ns),
                                                     "%.3f" % cpu if cpu is not None else "-"))
        L.append("")
        L.append("The batch ratio per round: %s. /dev/snowflake's wall time per ID is "
                 "bounded by the layout's cap (4096 per ms); its CPU time is not."
                 % ", ".join("%.2f" % r for r in p8r["batch_vs_snowflake_per_byte_per_round"]))
        c = p8r.get("core_instructions_per_uuid")
        if c:
            L.append("")
            L.append("P8 natively under callgrind (`bench/uuid_bench.c`, `--toggle-collect=bench_uuid_read`: "
                     "%d reads of 4096 UUIDs with the pure core and the driver's chunking; the random bytes "
                     "are get_random_bytes()'s ChaCha20 blocks, modelled), instructions per UUID:" % p8r["core_reads"])
            L.append("")
            L.append("| total | random bytes (ChaCha20) | format and store | reservation | read loop |")
            L.append("| ---: | ---: | ---: | ---: | ---: |")
            L.append("| %.1f | %.1f | %.1f | %.3f | %.2f |" % (c["instructions"], c["random"], c["format_store"],
                                                       c["reserve"], c["loop"]))
    if p6r:
        L.append("")
        L.append("P6, the generator's own limit: the module reloaded in the same boot with %s "
                 "(4 M IDs per ms: a read never waits for a tick), reads of N IDs against reads of "
                 "the same size of /dev/zero, alternating slices (median of 5 per round):" % p6r["layout"])
        L.append("")
        L.append("| IDs per read | bytes | /dev/zero MB/s | /dev/snowflake MB/s | device vs /dev/zero | per round |")
        L.append("| ---: | ---: | ---: | ---: | ---: | --- |")
        for r in p6r["points"]:
            L.append("| %d | %d | %.0f | %.0f | %.1f%% | %s |"
                     % (r["ids"], r["bytes"], r["zero_bytes_per_s"] / 1e6, r["snowflake_bytes_per_s"] / 1e6,
                        100 * r["ratio"], ", ".join("%.3f" % x for x in r["ratio_per_round"])))
    if p7r:
        L.append("")
        L.append("P7, what users pick instead (each client a process with its own connection; "
                 "every request timed; latency per request, and per ID = per request / batch):")
        L.append("")
        L.append("| source | IDs per request | clients | aggregate IDs/s | p50 ns/request | p99 ns/request | p50 ns/ID | p99 ns/ID |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in sorted(p7r["points"], key=lambda r: (r["clients"], list(PEER_LABELS).index(r["peer"])
                                                      if r["peer"] in PEER_LABELS else 99, r["batch"])):
            L.append("| %s | %d | %d | %s | %d | %d | %.1f | %.1f |"
                     % (PEER_LABELS.get(r["peer"], r["peer"]), r["batch"], r["clients"], fmt_rate(r["ids_per_s"]),
                        r["p50_ns"], r["p99_ns"], r["p50_ns_per_id"], r["p99_ns_per_id"]))
        if "one_vcpu" in p7r:
            L.append("")
            L.append("P7 again with one client, the client and the servers' threads all on vCPU 0 (a round trip "
                     "is then two context switches on one CPU, never the wake-up of an idle vCPU):")
            L.append("")
            L.append("| source | IDs/s | p50 ns/request | p99 ns/request | p50 vs the device |")
            L.append("| --- | ---: | ---: | ---: | ---: |")
            d = find(p7r["one_vcpu"]["points"], "snowflake", 1, 1)
            for r in p7r["one_vcpu"]["points"]:
                L.append("| %s | %s | %d | %d | %s |" % (PEER_LABELS.get(r["peer"], r["peer"]), fmt_rate(r["ids_per_s"]),
                                                        r["p50_ns"], r["p99_ns"],
                                                        "%.1fx" % (r["p50_ns"] / d["p50_ns"]) if d else "-"))
        if "native" in p7r:
            nr = p7r["native"]
            L.append("")
            L.append("The same client code natively on the host (no emulation; servers on a private port and "
                     "sockets, stopped after), to show the scale of a round trip on hardware:")
            L.append("")
            L.append("| source | clients | IDs/s | p50 ns/request | p99 ns/request |")
            L.append("| --- | ---: | ---: | ---: | ---: |")
            nl = dict(PEER_LABELS, zero8="8-byte read of /dev/zero (the floor of a device read)")
            for r in nr["points"]:
                L.append("| %s | %d | %s | %d | %d |" % (nl.get(r["peer"], r["peer"]).replace("INCR/INCRBY", "INCR"),
                                                        r["clients"], fmt_rate(r["ids_per_s"]), r["p50_ns"], r["p99_ns"]))
            if "device_single_p50_ns_estimate" in nr:
                L.append("")
                L.append("Estimated native device read: %.0f ns (the /dev/zero read times P1's %.2fx); against "
                         "Redis INCR over TCP 1/%.0f, against the ticket server 1/%.0f; with 8 clients about %s, "
                         "%.0fx Redis INCR's aggregate (the device's 8-client/1-client ratio of the guest applied)."
                         % (nr["device_single_p50_ns_estimate"], p1r["ratio"],
                            1 / nr.get("device_vs_redis_tcp_incr_estimate", float("nan")),
                            1 / nr.get("device_vs_ticket_server_estimate", float("nan")),
                            fmt_rate(nr.get("device_8_clients_ids_per_s_estimate", float("nan"))),
                            nr.get("eight_clients_device_vs_redis_tcp_incr_estimate", float("nan"))))
        for k, c in p7r["checks"].items():
            L.append("")
            L.append("%s: ratio %s per round: %s." % (k, c["ratio"], ", ".join(str(x) for x in c["ratio_per_round"])))
    if noder:
        L.append("")
        env = noder.get("env", {})
        L.append("Node.js %s in the guest, one process (@sapphire/snowflake %s; each request timed with "
                 "process.hrtime.bigint()):" % (env.get("node", "?"), env.get("sapphire", "?")))
        L.append("")
        L.append("| source | IDs per request | IDs/s | p50 ns/request | p99 ns/request | not increasing |")
        L.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        nl = {"node_dev_readsync": "/dev/snowflake, fs.readSync", "node_sapphire": "@sapphire/snowflake generate()"}
        for r in noder["points"]:
            L.append("| %s | %d | %s | %d | %d | %d |" % (nl.get(r["peer"], r["peer"]), r["batch"], fmt_rate(r["ids_per_s"]),
                                                        r["p50_ns"], r["p99_ns"], r["not_increasing"]))
    if scale:
        L.append("")
        L.append("Scaling (reader processes on 2 vCPUs; p99 per request):")
        L.append("")
        series = [("snowflake", 1), ("snowflake", 4096), ("snowflake_uncapped", 4096), ("redis_tcp", 1)]
        readers = sorted({r["clients"] for r in scale})
        hdr = "| readers | " + " | ".join("%s x%d IDs/s | p99 ns" % (PEER_LABELS.get(p_, p_), b) for p_, b in series) + " |"
        L.append(hdr)
        L.append("| ---: |" + " ---: | ---: |" * len(series))
        for n in readers:
            cells = []
            for p_, b in series:
                r = find(scale, p_, b, n)
                cells.append("%s | %d" % (fmt_rate(r["ids_per_s"]), r["p99_ns"]) if r else "- | -")
            L.append("| %d | %s |" % (n, " | ".join(cells)))
    if skips:
        L.append("")
        L.append("Skipped: " + "; ".join(skips))
    with open(out + "/table.md", "w") as f:
        f.write("\n".join(L) + "\n")

    with open(out + "/p2.dat", "w") as f:
        f.write("# batch ids_per_s_M cap_M\n")
        for r in p2:
            f.write("%d %.4f %.4f\n" % (r["batch"], r["ids_per_s"] / 1e6, CAP / 1e6))
    with open(out + "/p3.dat", "w") as f:
        f.write("# readers p50_us p99_us agg_M\n")
        for r in p3:
            f.write("%d %.3f %.3f %.4f\n" % (r["readers"], r["p50_ns"] / 1e3, r["p99_ns"] / 1e3,
                                            r["ids_per_s"] / 1e6))
    gp = """set terminal svg size 960,420 dynamic font "sans,11" background rgb "white"
set output "{o}/bench.svg"
set multiplot layout 1,2 title "/dev/snowflake under QEMU TCG ({k}, {c} vCPUs): absolute times are emulated, not native"
set logscale x 2
set xlabel "IDs per read (batch size)"
set ylabel "M IDs/s"
set key bottom right
set grid
set yrange [0:*]
set title "P2: throughput vs batch size (one reader)"
plot "{o}/p2.dat" using 1:2 with linespoints lw 2 pt 7 title "measured", \\
     "{o}/p2.dat" using 1:3 with lines dt 2 lw 2 title "cap 4.096 M/s"
unset logscale x
set xtics (1, 2, 4, 8)
set xlabel "concurrent reader processes (single-ID reads)"
set ylabel "latency per read (us)"
set title "P3: latency vs readers"
plot "{o}/p3.dat" using 1:2 with linespoints lw 2 pt 7 title "p50", \\
     "{o}/p3.dat" using 1:3 with linespoints lw 2 pt 5 title "p99"
unset multiplot
""".format(o=out, k=meta.get("kernel", "?"), c=meta.get("cpus", "?"))
    if scale:
        series = [("snowflake", 1), ("snowflake", 4096), ("snowflake_uncapped", 4096), ("redis_tcp", 1)]
        with open(out + "/scale.dat", "w") as f:
            f.write("# readers then ids_per_s_M p50_us p99_us for: %s\n" % " ".join("%s/%d" % sb for sb in series))
            for n in sorted({r["clients"] for r in scale}):
                cols = []
                for p_, b in series:
                    r = find(scale, p_, b, n)
                    cols += ["%.5f %.3f %.3f" % (r["ids_per_s"] / 1e6, r["p50_ns"] / 1e3, r["p99_ns"] / 1e3)
                             if r else "NaN NaN NaN"]
                f.write("%d %s\n" % (n, " ".join(cols)))
        titles = ["/dev/snowflake, 1 ID per read", "/dev/snowflake, 4096 per read",
                  "/dev/snowflake, 4096 per read, uncapped layout", "Redis INCR, loopback TCP"]
        head = ('set terminal svg size 760,440 dynamic font "sans,11" background rgb "white"\n'
                'set grid\nset key below vertical maxrows 2 width -8\nset logscale y 10\n'
                'set logscale x 2\nset xrange [0.9:18]\nset yrange [*:*]\nset xtics (1, 2, 4, 8, 16)\n'
                'set xlabel "concurrent client processes (2 vCPUs, QEMU TCG)"\n')
        gp += head + 'set output "%s/scale-throughput.svg"\nset ylabel "aggregate M IDs/s (log)"\n' % out
        gp += 'set title "Throughput against readers (%s, emulated: compare ratios)"\n' % meta.get("kernel", "?")
        gp += "plot " + ", \\\n     ".join('"%s/scale.dat" using 1:%d with linespoints lw 2 title "%s"'
                                            % (out, 2 + 3 * i, t) for i, t in enumerate(titles)) + "\n"
        gp += 'set output "%s/scale-latency.svg"\nset ylabel "p99 latency per request, us (log)"\n' % out
        gp += 'set title "p99 latency per request against readers (dashed: p50)"\n'
        gp += "plot " + ", \\\n     ".join(
            '"%s/scale.dat" using 1:%d with linespoints lw 2 lc %d title "%s", "%s/scale.dat" using 1:%d with lines dt 2 lc %d notitle'
            % (out, 4 + 3 * i, i + 1, t, out, 3 + 3 * i, i + 1) for i, t in enumerate(titles)) + "\n"
    if p7r:
        rows = [("snowflake", 1, "/dev/snowflake"), ("uuidv7", 1, "/dev/uuidv7"),
                ("textbook", 1, "textbook in-process"), ("redis_unix", 1, "Redis INCR unix"),
                ("redis_tcp", 1, "Redis INCR TCP"), ("mariadb_ticket", 1, "ticket server"),
                ("snowflake", 4096, "/dev/snowflake x4096"), ("redis_tcp", 4096, "Redis INCRBY 4096 TCP")]
        with open(out + "/peers.dat", "w") as f:
            f.write("# label ids_per_s_1client ids_per_s_8clients\n")
            for p_, b, label in rows:
                a, e = find(p7r["points"], p_, b, 1), find(p7r["points"], p_, b, 8)
                if a or e:
                    f.write('"%s" %s %s\n' % (label, "%.0f" % a["ids_per_s"] if a else "NaN",
                                               "%.0f" % e["ids_per_s"] if e else "NaN"))
        gp += ('set terminal svg size 1000,440 dynamic font "sans,11" background rgb "white"\n'
               'set output "%s/peers.svg"\nunset logscale x\nset xrange [*:*]\nset logscale y 10\nset yrange [100:*]\n'
               'set format y "10^{%%L}"\nset xtics auto rotate by -30\n'
               'set style data histogram\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n'
               'set key outside right top vertical\nset xlabel ""\nset ylabel "aggregate IDs/s (log)"\n'
               'set title "The device against its peers, same guest boot (QEMU TCG: compare ratios)"\n'
               'plot "%s/peers.dat" using 2:xtic(1) title "1 client", "" using 3 title "8 client processes"\n'
               % (out, out))
    with open(out + "/bench.gp", "w") as f:
        f.write(gp)


if __name__ == "__main__":
    main()
