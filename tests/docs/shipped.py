#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The files a project ships (issue 45, item 5), against the tree.  Run by
tests/docs/run.sh beside doccheck.py, whose helpers it uses; one "ok   ..." or "FAIL ..." line per check.

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

Usage: shipped.py [CHECK...]
"""
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


CHECKS = {"licences": check_licences, "news": check_news, "pkgdocs": check_pkgdocs}
if __name__ == "__main__":
    args = sys.argv[1:]
    for name in args or list(CHECKS):
        if name not in CHECKS:
            sys.exit("shipped.py: no check %s (%s)" % (name, " ".join(CHECKS)))
        CHECKS[name]()
    sys.exit(1 if doccheck.bad else 0)
