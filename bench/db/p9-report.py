#!/usr/bin/env python3
"""P9's table (scripts/bench-db.sh) from the guest's BENCH lines
(bench/db/p9-guest.sh): rows/s of each key's INSERT ... SELECT, the time
against the sequence's (bigserial, AUTO_INCREMENT), the key index's size,
the calls alone and the device alone.  Each figure is the median over the
rounds, with its range (the rounds are interleaved, the order rotated each
round: bench/db/p9-guest.sh); the verdict is the medians', and how many
rounds met it on their own.  Usage: p9-report.py P9.TXT"""
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


def main(path):
    runs, calls, meta, device = {}, [], {}, []
    with open(path) as f:
        for line in f:
            if not line.startswith("BENCH p9 "):
                continue
            kind = line.split()[2]
            fl = fields(line)
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


if __name__ == "__main__":
    main(sys.argv[1])
