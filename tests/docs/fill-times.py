#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write tests/README.md's lane table (its checks and time columns, and the
sentence above it) from one `make check` run, with that run's commit:

    tests/docs/fill-times.py [SUMMARY] [--commit COMMIT]

SUMMARY: the build/check-summary.txt that tests/lib/check.sh writes at the
end of a run (the default), or a whole log of a run (build/ci.log, the
output of `make check`): its last "======== summary" section is read.  Its
"commit:" line names the run's commit; a run of a tree with changes, or
one without the line, needs --commit.  Every lane of the table must be in
the run (a STAGES= run is refused), and the table must be between the
markers <!-- generated: ... --> and <!-- end generated -->, which
tests/docs/doccheck.py requires of a run's figures.  Prints what changed.
"""
import os
import re
import sys
import textwrap

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
readme = os.path.join(root, "tests", "README.md")
args = sys.argv[1:]
commit = None
if "--commit" in args:
    i = args.index("--commit")
    commit = args[i + 1]
    del args[i:i + 2]
src = args[0] if args else os.path.join(root, "build", "check-summary.txt")

text = open(src, encoding="utf-8", errors="replace").read().replace("\r", "")
parts = re.split(r"^======== summary \((\d+)s\) ========$", text, flags=re.M)
if len(parts) < 3:
    sys.exit("fill-times: no \"======== summary (Ns) ========\" section in %s" % src)
secs, body = parts[-2], parts[-1]
m = re.search(r"^commit: (\S+)(.*)$", body, re.M)
if commit is None:
    if not m or m.group(1) == "unknown" or m.group(2).strip():
        sys.exit("fill-times: %s names no clean commit (%s): give --commit COMMIT"
                 % (src, m.group(0) if m else "no commit: line"))
    commit = m.group(1)
commit = commit[:7] if re.fullmatch(r"[0-9a-f]{8,40}", commit) else commit
rows = {r[0]: r[1:] for r in re.findall(
    r"^  (\S+)\s+(\d+) passed,\s+(\d+) failed\s+(\d+)s", body, re.M)}
tot = re.search(r"^(\d+) passed, (\d+) failed$", body, re.M)
if not rows or not tot:
    sys.exit("fill-times: no stage table or no totals in %s" % src)
check_sh = open(os.path.join(root, "tests", "lib", "check.sh")).read()
background = set(re.findall(r"^\s*(?:want [a-z-]+ && )?bg_stage ([a-z-]+) ", check_sh, re.M))

doc = open(readme, encoding="utf-8").read()
m = re.search(r"^<!-- generated: .*? -->\n(.*?)^<!-- end generated -->$", doc, re.S | re.M)
if not m:
    sys.exit("fill-times: no <!-- generated: ... --> ... <!-- end generated --> region in tests/README.md")
lines, out, seen = m.group(1).split("\n"), [], set()
for line in lines:
    cells = re.split(r"(?<!\\)\|", line)   # a cell's own \| is not a column
    lane = cells[1].strip() if line.startswith("| ") and len(cells) > 6 else None
    if lane in ("lane", None) or set(lane) <= set("- "):
        out.append(line)
        continue
    if lane not in rows:
        sys.exit("fill-times: the lane %s is not in the run (%s): a run of every stage is needed" % (lane, src))
    p, f, t = rows[lane]
    seen.add(lane)
    cells[3] = " %s " % p + ("" if f == "0" else "(%s failed) " % f)
    cells[4] = " %s s%s " % (t, " (background)" if lane in background else "")
    out.append("|".join(cells))
intro = ("Checks and times: the `make check` run of %s (%s s in all, %s passed, %s failed), "
         "its stage table (`build/check-summary.txt`); guest lanes run under QEMU TCG. "
         "`tests/docs/fill-times.py` wrote them." % (commit, secs, tot.group(1), tot.group(2)))
# the sentence: everything of the region above the table
out = textwrap.wrap(intro, 75, break_on_hyphens=False) + [""] + out[next(i for i, line in enumerate(out) if line.startswith("| lane |")):]
missing = sorted(set(rows) - seen)
if missing:
    sys.exit("fill-times: stages of the run without a row in tests/README.md: %s" % " ".join(missing))
new = doc[:m.start()] + "<!-- generated: tests/docs/fill-times.py from the run of %s -->\n" % commit + \
    "\n".join(out) + "<!-- end generated -->" + doc[m.end():]
if new != doc:
    open(readme, "w", encoding="utf-8").write(new)
print("fill-times: tests/README.md's lane table from the run of %s: %d lanes, %s s, %s passed, %s failed"
      % (commit, len(seen), secs, tot.group(1), tot.group(2)))
