#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The files a project ships and the operator's questions (issue 45, items
4 and 5), against the tree.  Run by tests/docs/run.sh beside doccheck.py,
whose helpers it uses; one "ok   ..." or "FAIL ..." line per check.

  licences  every licence and exception an SPDX-License-Identifier line of
            a tracked file (or a client's package manifest) names has its
            text in LICENSES/ (a "Valid-License-Identifier:" or
            "SPDX-Exception-Identifier:" line, as the kernel's), and
            COPYING names each; COPYING's table of paths is true of every
            tracked file's SPDX line (the most specific path decides).
  news      NEWS.md has a "## X.Y.Z" entry for VERSION, for every version
            of debian/changelog and every value VERSION ever had in git.
  pkgdocs   every docs/ path a manual page or a program's source cites is
            shipped by that program's package (debian/PKG.docs), and the
            page says where (/usr/share/doc/PKG); every /usr/share/doc/PKG/
            path a document, page, program or debian/control cites is a
            file the package ships (.docs, .examples).
  layout    docs/operations.md's tables of when a layout runs out and what
            it holds are those this script computes from the header's
            defaults (--write regenerates them).
  events    every event= name snowflake-agent and snowflake-floord log has
            a row in docs/operations.md's troubleshooting table, and every
            row names an event the code logs.

Usage: shipped.py [--write] [CHECK...]
"""
import datetime
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doccheck  # noqa: E402  (its helpers; its checks run only as a program)
from doccheck import ok, fail, read, tracked, root  # noqa: E402


def spdx_files():
    """{tracked file: its SPDX expression}, build/ never counted, nor the
    licences' texts (their usage guides quote SPDX lines)."""
    out = {}
    for f in tracked("*"):
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as h:
                head = h.read(4000)
        except OSError:
            continue
        m = re.search(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+ -]+?)\s*(?:\*/|-->|\"|$)", head, re.M)
        if m and f != "tests/docs/shipped.py" and not f.startswith("LICENSES/"):
            out[f] = " ".join(m.group(1).split())
    return out


def manifest_licences():
    """{file: licence} of the clients' package manifests."""
    out = {}
    for f in tracked("clients/*"):
        text = read(f) if re.search(r"(package|composer)\.json$|pyproject\.toml$", f) else ""
        for m in re.finditer(r'"license":\s*"([^"]+)"|^license\s*=\s*\{text\s*=\s*"([^"]+)"', text, re.M):
            out[f] = m.group(1) or m.group(2)
    return out


def licence_texts():
    """{identifier: LICENSES/ file}, licences and exceptions."""
    out = {}
    for f in sorted(glob.glob(os.path.join(root, "LICENSES", "*", "*"))):
        with open(f, encoding="utf-8") as h:
            for line in h:
                m = re.match(r"(?:Valid-License-Identifier|SPDX-Exception-Identifier):\s*(\S+)", line)
                if m:
                    out[m.group(1)] = os.path.relpath(f, root)
                if line.startswith("License-Text:"):
                    break
    return out


def copying_table(text):
    """[(path, expression)] of COPYING's indented table."""
    return [(m.group(1), " ".join(m.group(2).split()))
            for m in re.finditer(r"^ {4}(\S+)\s{2,}(\S.*?)\s*$", text, re.M)]


def licence_of(table, f):
    best = None
    for path, expr in table:
        if path == "*" or f == path or (path.endswith("/") and f.startswith(path)):
            n = -1 if path == "*" else len(path)
            if best is None or n > best[0]:
                best = (n, expr, path)
    return best


def check_licences():
    n0 = doccheck.bad
    files, texts = spdx_files(), licence_texts()
    if len(files) < 100:
        fail("licences: only %d tracked files with an SPDX line read" % len(files))
    exprs = set(files.values()) | set(manifest_licences().values())
    ids = set()
    for e in exprs:
        ids.update(w for w in re.split(r"\s+(?:WITH|AND|OR)\s+|[()]", e) if w)
    for i in sorted(ids):
        if i in texts:
            ok("licences: %s has its text in %s" % (i, texts[i]))
        else:
            fail("licences: %s (used by %s) has no text in LICENSES/ (a file with 'Valid-License-Identifier: %s')"
                 % (i, next(f for f, e in files.items() if i in e.split()) if any(i in e.split() for e in files.values())
                    else "a package manifest", i))
    try:
        copying = read("COPYING")
    except OSError:
        fail("licences: no COPYING")
        return
    for e in sorted(exprs):
        if re.search(r"(?<![\w.+-])%s(?![\w.+-])" % re.escape(e), copying):
            ok("licences: COPYING names %s" % e)
        else:
            fail("licences: COPYING does not name %s" % e)
    table = copying_table(copying)
    if not table:
        fail("licences: COPYING has no table of paths and licences")
    for path, expr in table:
        if path != "*" and not any(f == path or f.startswith(path) for f in files) and \
                not os.path.exists(os.path.join(root, path)):
            fail("licences: COPYING's path %s matches no file" % path)
    wrong = ["%s: its SPDX line says %s, COPYING (%s) %s" % (f, e, licence_of(table, f)[2], licence_of(table, f)[1])
             for f, e in sorted(files.items()) if table and licence_of(table, f)[1] != e]
    for w in wrong[:10]:
        fail("licences: " + w)
    if len(wrong) > 10:
        fail("licences: and %d more files COPYING's table gets wrong" % (len(wrong) - 10))
    if table and not wrong:
        ok("licences: COPYING's table gives the licence of each of the %d files with an SPDX line" % len(files))
    if doccheck.bad == n0:
        ok("licences: %d identifiers, each with its text and in COPYING" % len(ids))


def check_news():
    n0 = doccheck.bad
    try:
        news = read("NEWS.md")
    except OSError:
        fail("news: no NEWS.md")
        return
    have = set(re.findall(r"^## (\d+\.\d+\.\d+)\b", news, re.M))
    want = {read("VERSION").strip(): "VERSION"}
    for v in re.findall(r"^snowflake \(([^)]+)\)", read("debian/changelog"), re.M):
        want.setdefault(v, "debian/changelog")
    try:
        log = subprocess.run(["git", "-C", root, "log", "-p", "--format=", "--", "VERSION"],
                             capture_output=True, text=True, check=True).stdout
        for v in re.findall(r"^\+(\d+\.\d+\.\d+)$", log, re.M):
            want.setdefault(v, "VERSION's history")
    except (OSError, subprocess.CalledProcessError):
        pass   # an archive of the tree: VERSION and the changelog only
    for v, why in sorted(want.items()):
        if v in have:
            ok("news: NEWS.md has %s (%s)" % (v, why))
        else:
            fail("news: NEWS.md has no '## %s' entry (%s)" % (v, why))
    if doccheck.bad == n0 and len(want) < 2:
        fail("news: only %d versions read" % len(want))


def deb_files(ext):
    """{package: [lines of debian/PACKAGE.ext]}."""
    out = {}
    for f in glob.glob(os.path.join(root, "debian", "*." + ext)):
        pkg = os.path.basename(f)[:-len(ext) - 1]
        out[pkg] = [line.split()[0] for line in read(os.path.relpath(f, root)).split("\n") if line.strip()]
    return out


def package_of(installed):
    """The package whose debian/*.install ships the path @installed."""
    for pkg, lines in deb_files("install").items():
        if any(glob.fnmatch.fnmatch(installed, p) or p.rstrip("/") == installed for p in lines):
            return pkg
    return None


# A program's sources and where its package installs it.
PROGRAMS = {"userspace/agent": "usr/sbin/snowflake-agent", "userspace/floord": "usr/sbin/snowflake-floord",
            "userspace/cli": "usr/bin/snowflake"}


def check_pkgdocs():
    n0, n = doccheck.bad, 0
    docs, examples = deb_files("docs"), deb_files("examples")
    packages = set(re.findall(r"^Package:\s*(\S+)", read("debian/control"), re.M))
    citers = []
    for man in doccheck.MANS:
        pkg = package_of("usr/share/man/man%s/%s" % (man[-1], os.path.basename(man)))
        citers.append((man, pkg, doccheck.man_text(man)))
    for d, binary in PROGRAMS.items():
        pkg = package_of(binary)
        text = "".join(read(f) for f in tracked(d + "/*.c"))
        citers.append((d + "/*.c", pkg, "\n".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))))
    for who, pkg, text in citers:
        cited = sorted(set(re.findall(r"(?<![\w/.-])(docs/[\w./-]*\w)", text)))
        if not cited:
            continue
        if pkg is None:
            fail("pkgdocs: %s cites %s but no debian/*.install ships it" % (who, ", ".join(cited)))
            continue
        for p in cited:
            n += 1
            if any(glob.fnmatch.fnmatch(p, s) for s in docs.get(pkg, [])):
                ok("pkgdocs: %s cites %s, shipped by %s (debian/%s.docs)" % (who, p, pkg, pkg))
            else:
                fail("pkgdocs: %s cites %s, which %s does not ship: add it to debian/%s.docs" % (who, p, pkg, pkg))
        if who.startswith("userspace/man/") and "/usr/share/doc/%s" % pkg not in text:
            fail("pkgdocs: %s cites docs/ files but never says they are in /usr/share/doc/%s" % (who, pkg))
    # every /usr/share/doc/PKG/... the documents, pages, programs and control cite
    texts = [(rel, read(rel)) for rel in doccheck.MDS] + [(m, doccheck.man_text(m)) for m in doccheck.MANS]
    texts += [("debian/control", read("debian/control"))]
    texts += [(f, read(f)) for d in PROGRAMS for f in tracked(d + "/*.c")]
    for rel, text in texts:
        for pkg, rest in re.findall(r"/usr/share/doc/([a-z0-9.+-]+)/?([\w./-]*[\w/])?", text):
            n += 1
            where = "%s: /usr/share/doc/%s/%s" % (rel, pkg, rest)
            shipped = ["" ] + [os.path.basename(p) for p in docs.get(pkg, [])] + ["examples"] + \
                ["examples/" + os.path.basename(p) for p in examples.get(pkg, [])]
            if pkg not in packages:
                fail("pkgdocs: %s: no package %s in debian/control" % (where, pkg))
            elif rest.rstrip("/") not in shipped or (rest.startswith("examples") and pkg not in examples):
                fail("pkgdocs: %s: the package ships no such file (debian/%s.docs, .examples)" % (where, pkg))
    if n < 5:
        fail("pkgdocs: only %d citations read" % n)
    if doccheck.bad == n0:
        ok("pkgdocs: the %d docs/ and /usr/share/doc/ citations are files their packages ship" % n)


