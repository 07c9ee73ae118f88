#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The documents against the tree, generic over every tracked *.md file and
every manual page (userspace/man/*.[1-8]), so that a page added later falls
under the same checks.  Run by tests/docs/run.sh; prints one "ok   ..." or
"FAIL ..." line per check.

  links     every relative link [..](path#anchor) resolves: the file
            exists and, in a .md file, the anchor is one of its headings;
            every repository path in a code span (`tests/lease/check.py`)
            or a manual page exists (globs and <placeholders> allowed).
  make      every `make TARGET` in a code span or block names a target of
            the Makefile it runs (`make -C DIR` that of DIR), and every
            STAGES= name is a stage of tests/lib/check.sh (--stages).
  agent     docs/reference.md's agent tables against userspace/agent/:
            the options table has every long option of conf.c and nothing
            else (a config key bare, a command-line-only option as --name),
            the exit code table every AG_EXIT_* of conf.h and nothing else.
  numbers   a time or count a run produces, stated in prose ("about 5
            minutes", "3279 s", "1,850 checks", "about 167 of them", "One
            run ..."), must name that run's commit in its paragraph or table
            row ("the run of b0278b3"), or sit between the markers
            <!-- generated: ... --> and <!-- end generated --> of a
            generator that names it (tests/docs/fill-times.py); a table
            with a `time` column must be so generated.  A document that
            records how things were at a commit (tests/*/MIGRATION.md) says
            so on a line <!-- record of COMMIT: ... -->: the numbers check
            and the paths in its code spans are skipped.
  templates no documented command copies a template of packaging/ (a file
            with @VARS@) by hand: `make install-packaging` fills them.
  fuzz      every fuzz target (fuzz/*_fuzz.c) is named in the fuzz stage's
            row of docs/reference.md.

Usage: doccheck.py [--root DIR] [CHECK...]   (default: all checks; DIR:
the tree to read, default this one, e.g. an old commit's `git archive`).
"""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(HERE, "..", ".."))
args = sys.argv[1:]
if args[:1] == ["--root"]:
    root, args = os.path.abspath(args[1]), args[2:]
bad = 0


def ok(msg):
    print("ok   " + msg)


def fail(msg):
    global bad
    bad += 1
    print("FAIL " + msg)


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def tracked(pattern):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", pattern],
                             capture_output=True, text=True, check=True).stdout
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:   # not a git tree (an archive of an old commit)
        files = [os.path.relpath(f, root) for f in
                 glob.glob(os.path.join(root, "**", pattern), recursive=True)
                 if "/build/" not in f]
    return sorted(f for f in files if not f.startswith("build/"))


MDS = tracked("*.md")
MANS = sorted(os.path.relpath(f, root) for f in glob.glob(os.path.join(root, "userspace/man/*.[1-8]")))


def prose_units(text):
    """(line number, unit) per paragraph or table row, code blocks left out."""
    units, cur, start, inb = [], [], 0, False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            inb = not inb
            if cur:
                units.append((start, " ".join(cur)))
                cur = []
            continue
        if inb:
            continue
        if not line.strip() or line.startswith("|") or line.startswith("#"):
            if cur:
                units.append((start, " ".join(cur)))
                cur = []
            if line.strip():
                units.append((n, line))
            continue
        if not cur:
            start = n
        cur.append(line)
    if cur:
        units.append((start, " ".join(cur)))
    return units


def code_texts(text):
    """(line number, text) of every code span and every line of a code block."""
    out, inb = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            inb = not inb
            continue
        if inb:
            out.append((n, line))
        else:
            out.extend((n, m) for m in re.findall(r"`([^`]+)`", line))
    return out


def man_text(rel):
    t = read(rel)
    return re.sub(r"\\f[BIRP]|\\&|\\c", "", t).replace("\\-", "-")


def slug(heading):
    """GitHub's anchor of a heading."""
    h = re.sub(r"[`*_]|\[([^]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")


def anchors(rel):
    text, seen, out, inb = read(rel), {}, set(), False
    for line in text.split("\n"):
        if line.startswith("```"):
            inb = not inb
        m = None if inb else re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else "%s-%d" % (s, k))
    return out


TOP = {p.split("/")[0] for p in tracked("*") if "/" in p}
PATH_RE = re.compile(r"(?<![\w./$-])((?:%s)/[\w.*?\[\]{}<>/-]*[\w*\]>])" % "|".join(sorted(TOP)))


def path_exists(p):
    """p, a glob, or a program the build makes from p.c."""
    if "<" in p or "{" in p:
        return True
    p = os.path.join(root, p.rstrip("."))
    return bool(glob.glob(p)) or os.path.exists(p + ".c")


def record(text):
    """A document that records how things were at a commit (a migration
    table: old paths, old counts) says so on a line of its own:
    <!-- record of COMMIT: ... -->; the paths and numbers checks skip it."""
    return re.search(r"^<!-- record of %s\b" % HASH, text, re.M) is not None


def check_links():
    n, n0 = 0, bad
    for rel in MDS:
        text = read(rel)
        d = os.path.dirname(rel)
        for ln, unit in prose_units(text):
            for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", unit)):
                if re.match(r"[a-z]+:", target):
                    continue
                n += 1
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(d, path)) if path else rel
                where = "%s:%d: [..](%s)" % (rel, ln, target)
                if not os.path.exists(os.path.join(root, dest)):
                    fail("%s: no such file %s" % (where, dest))
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    fail("%s: %s has no heading #%s" % (where, dest, anchor))
        for ln, code in ([] if record(text) else code_texts(text)):
            for p in PATH_RE.findall(code):
                n += 1
                if not path_exists(p):
                    fail("%s:%d: `%s`: no such path in the repository" % (rel, ln, p))
    for rel in MANS:
        for ln, line in enumerate(man_text(rel).split("\n"), 1):
            for p in PATH_RE.findall(line):
                n += 1
                if not path_exists(p):
                    fail("%s:%d: %s: no such path in the repository" % (rel, ln, p))
    if bad == n0:
        ok("links: %d relative links and repository paths of %d documents resolve" % (n, len(MDS) + len(MANS)))


def make_targets(mk):
    try:
        text = read(mk)
    except OSError:
        return set()
    text = text.replace("\\\n", " ")
    out = set()
    for m in re.finditer(r"^([A-Za-z][\w.%/-]*(?:[ \t]+[A-Za-z][\w.%/-]*)*)[ \t]*::?(?![=])", text, re.M):
        out.update(m.group(1).split())
    return out


def stages():
    if "--stages" not in read("tests/lib/check.sh"):   # an old check.sh would run make check
        return set(re.findall(r"^\s*(?:want [a-z-]+ && )?(?:run_stage|bg_stage) ([a-z-]+) ",
                              read("tests/lib/check.sh"), re.M))
    try:
        out = subprocess.run(["bash", os.path.join(root, "tests/lib/check.sh"), "--stages"],
                             capture_output=True, text=True, timeout=30)
        names = set(out.stdout.split()) if out.returncode == 0 else set()
    except (OSError, subprocess.TimeoutExpired):
        names = set()
    return names


def check_make():
    known, targets, n0 = stages(), {}, bad
    n = 0
    docs = [(rel, code_texts(read(rel))) for rel in MDS]
    # manual pages: the lines of .B, .BR, ... and of .EX examples
    for rel in MANS:
        lines, ex = [], False
        for ln, line in enumerate(man_text(rel).split("\n"), 1):
            ex = (ex or line.startswith(".EX")) and not line.startswith(".EE")
            if ex or re.match(r"\.(B|BR|RB|IB|BI)\s", line):
                lines.append((ln, line))
        docs.append((rel, lines))
    for rel, texts in docs:
        for ln, code in texts:
            for m in re.finditer(r"(?:^|[\s;&|(])make((?:\s+(?:-C\s+\S+|-[a-z]+|[A-Za-z][\w-]*(?:=\S*)?))*)", code):
                words, mk, i = m.group(1).split(), "Makefile", 0
                while i < len(words):
                    w = words[i]
                    if w == "-C" and i + 1 < len(words):
                        mk = os.path.join(words[i + 1], "Makefile")
                        i += 2
                        continue
                    i += 1
                    if w.startswith("-") or "=" in w:
                        continue
                    # kbuild's own targets, run in a kernel tree
                    if re.match(r"^(\w*config|modules(_install)?|headers_install)$", w):
                        continue
                    if mk not in targets:
                        targets[mk] = make_targets(mk)
                    n += 1
                    if w not in targets[mk]:
                        fail("%s:%d: `make %s%s`: %s has no target %s" %
                             (rel, ln, "-C %s " % os.path.dirname(mk) if mk != "Makefile" else "", w, mk, w))
            for m in re.finditer(r"STAGES=(\"[^\"]*\"|'[^']*'|[\w-]+|<\w+>)", code):
                for st in m.group(1).strip("\"'").split():
                    if st.startswith("<"):
                        continue
                    n += 1
                    if st not in known:
                        fail("%s:%d: STAGES=%s: no such stage (the stages: %s)" %
                             (rel, ln, st, " ".join(sorted(known))))
    if bad == n0:
        ok("make: %d make targets and STAGES names of the documents exist" % n)


def table_after(text, header_re):
    m = re.search(header_re, text, re.M)
    if not m:
        return None
    rows = []
    for line in text[m.end():].split("\n")[1:]:
        if not line.startswith("|"):
            break
        if re.match(r"\|\s*-", line):
            continue
        rows.append(line)
    return rows


def agent_defaults(conf, sect):
    """(--help's defaults, the reference table's): {option: first word of
    its default}, from userspace/agent/conf.c's usage text and the `| option
    | default |` table of @sect (a row may name several options and as many
    defaults, comma-separated)."""
    usage = re.search(r"const char ag_usage\[\] =\n(.*?);\n", conf, re.S).group(1)
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', usage)).replace("\\n", "\n")
    norm = {"no": "off", "off": "off"}

    def word(v):
        w = v.strip().strip("`").split()[0].rstrip(":;") if v.strip() else ""
        return norm.get(w, w)
    helpdef = {}
    for b in re.split(r"\n  (?=-)", text):
        m = re.match(r"(?:-\w, )?--([a-z-]+)", b)
        d = re.search(r"\(default:? ([^);,]+)", " ".join(b.split()))
        if m and d:
            helpdef[m.group(1)] = word(d.group(1))
    refdef = {}
    for r in table_after(sect, r"^\| option \| default \|") or []:
        c = r.split("|")
        names = re.findall(r"`(?:--)?([a-z][a-z-]*)[^`]*`", c[1])
        defs = re.split(r",\s*(?![^()]*\))", c[2])
        if len(names) == len(defs):
            for n, d in zip(names, defs):
                refdef[n] = word(d)
    return helpdef, refdef


def default_diffs(helpdef, refdef):
    return ["--%s: --help says (default %s), docs/reference.md's table %s" % (o, helpdef[o], refdef[o])
            for o in sorted(set(helpdef) & set(refdef)) if helpdef[o] != refdef[o]]


def check_agent_defaults():
    """Every default the agent's --help states is the one docs/reference.md's
    options table states (issue 42, finding 12), and the comparison itself
    finds a planted difference."""
    n0 = bad
    ref, conf = read("docs/reference.md"), read("userspace/agent/conf.c")
    sect = ref.split("## Cluster worker ids", 1)[-1].split("\n## ", 1)[0]
    helpdef, refdef = agent_defaults(conf, sect)
    both = set(helpdef) & set(refdef)
    if len(both) < 20:
        fail("agent: only %d options' defaults read from both --help and docs/reference.md" % len(both))
    for d in default_diffs(helpdef, refdef):
        fail("agent: " + d)
    planted, _ = agent_defaults(conf.replace("lease length (default 10000)", "lease length (default 9000)"), sect)
    if not default_diffs(planted, refdef):
        fail("agent: the defaults check missed a planted --ttl-ms default of 9000")
    if bad == n0:
        ok("agent: the %d defaults --help and docs/reference.md's table both state agree (a planted one differs)"
           % len(both))


def check_agent():
    n0 = bad
    ref, conf, confh = read("docs/reference.md"), read("userspace/agent/conf.c"), read("userspace/agent/conf.h")
    sect = ref.split("## Cluster worker ids", 1)[-1].split("\n## ", 1)[0]
    body = re.search(r"struct option opts\[\] = \{(.*?)\n\};", conf, re.S).group(1)
    opts = dict(re.findall(r'\{ "([a-z-]+)", \w+_argument, NULL, (\w+|\'\w\') \}', body))
    # key_of(): which options a configuration file may set.
    enum = re.search(r"enum \{(.*?)\};", conf, re.S).group(1)
    order = re.findall(r"\b(O_\w+)", enum)
    kf = re.search(r"static int key_of\(.*?\n\}", conf, re.S).group(0)
    lo = re.search(r"o->val >= (O_\w+)", kf)
    excl = set(re.findall(r"o->val != (O_\w+)", kf))

    def is_key(val):
        return (val in order and lo is not None and order.index(val) >= order.index(lo.group(1))
                and val not in excl)
    rows = table_after(sect, r"^\| option \| default \|")
    if rows is None:
        fail("agent: no `| option | default |` table in docs/reference.md's agent section")
        return
    doc = {}
    for r in rows:
        cell = r.split("|")[1]
        for name in re.findall(r"`(--)?([a-z][a-z-]*)[^`]*`", cell):
            doc[name[1]] = name[0]
    for o, val in sorted(opts.items()):
        want = "" if is_key(val) else "--"
        if o not in doc:
            fail("agent: option --%s of userspace/agent/conf.c is not in docs/reference.md's options table" % o)
        elif doc[o] != want:
            fail("agent: `%s%s` in docs/reference.md's options table: it is %s" %
                 (doc[o], o, "a configuration key too: write it bare" if want == "" else
                  "command-line only: write it --%s" % o))
    for o in sorted(set(doc) - set(opts)):
        fail("agent: `%s` of docs/reference.md's options table is no option of userspace/agent/conf.c" % o)
    codes = {int(v) for v in re.findall(r"^#define AG_EXIT_\w+\s+(\d+)", confh, re.M)}
    rows = table_after(sect, r"^\| exit code \| meaning \|")
    if rows is None:
        fail("agent: no `| exit code | meaning |` table in docs/reference.md's agent section")
        return
    dcodes = {int(r.split("|")[1]) for r in rows if r.split("|")[1].strip().isdigit()}
    for c in sorted(codes - dcodes):
        fail("agent: exit code %d (userspace/agent/conf.h) is not in docs/reference.md's exit code table" % c)
    for c in sorted(dcodes - codes):
        fail("agent: exit code %d of docs/reference.md's table is no AG_EXIT_* of userspace/agent/conf.h" % c)
    if bad == n0:
        ok("agent: docs/reference.md's tables have the %d options (%d configuration keys) and %d exit codes of userspace/agent/, nothing else"
           % (len(opts), sum(map(is_key, opts.values())), len(codes)))


RUN_FIGURE = [
    r"\b(?:about|~|roughly|took|takes|taking|within)\s*\d[\d,.]*\s*(?:s|min|minutes?|seconds?|hours?)\b",
    r"\b\d[\d,.]*\s*(?:s|min|minutes)\s+(?:per kernel|in all|of guest time|each under)\b",
    r"\b\d[\d,]*\s+(?:checks|passed|failed)\b",
    r"\b(?:about|~)\s*\d[\d,]*\s+(?:of them|points|execs|calls)\b",
    r"\b(?:[Oo]ne (?:such )?run|[Aa] run on|[Ii]n one run)\b",
    # a range over runs: "145 to 464 ms in four runs"
    r"\b\d[\d,.]*\s*(?:to|-|\u2013)\s*\d[\d,.]*\s*(?:ms|s|seconds?|minutes?)\s+"
    r"(?:in|over|across)\s+(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+runs\b",
]
HASH = r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"
CITED = re.compile(r"\bruns?\b.{0,40}?%s|\bat %s" % (HASH, HASH))


def check_numbers():
    n0, n = bad, 0
    # a stage's time ("vmtest 487 s", "deps: 70 s"), a run's total ("2393 s in all")
    pats = RUN_FIGURE + [r"\b(?:%s):?\s+\d+\s?s\b" % "|".join(sorted(map(re.escape, stages()))),
                         r"\b\d[\d,]*\s?s in all\b"]
    for rel in MDS:
        text = read(rel)
        if record(text):
            continue
        # generated regions: the generator names the run's commit
        for m in re.finditer(r"<!-- generated: (.*?) -->(.*?)<!-- end generated -->", text, re.S):
            if not re.search(r"\b[0-9a-f]{7,40}\b", m.group(1)):
                fail("%s: the generated region %r names no commit" % (rel, m.group(1)[:60]))
        blank = re.sub(r"<!-- generated: .*?<!-- end generated -->",
                       lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        # a table of times (a `time` column) is a run's: it must be generated
        for ln, line in enumerate(blank.split("\n"), 1):
            if line.startswith("|") and re.search(r"\|\s*time\s*\|", line):
                n += 1
                fail("%s:%d: a table of times not generated from a run (tests/docs/fill-times.py writes tests/README.md's)"
                     % (rel, ln))
        for ln, unit in prose_units(blank):
            u = re.sub(r"`[^`]*`", "", unit)
            for pat in pats:
                for m in re.finditer(pat, u):
                    n += 1
                    if not CITED.search(u):
                        fail("%s:%d: \"%s\": a run's figure without the run's commit (say \"the run of <commit>\", or generate it)"
                             % (rel, ln, u[max(0, m.start() - 30):m.end() + 10].strip()))
    if bad == n0:
        ok("numbers: %d figures of runs in %d documents name their run's commit or are generated" % (n, len(MDS)))


def check_templates():
    n0 = bad
    tmpl = {os.path.relpath(f, root) for f in glob.glob(os.path.join(root, "packaging/**/*"), recursive=True)
            if os.path.isfile(f) and re.search(r"@[A-Z]+@", open(f, encoding="utf-8", errors="replace").read())}
    for rel in MDS:
        for ln, code in code_texts(read(rel)):
            if not re.search(r"(?:^|[\s;&|])(?:install|cp)\s", code):
                continue
            for p in PATH_RE.findall(code):
                hit = [t for t in tmpl if glob.fnmatch.fnmatch(t, p) or t.startswith(p.rstrip("/") + "/")]
                if hit:
                    fail("%s:%d: `%s` copies the template %s by hand (its @VARS@ unfilled): use `make install-packaging`"
                         % (rel, ln, code.strip(), ", ".join(sorted(hit))))
    if bad == n0:
        ok("templates: no document copies one of the %d templates of packaging/ by hand" % len(tmpl))


def check_fuzz():
    n0 = bad
    targets = sorted(re.sub(r"_fuzz\.c$", "", os.path.basename(f))
                     for f in glob.glob(os.path.join(root, "fuzz/*_fuzz.c")))
    row = [line for line in read("docs/reference.md").split("\n") if line.startswith("| fuzz |")]
    for t in targets:
        if not row or "`%s`" % t not in row[0]:
            fail("fuzz: target %s (fuzz/%s_fuzz.c) is not named in docs/reference.md's fuzz row" % (t, t))
    if bad == n0:
        ok("fuzz: docs/reference.md's fuzz row names the %d targets of fuzz/" % len(targets))


CHECKS = {"links": check_links, "make": check_make, "agent": check_agent,
          "agent-defaults": check_agent_defaults,
          "numbers": check_numbers, "templates": check_templates, "fuzz": check_fuzz}
if __name__ == "__main__":   # tests/docs/shipped.py imports the helpers
    for name in args or list(CHECKS):
        if name not in CHECKS:
            sys.exit("doccheck.py: no check %s (%s)" % (name, " ".join(CHECKS)))
        CHECKS[name]()
    sys.exit(1 if bad else 0)
