#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""P9's rounds interleave (issue 43, item 5): in the BENCH p9 lines of
bench/db/p9-guest.sh, every round measures each key default, the calls and
the device once (11 measurements, positions 0-10), and round r+1 is round
r's order rotated by one, so that a slow stretch of the host falls on
different keys in different rounds.  Prints each round's order as comments;
exits 1 when the rounds do not interleave so, or there are fewer than two.
Usage: p9-rounds.py P9.TXT (tests/db/run.sh, on the db guest's run)."""
import importlib.util
import os
import sys

# The BENCH lines' fields as P9's report reads them (bench/db/p9-report.py).
_spec = importlib.util.spec_from_file_location(
    "p9_report", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                              "db", "p9-report.py"))
p9_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(p9_report)

STEPS = 11


def main(path):
    order = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("BENCH p9 "):
                continue
            fl = p9_report.fields(line)
            if "round" not in fl or "pos" not in fl:
                continue
            name = line.split()[2] + (":" + fl["key"] if "key" in fl else "")
            order.setdefault(int(fl["round"]), {})[int(fl["pos"])] = name
    rounds = [[order[r].get(i) for i in range(STEPS)] for r in sorted(order)]
    for r, names in zip(sorted(order), rounds):
        print(f"# round {r}: {' '.join(map(str, names))}")
    ok = len(rounds) >= 2 and sorted(order) == list(range(1, len(rounds) + 1))
    for names in rounds:
        ok = ok and None not in names and len(set(names)) == STEPS
    for a, b in zip(rounds, rounds[1:]):
        ok = ok and b == a[1:] + a[:1]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