def header_defaults():
    h = read("uapi/linux/snowflake.h")
    d = {k.lower(): int(v) for k, v in re.findall(r"#define SNOWFLAKE_DEFAULT_(\w+)\s+(\d+)", h)}
    d["epoch_ms"] = int(re.search(r"#define SNOWFLAKE_TWITTER_EPOCH_MS\s+(\d+)", h).group(1))
    return d


def utc(ms):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def layout_tables():
    """The two tables of docs/operations.md, from the header's defaults."""
    d = header_defaults()
    ep = d["epoch_ms"]
    e2025 = 1735689600000   # 2025-01-01T00:00:00Z
    rows = [(41, 1, ep), (40, 1, ep), (42, 1, ep), (41, 1, e2025), (39, 10, ep), (41, 10, ep),
            (32, 1000, ep), (31, 1000, e2025)]
    out = ["| timestamp bits | time unit | epoch | last tick starts | years |", "| --- | --- | --- | --- | --- |"]
    for bits, unit, epoch in rows:
        end = epoch + (1 << bits) * unit
        deflt = " (the default)" if (bits, unit, epoch) == (d["timestamp_bits"], d["time_unit_ms"], ep) else ""
        out.append("| %d%s | %d ms | %s (`%d`) | %s | %.1f |" % (
            bits, deflt, unit, utc(epoch), epoch, utc(end - unit), (end - epoch) / 1000 / 86400 / 365.2425))
    t1 = "\n".join(out)
    layouts = [(d["timestamp_bits"], d["datacenter_bits"], d["worker_bits"], d["sequence_bits"], d["time_unit_ms"]),
               (41, 0, 10, 12, 1), (41, 5, 7, 10, 1), (41, 4, 4, 14, 1), (40, 6, 6, 11, 1), (41, 5, 5, 12, 10)]
    out = ["| timestamp / datacenter / worker / sequence bits, unit | pairs (hosts) | IDs per tick per host | IDs per second per host, at most |",
           "| --- | --- | --- | --- |"]
    for ts, dc, w, seq, unit in layouts:
        deflt = " (the default)" if (ts, dc, w, seq, unit) == layouts[0] else ""
        out.append("| %d / %d / %d / %d, %d ms%s | %s (%s × %s) | %s | %s |" % (
            ts, dc, w, seq, unit, deflt, "{:,}".format(1 << (dc + w)), "{:,}".format(1 << dc),
            "{:,}".format(1 << w), "{:,}".format(1 << seq), "{:,}".format((1 << seq) * 1000 // unit)))
    return {"runs-out": t1, "capacity": "\n".join(out)}


def check_layout(write=False):
    n0 = doccheck.bad
    rel = "docs/operations.md"
    text = read(rel)
    for name, table in layout_tables().items():
        table += "\n"
        begin, end = "<!-- table %s: tests/docs/shipped.py --write -->\n" % name, "<!-- end table %s -->" % name
        m = re.search(re.escape(begin) + r"(.*?)" + re.escape(end), text, re.S)
        if not m:
            fail("layout: %s has no region %s...%s" % (rel, begin.strip(), end.strip()))
            continue
        if write:
            text = text[:m.start(1)] + table + text[m.end(1):]
        elif m.group(1) != table:
            got, want = m.group(1).split("\n"), table.split("\n")
            diff = [(g, w) for g, w in zip(got, want) if g != w] or [("%d lines" % len(got), "%d lines" % len(want))]
            fail("layout: %s's table %s is not the computed one (tests/docs/shipped.py --write): %r, computed %r"
                 % (rel, name, diff[0][0], diff[0][1]))
        else:
            ok("layout: %s's table %s is the computed one (%d rows)" % (rel, name, len(table.split("\n")) - 3))
    if write:
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
    return doccheck.bad == n0


# Event names built at run time: (file, the format's name part) -> (a
# regular expression over that file whose groups are the values, the name
# made of each value).  A tag appended to a fixed name (fenced%s: the
# device's) is the fixed name.
DYNAMIC = {
    ("userspace/agent/agent.c", "%s_failed"): (r'assign \? "(\w+)" : "(\w+)"', "{}_failed"),
    ("userspace/agent/agent.c", "fenced%s"): (r'"event=(fenced)%s datacenter', "{}"),
    ("userspace/agent/agent.c", "unfenced%s"): (r'"event=(unfenced)%s datacenter', "{}"),
    ("userspace/agent/mysql.c", "%s"): (r'mysql_fatal\(a, \w+, "(\w+)"', "{}"),
    ("userspace/agent/redis.c", "%s"): (r'code == AG_EXIT_AUTH \? "(\w+)" : "(\w+)"', "{}"),
    ("userspace/agent/zookeeper.c", "zookeeper_%s%s"): (r'return "([\w-]+)";', "zookeeper_{}"),
}


def code_events():
    """{event name: file} of snowflake-agent and snowflake-floord."""
    out = {}
    for f in tracked("userspace/agent/*.c") + tracked("userspace/floord/*.c"):
        text = read(f)
        for m in re.finditer(r"event=([\w%-]*)", text):
            name = m.group(1)
            if "%" not in name:
                out.setdefault(name, f)
                continue
            pat, made = DYNAMIC.get((f, name), (None, None))
            if pat is None:
                fail("events: %s: event=%s is built at run time: teach tests/docs/shipped.py's DYNAMIC its values"
                     % (f, name))
                continue
            vals = [v for t in re.findall(pat, text) for v in (t if isinstance(t, tuple) else (t,)) if v]
            if not vals:
                fail("events: %s: no value of event=%s found (DYNAMIC's pattern is stale)" % (f, name))
            for v in vals:
                out.setdefault(made.format(v), f)
    return out


def check_events():
    n0 = doccheck.bad
    events = code_events()
    if len(events) < 50:
        fail("events: only %d event names read from userspace/agent and userspace/floord" % len(events))
    rows = doccheck.table_after(read("docs/operations.md"), r"^\| event \| program \| cause \| what to do \|") or []
    if not rows:
        fail("events: docs/operations.md has no `| event | program | cause | what to do |` table")
    doc = {}
    for r in rows:
        for name in re.findall(r"`([\w-]+)`", r.split("|")[1]):
            doc[name] = r
    for e in sorted(set(events) - set(doc)):
        fail("events: event=%s (%s) has no row in docs/operations.md's troubleshooting table" % (e, events[e]))
    for e in sorted(set(doc) - set(events)):
        fail("events: docs/operations.md's troubleshooting row %s is no event the agent or floord logs" % e)
    if doccheck.bad == n0:
        ok("events: the %d events of snowflake-agent and snowflake-floord each have a row, and every row names one"
           % len(events))


CHECKS = {"licences": check_licences, "news": check_news, "pkgdocs": check_pkgdocs,
          "layout": check_layout, "events": check_events}
if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--write"]:
        sys.exit(0 if check_layout(write=True) else 1)
    for name in args or list(CHECKS):
        if name not in CHECKS:
            sys.exit("shipped.py: no check %s (%s)" % (name, " ".join(CHECKS)))
        CHECKS[name]()
    sys.exit(1 if doccheck.bad else 0)
