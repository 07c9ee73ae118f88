#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the BENCH lines of `make bench` into results.json, table.md and a
gnuplot script (bench.gp, drawing bench.svg).

usage: report.py RAW.txt OUTDIR

RAW.txt holds the lines "BENCH <section> [name] key=value ..." printed by the
guest (bench/snowflake_bench.c) and by scripts/bench.sh (meta, p5).  Nothing
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
    "p6": "a batch read of /dev/uuidv7 costs <= 2x a 4096-ID batch of /dev/snowflake per byte delivered (CPU time)",
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
    return "%.3f M/s" % (x / 1e6)


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


def main():
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

    # P6: /dev/uuidv7 (absent from runs before it existed).
    g6 = grouped("p6", lambda n, kv: n)
    p6r = None
    if g6:
        p6 = {n: merge(kvs) for n, kvs in g6.items()}
        p6r = {"ns_per_uuid": {n: kv["ns_per_record"] for n, kv in p6.items()},
               "ns_per_record_per_round": {n: [kv["ns_per_record"] for kv in kvs]
                                           for n, kvs in g6.items()},
               "cpu_ns_per_byte": {n: kv["cpu_ns_per_byte"] for n, kv in p6.items()
                                   if "cpu_ns_per_byte" in kv},
               "goal": GOALS["p6"]}
        if "proc_uuid" in p4r["ns_per_id"]:
            p6r["ns_per_uuid"]["proc_uuid"] = p4r["ns_per_id"]["proc_uuid"]
        per_round = [round(u["cpu_ns_per_byte"] / sf["cpu_ns_per_byte"], 3)
                     for u, sf in zip(g6["uuid_batch4096"], g6["snowflake_batch4096"])]
        p6r["batch_vs_snowflake_per_byte"] = median(per_round)
        p6r["batch_vs_snowflake_per_byte_per_round"] = per_round
        p6r["met"] = p6r["batch_vs_snowflake_per_byte"] <= 2.0

    res = {"note": TCG_NOTE, "meta": meta, "guest_counters": stats,
           "p1_single_id_latency": p1r, "p2_batch_throughput": p2r,
           "p3_contention": p3r, "p4_peers": p4r, "p5_core_instructions": p5r}
    if p6r:
        res["p6_uuidv7"] = p6r
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
    L.append("")
    L.append("| | measure | result | goal | |")
    L.append("| --- | --- | --- | --- | --- |")
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
    if p6r:
        L.append("| P6 | /dev/uuidv7 batch vs /dev/snowflake batch, CPU ns per byte; ns per UUID: 1 per read / 4096 per read / getrandom(16) / /proc uuid | **%.2fx** (%.3f vs %.3f); %s | <= 2x | %s |"
                 % (p6r["batch_vs_snowflake_per_byte"], p6r["cpu_ns_per_byte"]["uuid_batch4096"],
                    p6r["cpu_ns_per_byte"]["snowflake_batch4096"],
                    " / ".join("%.0f" % p6r["ns_per_uuid"].get(k, float("nan")) for k in
                               ("uuid_single", "uuid_batch4096", "getrandom16", "proc_uuid")),
                    ok(p6r["met"])))
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
    if p6r:
        L.append("")
        L.append("P6, /dev/uuidv7 (one thread, in the same guest):")
        L.append("")
        L.append("| source | ns per UUID (wall) | UUIDs/s | CPU ns per byte |")
        L.append("| --- | ---: | ---: | ---: |")
        labels = {"uuid_single": "/dev/uuidv7, one UUID per read",
                  "uuid_batch4096": "/dev/uuidv7, 4096 per read",
                  "snowflake_batch4096": "(/dev/snowflake, 4096 IDs per read: ns per ID)",
                  "getrandom16": "getrandom(16 bytes)",
                  "proc_uuid": "/proc/sys/kernel/random/uuid (open, read, close; P4)"}
        for k, label in labels.items():
            if k in p6r["ns_per_uuid"]:
                ns = p6r["ns_per_uuid"][k]
                cpu = p6r["cpu_ns_per_byte"].get(k)
                L.append("| %s | %.1f | %s | %s |" % (label, ns, fmt_rate(1e9 / ns),
                                                     "%.3f" % cpu if cpu is not None else "-"))
        L.append("")
        L.append("The batch ratio per round: %s. /dev/snowflake's wall time per ID is "
                 "bounded by the layout's cap (4096 per ms); its CPU time is not."
                 % ", ".join("%.2f" % r for r in p6r["batch_vs_snowflake_per_byte_per_round"]))
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
    with open(out + "/bench.gp", "w") as f:
        f.write(gp)


if __name__ == "__main__":
    main()
