#!/usr/bin/env python3
"""P9's table (scripts/bench-db.sh) from the guest's BENCH lines
(bench/db/p9-guest.sh): rows/s of each key's INSERT ... SELECT, the time
against the sequence's (bigserial, AUTO_INCREMENT), the key index's size,
the calls alone and the device alone.  Each figure is the median over the
rounds, with its range (the rounds are interleaved, the order rotated each
round: bench/db/p9-guest.sh); the verdict is the medians', and how many
rounds met it on their own.  Usage: p9-report.py P9.TXT

p9-report.py --native P9NATIVE.TXT: the same from the BENCH p9native lines
of bench/db/p9-native.sh (PostgreSQL natively on this host, the devices
stood in for by files): each key's median time and range, us a row, the
default's own cost a row (less the INSERT with the key given), the calls
alone, what could not be measured.  Exits 1 when the run is not whole:
a key or the calls missing from a round, a table without ROWS distinct
keys, rounds that do not rotate the order, no "done"."""
import re
import shlex
import statistics
import sys


def fields(line):
    out = {}
    for tok in shlex.split(line)[2:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def bench_lines(path, tag):
    """Each "BENCH TAG KIND ..." line of @path: (KIND, its fields, the line)."""
    with open(path) as f:
        for line in f:
            if line.startswith("BENCH %s " % tag):
                yield line.split()[2], fields(line), line


def main(path):
    runs, calls, meta, device = {}, [], {}, []
    for kind, fl, _ in bench_lines(path, "p9"):
        if kind == "meta":
            meta = fl
        elif kind == "calls":
            calls.append(fl)
        elif kind == "device":
            device.append(fl)
        elif kind.startswith("db="):
            runs.setdefault((fl["db"], fl["key"]), []).append(fl)
    if not runs:
        sys.exit("p9-report: no BENCH p9 lines in " + path)
    rows = int(meta.get("rows", 0))
    m = re.search(r"(?:Distrib |from )([0-9.]+)-MariaDB", meta.get("mariadb", ""))
    if m:
        meta["mariadb"] = "MariaDB " + m.group(1)
    print(f"P9: {rows:,} rows a key, {meta.get('rounds', 1)} round(s) (interleaved, the order rotated each round), kernel {meta.get('kernel', '?')}, "
          f"PostgreSQL {meta.get('postgresql', '?')}, {meta.get('mariadb', '?')}, one emulated CPU (TCG)")
    print()
    print("| server | key default | rows/s | time (median) | range | vs the sequence | key index |")
    print("|---|---|---:|---:|---:|---:|---:|")
    base = {"postgresql": "bigserial", "mariadb": "auto_increment"}
    label = {
        "snowflake": "`snowflake.nextval()`", "bigserial": "`bigserial`",
        "gen_random_uuid": "`gen_random_uuid()`", "instagram": "Instagram's PL/pgSQL function",
        "snowflake_uuidv7": "`snowflake.uuidv7()`", "snowflake_next": "`snowflake_next()`",
        "auto_increment": "`AUTO_INCREMENT`", "uuid": "`UUID()` (type UUID)",
        "snowflake_uuidv7_my": "`snowflake_uuidv7()` (type UUID)",
    }
    med = {}
    for (db, key), rs in runs.items():
        ok = [r for r in rs if "ms" in r]
        if ok:
            med[(db, key)] = statistics.median(int(r["ms"]) for r in ok)
    for (db, key), rs in runs.items():
        ok = [r for r in rs if "ms" in r]
        if not ok:
            print(f"| {db} | {label.get(key if db == 'postgresql' or key != 'snowflake_uuidv7' else key + '_my', key)} | failed: {rs[0].get('failed', '?')} | | | | |")
            continue
        ms = med[(db, key)]
        b = med.get((db, base[db]))
        ratio = f"{ms / b:.2f}x" if b else "n/a"
        idx = int(ok[-1].get("index_bytes") or 0)
        rate = rows / (ms / 1000) if ms else 0
        lab = label.get(key if db == "postgresql" or key != "snowflake_uuidv7" else key + "_my", key)
        lo, hi = (f(int(r["ms"]) for r in ok) / 1000 for f in (min, max))
        print(f"| {db} | {lab} | {rate:,.0f} | {ms / 1000:.2f} s | {lo:.2f}-{hi:.2f} s ({len(ok)}) | {ratio} | {idx / 2**20:.1f} MiB |")
    if calls:
        print()
        c = {k: statistics.median(int(x[k]) for x in calls) for k in calls[0] if k.endswith("_ms")}
        none = c.get("none_ms", 0)
        parts = []
        for k in ("snowflake_ms", "sequence_ms", "instagram_ms", "gen_random_uuid_ms"):
            if k in c and rows:
                parts.append(f"{k[:-3]} {(c[k] - none) / rows * 1e3:.2f} us")
        print("The calls alone (SELECT count(f()) FROM generate_series, less the series): "
              + ", ".join(parts) + " a call.")
    if device and rows:
        d = statistics.median(int(x["batch_ms"]) for x in device)
        print(f"The device alone, in reads of up to 4096 IDs (snowflake next -n {rows}, "
              f"with the CLI's formatting): {d / rows * 1e3:.2f} us an ID.")
    pg_s, pg_b, pg_i = (med.get(("postgresql", k)) for k in ("snowflake", "bigserial", "instagram"))
    if pg_s and pg_b:
        verdict = "met" if pg_s <= 1.2 * pg_b and (not pg_i or pg_s < pg_i) else "not met"
        print()
        print(f"P9 (snowflake.nextval() within 1.2x of bigserial and faster than the PL/pgSQL function): "
              f"{verdict}: {pg_s / pg_b:.2f}x of bigserial"
              + (f", {pg_i / pg_s:.2f}x faster than Instagram's function" if pg_i else "") + "."
              + per_round(runs))


def per_round(runs):
    """Each round's own ratio of snowflake.nextval() to bigserial (the two
    are measured a few seconds apart in a round), and how many rounds met
    P9 on their own."""
    by = {}
    for key in ("snowflake", "bigserial", "instagram"):
        for r in runs.get(("postgresql", key), []):
            if "ms" in r:
                by.setdefault(r.get("round", "1"), {})[key] = int(r["ms"])
    rs = [v for _, v in sorted(by.items(), key=lambda kv: int(kv[0]))
          if "snowflake" in v and "bigserial" in v]
    if len(rs) < 2:
        return ""
    met = sum(1 for v in rs if v["snowflake"] <= 1.2 * v["bigserial"]
              and ("instagram" not in v or v["snowflake"] < v["instagram"]))
    ratios = ", ".join(f"{v['snowflake'] / v['bigserial']:.2f}x" for v in rs)
    return f" Round by round: {ratios} of bigserial; met in {met} of {len(rs)} rounds."


NATIVE_KEYS = ("none", "snowflake", "bigserial", "sequence", "snowflake_uuidv7", "gen_random_uuid")
NATIVE_LABEL = {
    "none": "none (the series' value as the key)", "snowflake": "`snowflake.nextval()`",
    "bigserial": "`bigserial`", "sequence": "`nextval('seq')` (a sequence)",
    "snowflake_uuidv7": "`snowflake.uuidv7()`", "gen_random_uuid": "`gen_random_uuid()`",
}
NATIVE_CALLS = (("snowflake_ms", "`snowflake.nextval()`"),
                ("snowflake_zero_ms", "`snowflake.nextval()` on /dev/zero"), ("sequence_ms", "`nextval('seq')`"),
                ("uuidv7_ms", "`snowflake.uuidv7()`"), ("gen_random_uuid_ms", "`gen_random_uuid()`"))


def native(path):
    """The table of bench/db/p9-native.sh's run; 1 when the run is not whole."""
    meta, runs, calls, reads, unmeasured, order, errors, done = {}, {}, [], [], [], {}, [], False
    for kind, fl, line in bench_lines(path, "p9native"):
        if kind == "meta":
            meta = fl
        elif kind == "done":
            done = True
        elif kind in ("unmeasured", "measurable"):
            unmeasured.append((kind, fl))
        elif kind in ("calls", "read") or kind.startswith("db="):
            name = kind if kind in ("calls", "read") else fl.get("key", "?")
            try:
                fl["_ms"] = {k: float(v) for k, v in fl.items() if k == "ms" or k.endswith("_ms")}
                if kind == "read":
                    fl["_ms"]["ms"] = int(fl["ns"]) / 1e6
                    fl["_ms"]["zero_ms"] = int(fl["zero_ns"]) / 1e6
                    if int(fl["ids"]) != int(fl["rows"]) or int(fl["last"]) - int(fl["first"]) != int(fl["rows"]) - 1:
                        errors.append("a read of other IDs than the file's: " + line.strip())
                r, pos = int(fl["round"]), int(fl["pos"])
            except (KeyError, ValueError):
                errors.append("a malformed line: " + line.strip())
                continue
            order.setdefault(r, {})[pos] = name
            if kind == "calls":
                calls.append(fl)
            elif kind == "read":
                reads.append(fl)
            else:
                runs.setdefault(name, []).append(fl)
    rows, rounds = int(meta.get("rows", 0)), int(meta.get("rounds", 0))
    if not meta or not rows or not rounds:
        errors.append("no meta line with rows and rounds")
    if not done:
        errors.append("no 'BENCH p9native done' line: the run did not finish")
    for key in NATIVE_KEYS:
        rs = runs.get(key, [])
        if len(rs) != rounds or any("ms" not in r["_ms"] for r in rs):
            errors.append(f"key {key}: {len(rs)} measurements, not {rounds}")
        for r in rs:
            if r.get("count") != str(rows):
                errors.append(f"key {key}, round {r.get('round')}: {r.get('count')} distinct keys, not {rows}")
    whole = sum(1 for c in calls if len(c["_ms"]) == 1 + len(NATIVE_CALLS))
    if len(calls) != rounds or whole != rounds:
        errors.append(f"the calls: {len(calls)} lines, {whole} of them whole, not {rounds}")
    if len(reads) != rounds:
        errors.append(f"the library alone: {len(reads)} lines, not {rounds}")
    steps = len(NATIVE_KEYS) + 2
    seq = [[order[r].get(i) for i in range(steps)] for r in sorted(order)]
    if sorted(order) != list(range(1, rounds + 1)) or any(None in s or len(set(s)) != steps for s in seq) \
            or any(b != a[1:] + a[:1] for a, b in zip(seq, seq[1:])):
        errors.append("the rounds do not each measure every key and the calls once, the order rotated by one: "
                      + "; ".join(" ".join(map(str, s)) for s in seq))
    if errors:
        print("p9-report --native: the run is not whole:\n  " + "\n  ".join(errors))
        return 1
    med = {k: statistics.median(r["_ms"]["ms"] for r in rs) for k, rs in runs.items()}
    print(f"P9 natively: {rows:,} rows a key, {rounds} round(s) (interleaved, the order rotated each round), "
          f"PostgreSQL {meta.get('postgresql', '?')} on this host ({meta.get('host_cpus', '?')} CPUs, kernel "
          f"{meta.get('kernel', '?')}), the commit {meta.get('commit', '?')}; /dev/snowflake and /dev/uuidv7 "
          f"stood in for by files (libsnowflake's test build, SF_TESTING): one read(2) a row of the page cache, "
          f"not of the device")
    print()
    print("| key default | time (median) | range | us a row | the default's own, a row | vs bigserial | key index |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in NATIVE_KEYS:
        rs, m = runs[key], med[key]
        lo, hi = min(r["_ms"]["ms"] for r in rs), max(r["_ms"]["ms"] for r in rs)
        own = "" if key == "none" else f"{(m - med['none']) / rows * 1e3:.2f} us"
        idx = int(rs[-1].get("index_bytes") or 0)
        print(f"| {NATIVE_LABEL[key]} | {m / 1000:.3f} s | {lo / 1000:.3f}-{hi / 1000:.3f} s ({len(rs)}) | "
              f"{m / rows * 1e3:.2f} | {own} | {m / med['bigserial']:.2f}x | {idx / 2**20:.1f} MiB |")
    print()
    c = {k: [x["_ms"][k] for x in calls] for k in calls[0]["_ms"]}
    none = statistics.median(c["none_ms"])
    parts = []
    for k, lab in NATIVE_CALLS:
        per = [(v - n) / rows * 1e3 for v, n in zip(c[k], c["none_ms"])]
        parts.append(f"{lab} {(statistics.median(c[k]) - none) / rows * 1e3:.2f} us ({min(per):.2f}-{max(per):.2f})")
    print("The calls alone (SELECT count(f()) FROM generate_series, less the series; the median and the "
          "range of the rounds): " + ", ".join(parts) + " a call.")
    rd, rz = ([x["_ms"][k] / rows * 1e3 for x in reads] for k in ("ms", "zero_ms"))
    own = (statistics.median(c["snowflake_ms"]) - none) / rows * 1e3 - statistics.median(rd)
    print(f"The library call alone, no database (snowflake_next(), bench/db/p9-native-read.c): "
          f"{statistics.median(rd):.2f} us ({min(rd):.2f}-{max(rd):.2f}) a call on the same file, "
          f"{statistics.median(rz):.2f} us ({min(rz):.2f}-{max(rz):.2f}) on /dev/zero; so the database's own "
          f"part of a snowflake.nextval() call, less the library's on the file, is about {own:.2f} us.")
    by = {}
    for key in ("snowflake", "bigserial"):
        for r in runs[key]:
            by.setdefault(int(r["round"]), {})[key] = r["_ms"]["ms"]
    ratios = ", ".join(f"{v['snowflake'] / v['bigserial']:.2f}x" for _, v in sorted(by.items()))
    print()
    print(f"snowflake.nextval() against bigserial: {med['snowflake'] / med['bigserial']:.2f}x on the medians; "
          f"round by round: {ratios}.")
    if unmeasured:
        print()
        for kind, fl in unmeasured:
            if kind == "unmeasured":
                print(f"Not measured: {fl.get('fn')} needs the device's {fl.get('needs')} "
                      f"(on the file: {fl.get('error')}).")
            else:
                print(f"Measurable without the device: {fl.get('fn')} reads none (it answered {fl.get('got')}).")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--native":
        sys.exit(native(sys.argv[2]))
    main(sys.argv[1])
