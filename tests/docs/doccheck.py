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
            STAGES= name is a stage of tests/lib/check.sh (--stages); `make
            help` names every .PHONY target but all and help.
  agent     docs/reference.md's agent tables against userspace/agent/:
            the options table has every long option of conf.c and nothing
            else (a config key bare, a command-line-only option as --name),
            the exit code table every AG_EXIT_* of conf.h and nothing else.
  agent-defaults  every default --help states is the reference table's.
  agent-descriptions  --help (userspace/agent/conf.c) is the home of each
            option's one-line description: its text after the option's
            head, less a last "(default ...)".  Its row of the reference
            table, its entry in snowflake-agent(8)'s OPTIONS and its comment
            in packaging/agent.conf.example (the comment lines right above
            its "key = value" or "# key = value" line) must begin with that
            text, word for word (markup, line breaks and the case of the
            first letter aside), then end or go on after a punctuation mark
            or " (".  Each of them has every option (the example every
            configuration key), one to a row or entry, and no other.
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
  fuzz      every fuzz target (fuzz/*_fuzz.c) is named in the fuzz lane's
            row of tests/README.md.
  sections  every reference to a named section resolves (issue 45, item 9:
            the shipped modprobe.d file pointed to a README section that did
            not exist): in any tracked text file, `FILE, "Title"` (FILE a
            document, README for README.md, or a manual page NAME(N)) names
            a heading of FILE (a Markdown heading, a .SH or .SS, which may go
            on after the title); NAME(N) followed by a word in capitals that
            is a .SH title of one of the pages names one of NAME(N)'s; in a
            manual page, "see" followed by .B or .BR of a title (not a page)
            names a .SH or .SS of that page.
  signals   every list of the agent's stop signals (two or more of SIGTERM,
            SIGINT, SIGHUP, SIGQUIT joined by commas, "or", "and" or "/") in
            the documents, snowflake-agent(8), --help and the agent's unit
            is the whole of stop_signals[] in userspace/agent/agent.c
            (issue 45: the page listed two of four).  snowflake-floord's
            page and docs/reference.md outside the agent's section are
            floord's signals, not read.
  root      every command line of a code block (a document's ``` block, a
            manual page's .EX) that runs snowflake-agent, which reads
            /etc/snowflake/agent.conf (mode 0600, in /etc/snowflake 0700),
            runs it as root: "sudo " or a "# " prompt, unless it reads no
            configuration (--help, --version) or names its own (--config)
            (issue 45, item 2: "$ snowflake-agent --dry-run" exits 2,
            "cannot read").
  modprobe  packaging/modprobe.d/snowflake.conf, shipped as
            /etc/modprobe.d/snowflake.conf: every name=value it shows is a
            module parameter of driver/snowflake_main.c, and each value in
            its list of defaults is the driver's default; every parameter
            is named in it.
  stores    where the agent is described (its unit, the shipped modprobe.d
            file, debian/control, snowflake-agent(8)'s NAME and DESCRIPTION
            up to its first subsection, --help), every list of stores
            ("etcd or Redis") names the four the agent speaks: etcd, Redis,
            ZooKeeper and MySQL/MariaDB (issue 45, stale: the unit said
            "(etcd or Redis)").
  debs      every `apt install ./P_*.deb ...` in a tracked file installs
            with each of our packages P the ones of ours P depends on
            (debian/control: snowflake-agent needs snowflake-tools), and the
            Kubernetes DaemonSet's image is tagged VERSION (issue 45, stale:
            its tag was 1.3.0 and its image recipe installed the agent
            alone).
  upgrade   while debian/rules installs the units with
            --no-stop-on-upgrade, no clause of the documents, the manual
            pages or the units that names a package upgrade and a restart
            (60 characters each side, cut at : ; ( ) and a full stop) says
            the upgrade restarts anything: it must say not, neither, never,
            nor or nothing (issue 45, item 5: three places said
            "a package upgrade, which restarts it").
  lookup    while userspace/agent/resolve.c bounds the agent's name lookups
            (resolve_bounded()), no document, manual page or file of
            packaging/ says a lookup or a name resolution has no timeout
            ("no timeout", "without a bound", "unbounded"... within 80
            characters before it), unless the clause is about another
            client ("client", "would") (issue 45, item 3: "name resolution
            has no timeout").
  lanes     tests/README.md is the one home of what each lane of `make
            check` checks (issue 45: docs/reference.md had a second, "How it
            is tested", with a table of every lane, which drifted): no
            document for users (README.md, docs/**/*.md) has a heading or a
            paragraph's bold lead "How it is tested", "How they are
            tested" (docs/clients.md had the clients lane's) or "How the
            guests boot", nor a table row naming a lane's script
            `tests/<lane>/run.sh`; tests/README.md and CONTRIBUTING.md may.
  device    the device's reference has one home each (issue 45: it was
            written three times, docs/reference.md, snowflake(4) and
            docs/ABI): snowflake(4) for /dev/snowflake, its IOCTLS one .TP
            entry per SNOWFLAKE_IOC_* of uapi/linux/snowflake.h and no
            other, each naming the structure of its _IOR/_IOW and
            "privileged" exactly for the _IOW ones; its MODULE PARAMETERS
            one entry per module_param_named() of driver/snowflake_main.c,
            with the driver's default, and no other; its ERRORS every errno
            the driver returns (ERESTARTSYS as EINTR, ESPIPE of
            nonseekable_open()) and no other; docs/ABI/ for sysfs, one
            What: per attribute of driver/ (the statistics group under
            statistics/, /dev/uuidv7's) and no other, (RW) exactly for the
            DEVICE_ATTR_RW ones.  And no second home: no other document or
            manual page has a table row (Markdown) or a .TP entry whose
            first cell or head names an ioctl, a module parameter or a
            sysfs file, nor has snowflake(4) a list of the sysfs files.
  mysql8    a document or manual page that names MySQL 8 says "MySQL 8 is
            not supported" (or "is not built or tested") (issue 45, item 10: nothing is built or tested
            on it; the page said it speaks the same protocol and SQL).

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
    # and `make help` (the Makefile's header, which it prints) names every
    # .PHONY target but all and help (issue 45, stale: it left out restart; then ksrc, clean, distclean).
    mk = read("Makefile")
    helptext = mk.split("\n\n", 1)[0]
    phony = set(" ".join(re.findall(r"^\.PHONY:((?:.*\\\n)*.*)", mk, re.M)).replace("\\", " ").split())
    if len(phony) < 10:
        fail("make: only %d .PHONY targets read from the Makefile" % len(phony))
    for t in sorted(phony - {"all", "help"}):
        n += 1
        if not re.search(r"(?:^#|[\s`])make (?:[\w-]+ (?:\||/) )*%s\b" % re.escape(t), helptext, re.M):
            fail("make: `make help` (the Makefile's header) does not name the target %s" % t)
    if bad == n0:
        ok("make: %d make targets and STAGES names of the documents exist, make help names every .PHONY target" % n)


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


def usage_text(conf, confh=""):
    """userspace/agent/conf.c's ag_usage, the C string literals joined, its
    AG_DEFAULT_* macros (conf.h) put in."""
    usage = re.search(r"const char ag_usage\[\] =\n(.*?);\n", conf, re.S).group(1)
    macros = dict(re.findall(r'^#define\s+(AG_DEFAULT_\w+)\s+"([^"]*)"', confh, re.M))
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\b(AG_DEFAULT_\w+)\b', usage)
    return "".join(lit if not mac else macros.get(mac, "") for lit, mac in parts).replace("\\n", "\n")


def agent_defaults(conf, sect, confh=""):
    """(--help's defaults, the reference table's): {option: first word of
    its default}, from userspace/agent/conf.c's usage text and the `| option
    | default |` table of @sect (a row may name several options and as many
    defaults, comma-separated)."""
    text = usage_text(conf, confh)
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
    ref, conf, confh = read("docs/reference.md"), read("userspace/agent/conf.c"), read("userspace/agent/conf.h")
    sect = ref.split("## Cluster worker ids", 1)[-1].split("\n## ", 1)[0]
    helpdef, refdef = agent_defaults(conf, sect, confh)
    both = set(helpdef) & set(refdef)
    if len(both) < 20:
        fail("agent: only %d options' defaults read from both --help and docs/reference.md" % len(both))
    for d in default_diffs(helpdef, refdef):
        fail("agent: " + d)
    planted, _ = agent_defaults(conf.replace("lease length (default 10000)", "lease length (default 9000)"), sect, confh)
    if not default_diffs(planted, refdef):
        fail("agent: the defaults check missed a planted --ttl-ms default of 9000")
    if bad == n0:
        ok("agent: the %d defaults --help and docs/reference.md's table both state agree (a planted one differs)"
           % len(both))


def help_descriptions(text):
    """{option: its description} from the agent's --help (usage_text()): an
    option's text after its head, joined, less a last "(default ...)"
    (the default and its notes, which check_agent_defaults compares)."""
    out = {}
    for b in re.split(r"\n  (?=-)", text.split("\n\nExit status", 1)[0])[1:]:
        # the head: the option, its value's name after one space
        m = re.match(r"(?:-\w, )?--([a-z-]+)(?:\[\S*\]| \S+)?", b)
        d = " ".join(b[m.end():].split())
        out[m.group(1)] = re.sub(r"\s*\(default\b(?:[^()]|\([^()]*\))*\)$", "", d)
    return out


def troff_text(lines):
    """The text of troff lines: the font macros' arguments (.B a b: spaced;
    .BR a b: joined), escapes and other requests left out."""
    out = []
    for line in lines:
        m = re.match(r"\.(B|I|SM|BR|RB|BI|IB|IR|RI)\s+(.*)", line)
        if m:
            args = [q if q or not w else w for q, w in re.findall(r'"((?:[^"]|"")*)"|(\S+)', m.group(2))]
            line = (" " if len(m.group(1)) == 1 else "").join(a.replace('""', '"') for a in args)
        elif line.startswith("."):
            continue
        out.append(line)
    t = re.sub(r"\\f[BIRP]|\\&|\\c", "", " ".join(out)).replace("\\-", "-")
    return t.replace("\\(lq", '"').replace("\\(rq", '"')


def man_descriptions(man):
    """{option: (the entry's head options, its text)} of the OPTIONS
    section's .TP entries of a manual page."""
    opt = man.split("\n.SH OPTIONS\n", 1)[1].split("\n.SH ", 1)[0]
    out = {}
    for e in opt.split("\n.TP\n")[1:]:
        head, *body = e.split("\n")
        names = [n.replace("\\-", "-") for n in re.findall(r"\\-\\-([a-z](?:[a-z]|\\-)*)", head)]
        for n in names:
            out[n] = (names, troff_text(body))
    return out


def example_comments(text):
    """{key: the comment directly above its line} of an agent.conf example:
    a key's line is "key = value" or "# key = value"; its comment, the
    comment lines right above it (none when another key's line is)."""
    out, com = {}, []
    for line in text.split("\n"):
        m = re.match(r"#? ?([a-z][a-z0-9-]*) = \S", line)
        if m:
            out[m.group(1)] = " ".join(com)
            com = []
        elif line.startswith("#"):
            com.append(line[1:].strip())
        else:
            com = []
    return out


def md_text(cell):
    return re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", cell).replace("\\|", "|").replace("`", "")


def norm(t):
    t = " ".join(t.split())
    return t[:1].lower() + t[1:]


def begins(text, desc):
    """text begins with desc, then ends or goes on after a punctuation mark
    or an opening parenthesis: the same words, markup and the case of the
    first letter aside."""
    t, d = norm(text), norm(desc)
    return bool(d) and t.startswith(d) and re.match(r"$|[.,;:]|\s\(", t[len(d):]) is not None


def description_diffs(conf, confh, sect, man, example):
    """Every difference between the agent's options' descriptions as --help
    states them and as the reference table, snowflake-agent(8) and the
    example configuration do, and the options one has and another lacks."""
    body = re.search(r"struct option opts\[\] = \{(.*?)\n\};", conf, re.S).group(1)
    opts = dict(re.findall(r'\{ "([a-z-]+)", \w+_argument, NULL, (\w+|\'\w\') \}', body))
    kf = re.search(r"static int key_of\(.*?\n\}", conf, re.S).group(0)
    order = re.findall(r"\b(O_\w+)", re.search(r"enum \{(.*?)\};", conf, re.S).group(1))
    lo = re.search(r"o->val >= (O_\w+)", kf).group(1)
    keys = {o for o, v in opts.items() if v in order and order.index(v) >= order.index(lo)
            and v not in re.findall(r"o->val != (O_\w+)", kf)}
    helpd = help_descriptions(usage_text(conf, confh))
    refd = {}
    for r in table_after(sect, r"^\| option \| default \|") or []:
        c = r.split("|")
        names = re.findall(r"`(?:--)?([a-z][a-z-]*)[^`]*`", c[1])
        for n in names:
            refd[n] = (names, md_text(c[3]))
    mand, exd = man_descriptions(man), example_comments(example)
    out = []
    for o in sorted(set(opts) - set(helpd)):
        out.append("--%s of userspace/agent/conf.c's option table is not in its --help" % o)
    for o in sorted(set(helpd) - set(opts)):
        out.append("--%s of --help is no option of userspace/agent/conf.c" % o)
    for o in sorted(helpd):
        d = helpd[o]
        if not d:
            out.append("--%s: --help gives no description" % o)
            continue
        for where, table, must in (("docs/reference.md's options table", refd, True),
                                   ("snowflake-agent(8)'s OPTIONS", mand, True),
                                   ("packaging/agent.conf.example", exd, o in keys)):
            if o not in table:
                if must:
                    out.append("--%s is not in %s" % (o, where))
                continue
            names, text = table[o] if table is not exd else ([o], table[o])
            if len(names) > 1:
                out.append("%s describes %s in one entry: give each option its own"
                           % (where, ", ".join(names)))
            elif not begins(text, d):
                out.append("--%s: --help says \"%s\", %s \"%s\"" % (o, d, where, norm(text)[:len(d) + 30]))
    for where, table in (("docs/reference.md's options table", refd), ("snowflake-agent(8)'s OPTIONS", mand)):
        for o in sorted(set(table) - set(helpd)):
            out.append("--%s of %s is not in --help" % (o, where))
    for o in sorted(set(exd) - keys):
        out.append("%s of packaging/agent.conf.example is no configuration key" % o)
    return sorted(set(out)), len(helpd)


def check_agent_descriptions():
    """Every option's description as the agent's --help states it begins
    its row of docs/reference.md's options table, its entry in
    snowflake-agent(8)'s OPTIONS and its comment in the example
    configuration; each has every option (the example every configuration
    key), one to an entry, and no other (issue 42 finding 12, issue 45); a
    description planted changed in --help, and one in the manual page, is
    found."""
    n0 = bad
    ref, conf, confh = read("docs/reference.md"), read("userspace/agent/conf.c"), read("userspace/agent/conf.h")
    sect = ref.split("## Cluster worker ids", 1)[-1].split("\n## ", 1)[0]
    man, example = read("userspace/man/snowflake-agent.8"), read("packaging/agent.conf.example")
    diffs, n = description_diffs(conf, confh, sect, man, example)
    for d in diffs:
        fail("agent descriptions: " + d)
    if n < 50:
        fail("agent descriptions: only %d options read from --help" % n)
    planted, _ = description_diffs(conf.replace(" lease length (default", " lease duration (default"),
                                   confh, sect, man, example)
    caught = [d for d in planted if d.startswith("--ttl-ms: --help says \"lease duration\"")]
    if len(caught) != 3:
        fail("agent descriptions: a --ttl-ms described \"lease duration\" in --help was found in %d of 3 documents: %s"
             % (len(caught), caught))
    planted, _ = description_diffs(conf, confh, sect, man.replace("\nLease length;", "\nLease duration;"), example)
    if not [d for d in planted if d.startswith("--ttl-ms:") and "snowflake-agent(8)" in d]:
        fail("agent descriptions: a --ttl-ms described \"Lease duration\" in snowflake-agent(8) was not found")
    if bad == n0:
        ok("agent descriptions: the %d options of --help, each described as --help does in docs/reference.md, "
           "snowflake-agent(8) and packaging/agent.conf.example (a planted change in --help, in all 3; one in the page)" % n)


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


def generated_prose(m):
    """A generated region, blanked but for what its generator does not
    write: the lane table's "what it checks" cells (tests/docs/fill-times.py
    writes the checks and time columns only), which stay under the check."""
    out = []
    for line in m.group(0).split("\n"):
        cells = re.split(r"(?<!\\)\|", line)
        keep = "fill-times.py" in m.group(0).split("\n", 1)[0] and line.startswith("| ") and len(cells) > 6 \
            and cells[1].strip() != "lane" and not set(cells[1].strip()) <= set("- ")
        out.append("|%s|%s|" % (cells[1], cells[2]) if keep else "")
    return "\n".join(out)


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
        blank = re.sub(r"<!-- generated: .*?<!-- end generated -->", generated_prose, text, flags=re.S)
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
    row = [line for line in read("tests/README.md").split("\n") if line.startswith("| fuzz |")]
    for t in targets:
        if not row or "`%s`" % t not in row[0]:
            fail("fuzz: target %s (fuzz/%s_fuzz.c) is not named in tests/README.md's fuzz row" % (t, t))
    if bad == n0:
        ok("fuzz: tests/README.md's fuzz row names the %d targets of fuzz/" % len(targets))


def joined(t):
    """t as one line: a manual page's .B, .BR ... macros dropped (their words
    stay), lines joined with the comment leaders of the sources and
    configuration files (#, *, //) left out, so that a list or a title that
    wraps is read whole."""
    t = re.sub(r"\n\.[A-Z]+ *", "\n", t)
    return re.sub(r"\s*\n[ \t]*(?:#|\*|//)?[ \t]*", " ", t)


def md_headings(rel):
    text, inb, out = read(rel), False, []
    for line in text.split("\n"):
        if line.startswith("```"):
            inb = not inb
        m = None if inb else re.match(r"#{1,6} (.*)", line)
        if m:
            out.append(re.sub(r"[`*]", "", m.group(1)).strip())
        m = None if inb else re.match(r"\*\*([^*]+?)\.?\*\*", line)
        if m:   # a paragraph's bold lead ("**How the guests boot.** ...")
            out.append(m.group(1).strip())
    return out


def man_headings(rel, kinds="SHS"):
    return [h.strip().strip('"') for k, h in re.findall(r"^\.S([HS]) +(.*)$", read(rel), re.M)
            if k in kinds]


def doc_of(name):
    """The tracked file a reference names: README -> README.md, NAME(N) ->
    userspace/man/NAME.N; None when it is not one of ours."""
    m = re.match(r"^([a-z][\w-]*)\(([1-8])\)$", name)
    if m:
        rel = "userspace/man/%s.%s" % m.groups()
    else:
        rel = name + ".md" if name in ("README", "BENCHMARKS", "NEWS", "CONTRIBUTING", "SECURITY") else name
    return rel if os.path.isfile(os.path.join(root, rel)) else None


def check_sections():
    n0, n = bad, 0
    texts = [f for f in tracked("*") if not f.startswith(("tests/contract/mutants/", "tests/docs/"))
             and os.path.isfile(os.path.join(root, f))]
    sh_all = {h for m in MANS for h in man_headings(m, "H")}
    for rel in texts:
        try:
            text = read(rel)
        except (UnicodeDecodeError, OSError):
            continue
        if rel in MANS:
            text = man_text(rel)
        # comments and paragraphs joined: a title may wrap
        flat = re.sub(r"\n[ \t]*(?:#|\*|//|--|;|\.\\\")?[ \t]*", " ", text)
        for m in re.finditer(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md|README|BENCHMARKS|[a-z][\w-]*\([1-8]\)),? +"
                             r"\"([A-Z][^\"]{1,60}?)[.,]?\"", flat):
            doc = doc_of(m.group(1))
            if doc is None and m.group(1).endswith(".md"):
                doc = doc_of(os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1))))
            if doc is None:
                continue
            n += 1
            title = m.group(2).lower()
            heads = md_headings(doc) if doc.endswith(".md") else man_headings(doc)
            if not any(h.lower().startswith(title) for h in heads):
                fail('sections: %s: %s, "%s": %s has no such heading' % (rel, m.group(1), m.group(2), doc))
        for m in re.finditer(r"(?<![\w-])([a-z][\w-]*\([1-8]\))(?:'s)? ([A-Z]{3,}(?: [A-Z]{3,})*)\b", flat):
            doc = doc_of(m.group(1))
            if doc is None or doc not in MANS or m.group(2) not in sh_all:
                continue
            n += 1
            if m.group(2) not in man_headings(doc, "H"):
                fail("sections: %s: %s %s: %s has no section %s" % (rel, m.group(1), m.group(2), doc, m.group(2)))
    for rel in MANS:
        lines = read(rel).split("\n")
        heads = [h.lower() for h in man_headings(rel)]
        for i in range(1, len(lines)):
            if not re.search(r"(?:^|[ (])see$", lines[i - 1]):
                continue
            m = re.match(r'^\.BR? +("([^"]+)"|([^\s"_]+))(?: +(\S+))?$', lines[i])
            if not m or (m.group(4) or "").startswith("("):
                continue
            n += 1
            title = (m.group(2) or m.group(3)).replace("\\-", "-")
            if title.lower() not in heads:
                fail("sections: %s:%d: see %s: the page has no section %s" % (rel, i + 1, title, title))
    if bad == n0:
        ok("sections: %d references to a named section of a document or manual page resolve" % n)


SIG_RUN = re.compile(r"SIG(?:TERM|INT|HUP|QUIT)(?:(?:\s*(?:,|/|\bor\b|\band\b|,\s*or\b|,\s*and\b)\s*)SIG(?:TERM|INT|HUP|QUIT))+")


def check_signals():
    n0, n = bad, 0
    src = read("userspace/agent/agent.c")
    m = re.search(r"stop_signals\[\] = \{([^}]*)\}", src)
    want = set(re.findall(r"SIG[A-Z]+", m.group(1))) if m else set()
    if len(want) < 2:
        fail("signals: no stop_signals[] read from userspace/agent/agent.c")
        return
    texts = []
    for rel in MDS:
        t = read(rel)
        if rel == "docs/reference.md":   # the agent's section only (floord's signals are its own)
            t = t.split("\n## Cluster worker ids", 1)[-1].split("\n## ", 1)[0]
        texts.append((rel, t))
    texts.append(("userspace/man/snowflake-agent.8", man_text("userspace/man/snowflake-agent.8")))
    texts.append(("userspace/agent/conf.c", read("userspace/agent/conf.c")))
    texts += [(f, read(f)) for f in tracked("packaging/systemd/snowflake-agent*")]
    for rel, t in texts:
        if record(t):
            continue
        t = joined(t)
        flat = re.sub(r"[`*]|\\n\"\s*\"", " ", t)
        flat = re.sub(r"\s+", " ", flat)
        for m in SIG_RUN.finditer(flat):
            n += 1
            got = set(re.findall(r"SIG[A-Z]+", m.group(0)))
            if got != want:
                fail("signals: %s: \"%s\" lists %d of the agent's %d stop signals (%s; agent.c: %s)" %
                     (rel, m.group(0), len(got), len(want), " ".join(sorted(want - got)) + " missing",
                      " ".join(sorted(want))))
    if bad == n0:
        ok("signals: %d lists of the agent's stop signals name all %d of agent.c (%s)" %
           (n, len(want), " ".join(sorted(want))))


def check_mysql8():
    n0, n = bad, 0
    for rel in MDS + MANS:
        t = re.sub(r"\s+", " ", man_text(rel) if rel in MANS else read(rel))
        if re.search(r"MySQL 8", t) and not record(t):
            n += 1
            if not re.search(r"MySQL 8 is not (?:supported|built or tested)", t.replace("*", "")):
                fail("mysql8: %s names MySQL 8 without saying \"MySQL 8 is not supported\" (or \"not built or tested\")" % rel)
    if bad == n0:
        ok("mysql8: the %d documents that name MySQL 8 say it is not supported" % n)


AGENT_CMD = re.compile(r"^\s*(\$ |# |sudo\s+)?(?:[A-Z_]+=\S*\s+)*snowflake-agent(?:\s+(.*))?$")


def check_root():
    n0, n = bad, 0
    blocks = []
    for rel in MDS:
        text = read(rel)
        if record(text):
            continue
        inb = False
        for ln, line in enumerate(text.split("\n"), 1):
            if line.startswith("```"):
                inb = not inb
            elif inb:
                blocks.append((rel, ln, line))
    for rel in MANS:
        ex = False
        for ln, line in enumerate(man_text(rel).split("\n"), 1):
            ex = (ex or line.startswith(".EX")) and not line.startswith(".EE")
            if ex and not line.startswith(".EX"):
                blocks.append((rel, ln, line))
    for rel, ln, line in blocks:
        m = AGENT_CMD.match(line)
        if not m:
            continue
        n += 1
        args = (m.group(2) or "").split("#")[0].split()
        if (m.group(1) or "").strip() in ("#", "sudo") or \
                any(a in ("--help", "-h", "--version") or a.startswith("--config") for a in args):
            continue
        fail("root: %s:%d: `%s` runs snowflake-agent as a user: it reads /etc/snowflake/agent.conf "
             "(0600 root) and exits 2 (\"cannot read\"); sudo or a # prompt" % (rel, ln, line.strip()))
    if bad == n0:
        ok("root: the %d command lines that run snowflake-agent run it as root or read no configuration" % n)


def check_modprobe():
    n0, n = bad, 0
    drv = read("driver/snowflake_main.c")
    macros = dict(re.findall(r"^#define\s+(\w+)\s+(\d+)U?L{0,2}\b", read("uapi/linux/snowflake.h"), re.M))
    params = dict(re.findall(r"^module_param_named\((\w+), (\w+),", drv, re.M))
    dflt = {}
    for name, var in params.items():
        m = re.search(r"^static [\w ]+ %s(?: = ([\w-]+))?;" % var, drv, re.M)
        if not m:
            fail("modprobe: no definition of %s (parameter %s) in driver/snowflake_main.c" % (var, name))
            continue
        v = m.group(1) or "0"
        v = macros.get(v, v)
        dflt[name] = {"false": "0", "true": "1"}.get(v, v)
    if len(params) < 8:
        fail("modprobe: only %d module parameters read from driver/snowflake_main.c" % len(params))
        return
    conf = read("packaging/modprobe.d/snowflake.conf")
    shown = re.findall(r"\b([a-z_]+)=(\S+)", conf)
    for name, _ in shown:
        n += 1
        if name not in params:
            fail("modprobe: packaging/modprobe.d/snowflake.conf shows %s=, which is not a module parameter" % name)
    dpart = conf.split("with their defaults", 1)
    if len(dpart) < 2:
        fail("modprobe: packaging/modprobe.d/snowflake.conf has no list of the parameters' defaults")
    else:
        listed = re.findall(r"\b([a-z_]+)=(\S+)", dpart[1].split("\n#\n", 1)[0])
        for name, v in listed:
            n += 1
            if name in dflt and dflt[name] != v:
                fail("modprobe: packaging/modprobe.d/snowflake.conf gives %s=%s as the default; the driver's is %s"
                     % (name, v, dflt[name]))
    for name in params:
        n += 1
        if not re.search(r"\b%s\b" % name, conf):
            fail("modprobe: the module parameter %s is not named in packaging/modprobe.d/snowflake.conf" % name)
    if bad == n0:
        ok("modprobe: the shipped modprobe.d file's %d parameters and defaults are the driver's" % n)


STORE = r"(?:etcd|Redis|ZooKeeper|MySQL(?:/MariaDB)?|MariaDB)"
STORE_RUN = re.compile(r"\b%s(?:(?:,\s*or\s+|,\s*and\s+|,\s*|\s+or\s+|\s+and\s+|/)%s)+\b" % (STORE, STORE))


def check_stores():
    n0, n = bad, 0
    man = read("userspace/man/snowflake-agent.8").split("\n.SS ", 1)[0]
    texts = [(f, read(f)) for f in ("packaging/systemd/snowflake-agent.service",
                                     "packaging/modprobe.d/snowflake.conf", "debian/control",
                                     "userspace/agent/conf.c")]
    texts.append(("userspace/man/snowflake-agent.8 (NAME, DESCRIPTION)", man))
    for rel, t in texts:
        t = joined(t)
        t = re.sub(r"[`*]|\\n\"\s*\"|\\-", lambda m: "-" if m.group(0) == "\\-" else " ", t)
        for m in STORE_RUN.finditer(t):
            got = {"MySQL" if s.startswith(("MySQL", "MariaDB")) else s for s in re.findall(STORE, m.group(0))}
            if got == {"MySQL"}:
                continue   # "MySQL or MariaDB": one store
            n += 1
            if got != {"etcd", "Redis", "ZooKeeper", "MySQL"}:
                fail("stores: %s: \"%s\" names %d of the agent's 4 stores (etcd, Redis, ZooKeeper, MySQL/MariaDB)"
                     % (rel, m.group(0), len(got)))
    if bad == n0:
        ok("stores: the %d lists of stores where the agent is described name all four" % n)


def check_debs():
    n0, n = bad, 0
    deps = {}
    for stanza in read("debian/control").split("\n\n"):
        m = re.search(r"^Package: (\S+)", stanza, re.M)
        d = re.search(r"^Depends: (.*(?:\n .*)*)", stanza, re.M)
        if m:
            deps[m.group(1)] = set(re.findall(r"([a-z0-9][a-z0-9.+-]*) \(= \$\{binary:Version\}\)", d.group(1) if d else ""))
    if "snowflake-agent" not in deps:
        fail("debs: no snowflake-agent stanza read from debian/control")
        return
    for rel in tracked("*"):
        if rel.startswith(("tests/contract/mutants/", "tests/docs/", "debian/")) or not os.path.isfile(os.path.join(root, rel)):
            continue
        try:
            t = read(rel)
        except (UnicodeDecodeError, OSError):
            continue
        if "_*.deb" not in t:
            continue
        t = joined(t)
        for m in re.finditer(r"\binstall((?:\s+\./(?:[\w./-]*/)?[a-z0-9][a-z0-9.+-]*_\*\.deb)+)", t):
            got = set(re.findall(r"([a-z0-9][a-z0-9.+-]*)_\*\.deb", m.group(1)))
            for p in got & set(deps):
                n += 1
                if not deps[p] <= got:
                    fail("debs: %s: `install%s` installs %s without %s, which it depends on (debian/control)"
                         % (rel, m.group(1), p, " ".join(sorted(deps[p] - got))))
    version = read("VERSION").strip()
    for rel in tracked("packaging/kubernetes/*.yaml"):
        for tag in re.findall(r"^\s*image: \S*snowflake-agent:(\S+)", read(rel), re.M):
            n += 1
            if tag != version:
                fail("debs: %s: the image is tagged %s, VERSION is %s" % (rel, tag, version))
    if bad == n0:
        ok("debs: %d package installs and image tags agree with debian/control and VERSION" % n)


def check_upgrade():
    n0, n = bad, 0
    rules = read("debian/rules")
    units = re.findall(r"dh_installsystemd .*--name=([\w-]+).*--no-stop-on-upgrade", rules)
    if not units:
        ok("upgrade: debian/rules restarts its units on upgrade; nothing to check")
        return
    for rel in MDS + MANS + tracked("packaging/systemd/*"):
        t = man_text(rel) if rel in MANS else read(rel)
        if record(t):
            continue
        t = joined(t)
        for m in re.finditer(r"\b(?:package|apt(?:-get)?) upgrade\b", t, re.I):
            # the clause around it: 60 characters each side, cut at : ; ( ) and a full stop
            before = re.split(r"[:;()]|\.\s", t[max(0, m.start() - 60):m.start()])[-1]
            after = re.split(r"[:;()]|\.\s", t[m.end():m.end() + 60])[0]
            if not re.search(r"\brestart", before + " " + after, re.I):
                continue
            n += 1
            if not re.search(r"\b(?:not|neither|never|nor|[Nn]othing)\b|n't\b", before + " " + after):
                fail("upgrade: %s: \"%s\" says a package upgrade restarts; debian/rules installs %s with "
                     "--no-stop-on-upgrade" % (rel, (before + m.group(0) + after).strip(), ", ".join(units)))
    if bad == n0:
        ok("upgrade: %d clauses on a package upgrade and a restart say it restarts nothing (%s: --no-stop-on-upgrade)"
           % (n, ", ".join(units)))



def check_lookup():
    n0, n = bad, 0
    try:
        bounded = "int resolve_bounded(" in read("userspace/agent/resolve.c")
    except OSError:
        bounded = False
    if not bounded:
        ok("lookup: the agent has no bounded resolver (userspace/agent/resolve.c): nothing to check")
        return
    for rel in MDS + MANS + tracked("packaging/*"):
        t = joined(man_text(rel) if rel in MANS else read(rel))
        if record(t):
            continue
        for m in re.finditer(r"\b(?:no timeout|without a (?:bound|timeout|deadline)|unbounded|never times out)\b", t, re.I):
            clause = re.split(r"[;(]|\.\s", t[max(0, m.start() - 80):m.start()])[-1] + m.group(0)
            if not re.search(r"look(?:ed)? ?up|resol", clause, re.I):
                continue
            n += 1
            if not re.search(r"\b(?:client|would)\b", clause):
                fail("lookup: %s: \"%s\": the agent's lookups are bounded (resolve_bounded(), the store's timeout)"
                     % (rel, clause.strip()))
    if bad == n0:
        ok("lookup: no document says the agent's name lookups are unbounded (%d about another client)" % n)


LANE_HEADS = re.compile(r"^(?:#{1,6} +|\*\*)(How (?:it is|they are) tested|How the guests boot)\b", re.I)
LANE_ROW = re.compile(r"^\|.*?`?(tests/[a-z][\w-]*/run\.sh)\b")


def check_lanes():
    n0, n = bad, 0
    docs = [f for f in MDS if f == "README.md" or f.startswith("docs/")]
    for rel in docs:
        inb = False
        for ln, line in enumerate(read(rel).split("\n"), 1):
            if line.startswith("```"):
                inb = not inb
            if inb:
                continue
            n += 1
            m = LANE_HEADS.match(line)
            if m:
                fail('lanes: %s:%d: "%s": what the lanes check is told in tests/README.md alone'
                     % (rel, ln, m.group(1)))
            m = LANE_ROW.match(line)
            if m:
                fail("lanes: %s:%d: a table row naming %s: the lanes' table is tests/README.md's"
                     % (rel, ln, m.group(1)))
    if "tests/README.md" in MDS and not re.search(r"^## Lanes$", read("tests/README.md"), re.M):
        fail("lanes: tests/README.md has no \"## Lanes\" section")
    if bad == n0:
        ok("lanes: %d documents for users (%d lines) leave the lanes to tests/README.md" % (len(docs), n))


MAN4 = "userspace/man/snowflake.4"
ABI = "docs/ABI/sysfs-class-misc-snowflake"


def device_names():
    """The device's names from the code: {ioctl: (struct, privileged)},
    {parameter: default}, {sysfs path: "RW" or "RO"}."""
    uapi = read("uapi/linux/snowflake.h")
    drv = read("driver/snowflake_main.c")
    ioctls = {m.group(1): (m.group(3), m.group(2) == "W") for m in re.finditer(
        r"^#define\s+(SNOWFLAKE_IOC_[A-Z_]+)\s+_IO(R|W|WR)\(SNOWFLAKE_IOC_MAGIC, \w+, struct (\w+)\)", uapi, re.M)}
    macros = dict(re.findall(r"^#define\s+(\w+)\s+(\d+)U?L{0,2}\b", uapi, re.M))
    params = {}
    for name, var in re.findall(r"^module_param_named\((\w+), (\w+),", drv, re.M):
        m = re.search(r"^static [\w ]+ %s(?: = ([\w-]+))?;" % var, drv, re.M)
        v = (m.group(1) if m else None) or "0"
        v = macros.get(v, v)
        params[name] = {"false": "0", "true": "1"}.get(v, v)
    stats = set(re.findall(r"&sf_attr_(\w+)\.attr", (re.search(
        r"^static struct attribute \*sf_stat_attrs\[\] = \{(.*?)\n\};", drv, re.M | re.S) or re.match("", "")).group(0)))
    sysfs = {}
    for kind, name in re.findall(r"^static DEVICE_ATTR_(RW|RO)\((\w+)\);", drv, re.M):
        sysfs["snowflake/" + name] = kind
    for name in re.findall(r"^SF_VALUE_ATTR\((\w+),", drv, re.M):
        sysfs["snowflake/" + ("statistics/" if name in stats else "") + name] = "RO"
    for kind, name in re.findall(r"^static DEVICE_ATTR_(RW|RO)\((\w+)\);", read("driver/snowflake_uuid.c"), re.M):
        sysfs["uuidv7/statistics/" + name] = kind
    return ioctls, params, sysfs


def man_section(text, title):
    m = re.search(r"^\.SH %s\n(.*?)(?=^\.SH |\Z)" % re.escape(title), text, re.M | re.S)
    return m.group(1) if m else ""


def tp_heads(text):
    """The head line of every .TP entry (and .TQ) of a manual page's text."""
    return re.findall(r"^\.T[PQ]\n(.*)$", text, re.M)


def check_device():
    n0, n = bad, 0
    ioctls, params, sysfs = device_names()
    if len(ioctls) < 8 or len(params) < 12 or len(sysfs) < 30:
        fail("device: only %d ioctls, %d parameters and %d sysfs files read from uapi/ and driver/"
             % (len(ioctls), len(params), len(sysfs)))
        return
    man = read(MAN4)
    # IOCTLS: one entry per command, its structure, privileged exactly for a SET.
    heads = [h for h in tp_heads(man_section(man, "IOCTLS")) if "SNOWFLAKE_IOC_" in h]
    seen = {}
    for h in heads:
        n += 1
        m = re.match(r"\.B (SNOWFLAKE_IOC_\w+) .*struct (\w+)", h)
        if not m:
            fail("device: %s: IOCTLS entry %r names no command and structure" % (MAN4, h))
            continue
        name, struct = m.groups()
        seen[name] = seen.get(name, 0) + 1
        if name not in ioctls:
            fail("device: %s documents %s, which uapi/linux/snowflake.h does not define" % (MAN4, name))
            continue
        if struct != ioctls[name][0]:
            fail("device: %s gives %s struct %s; the header struct %s" % (MAN4, name, struct, ioctls[name][0]))
        if ("privileged" in h) != ioctls[name][1]:
            fail("device: %s: %s is %s; its entry %s" % (MAN4, name, "a _IOW command (privileged)" if ioctls[name][1]
                                                       else "not privileged", "does not say so" if ioctls[name][1] else "says privileged"))
    for name in ioctls:
        n += 1
        if seen.get(name, 0) != 1:
            fail("device: %s has %d IOCTLS entries for %s (one wanted)" % (MAN4, seen.get(name, 0), name))
        elif bad == n0:
            ok("device: ioctl %s in snowflake(4) IOCTLS, struct %s%s" % (name, ioctls[name][0],
                                                                       ", privileged" if ioctls[name][1] else ""))
    # MODULE PARAMETERS: name=default, as the driver has them.
    got = {}
    for h in tp_heads(man_section(man, "MODULE PARAMETERS")):
        h = re.sub(r"\\f[BIRP]|\"|^\.B[IR]* ", "", h).replace("\\-", "-")
        for name, v in re.findall(r"([a-z_]+)= *(-?\d+)", h):
            n += 1
            if name in got:
                fail("device: %s gives the parameter %s twice" % (MAN4, name))
            got[name] = v
    for name, v in got.items():
        if name not in params:
            fail("device: %s's MODULE PARAMETERS names %s, which is not a parameter of driver/snowflake_main.c" % (MAN4, name))
        elif v != params[name]:
            fail("device: %s gives %s=%s as the default; the driver's is %s" % (MAN4, name, v, params[name]))
    for name in params:
        n += 1
        if name not in got:
            fail("device: the module parameter %s is not in %s's MODULE PARAMETERS" % (name, MAN4))
        elif got[name] == params[name]:
            ok("device: parameter %s=%s in snowflake(4) MODULE PARAMETERS" % (name, params[name]))
    # ERRORS: what the driver returns, and nothing else.
    src = "".join(read(os.path.relpath(f, root)) for f in sorted(glob.glob(os.path.join(root, "driver", "*.[ch]"))))
    errs = set(re.findall(r"-(E[A-Z0-9]{3,})\b", src))
    if "ERESTARTSYS" in errs:
        errs = (errs - {"ERESTARTSYS"}) | {"EINTR"}
    if "nonseekable_open(" in src:
        errs.add("ESPIPE")
    listed = [re.sub(r"^\.B[IR]* ", "", h).split()[0] for h in tp_heads(man_section(man, "ERRORS"))]
    for e in sorted(set(listed) | errs):
        n += 1
        if e not in listed:
            fail("device: the driver returns %s; %s's ERRORS does not list it" % (e, MAN4))
        elif e not in errs:
            fail("device: %s's ERRORS lists %s, which the driver never returns" % (MAN4, e))
        elif listed.count(e) > 1:
            fail("device: %s's ERRORS lists %s %d times" % (MAN4, e, listed.count(e)))
        else:
            ok("device: errno %s in snowflake(4) ERRORS" % e)
    # docs/ABI: one What: per attribute, its mode.
    abi = read(ABI)
    entries = re.findall(r"^What:\s*/sys/class/misc/(\S+)\n(?:[A-Za-z]+:.*\n)*?Description:\s*\n\s*\((R[OW])\)", abi, re.M)
    whats = re.findall(r"^What:\s*/sys/class/misc/(\S+)", abi, re.M)
    modes = dict(entries)
    for path in whats:
        n += 1
        if whats.count(path) > 1:
            fail("device: %s has %d entries for %s" % (ABI, whats.count(path), path))
        if path not in sysfs:
            fail("device: %s documents %s, which driver/ does not define" % (ABI, path))
        elif path not in modes:
            fail("device: %s: the description of %s does not begin with (RO) or (RW)" % (ABI, path))
        elif modes[path] != sysfs[path]:
            fail("device: %s says %s is (%s); driver/ makes it %s" % (ABI, path, modes[path], sysfs[path]))
        elif whats.count(path) == 1:
            ok("device: sysfs %s (%s) in docs/ABI" % (path, sysfs[path]))
    for path in sysfs:
        n += 1
        if path not in whats:
            fail("device: the sysfs file /sys/class/misc/%s is not in %s" % (path, ABI))
    # No second home: a table (Markdown) or a list of .TP entries (a manual
    # page's section) with two or more rows or entries naming the device's
    # ioctls, parameters or sysfs files, outside the homes.  (One row alone
    # is a name that happens to be one: the event `fenced`.)
    files = {p.split("/", 1)[1] for p in sysfs} | {p.rsplit("/", 1)[1] for p in sysfs}

    def kind(word, header=""):
        word = word.strip("`*\\ ")
        if word in ioctls:
            return "ioctls", MAN4 + " (IOCTLS)"
        if word in params and (word not in files or "parameter" in header.lower() or word.endswith("=")):
            return "module parameters", MAN4 + " (MODULE PARAMETERS)"
        if word in files:
            return "sysfs files", ABI
        return None

    def report(where, rows):
        kinds = {}
        for k, word in rows:
            kinds.setdefault(k, []).append(word)
        for k, words in kinds.items():
            if len(words) >= 2:
                fail("device: %s: a list of %d of the device's %s (%s): their home is %s"
                     % (where, len(words), k[0], ", ".join(words[:3]) + (", ..." if len(words) > 3 else ""), k[1]))
    for rel in MDS:
        inb, table, header, first = False, [], "", 0
        lines = read(rel).split("\n") + [""]
        for ln, line in enumerate(lines, 1):
            if line.startswith("```"):
                inb = not inb
            if inb or not line.startswith("|"):
                if table:
                    report("%s:%d-%d" % (rel, first, ln - 1), table)
                table, header = [], ""
                continue
            cell = line.strip("|").split("|", 1)[0]
            if not table and not header:
                header, first = cell, ln
            words = re.findall(r"`([^`]+)`", cell)
            n += 1
            k = kind(words[0], header) if words else None
            if k:
                table.append((k, words[0]))
    for rel in MANS:
        text = read(rel)
        for title, body in re.findall(r"^\.SH ([^\n]*)\n(.*?)(?=^\.SH |\Z)", text, re.M | re.S):
            title = title.strip('"')
            if rel == MAN4 and title in ("IOCTLS", "MODULE PARAMETERS"):
                continue
            rows = []
            for h in tp_heads(body):
                h = re.sub(r"\\f[BIRP]|^\.[A-Z]+ ", "", h).lstrip('"')
                m = re.match(r"([A-Za-z_/]+=?)", h)
                n += 1
                k = kind(m.group(1)) if m else None
                if k:
                    rows.append((k, m.group(1)))
            report("%s, %s" % (rel, title), rows)
    if bad == n0:
        ok("device: %d ioctls and %d module parameters in snowflake(4), %d sysfs files in docs/ABI, "
           "%d errnos, and no second home (%d rows and entries read)" % (len(ioctls), len(params), len(sysfs), len(errs), n))


CHECKS = {"links": check_links, "make": check_make, "agent": check_agent,
          "agent-defaults": check_agent_defaults, "agent-descriptions": check_agent_descriptions,
          "numbers": check_numbers, "templates": check_templates, "fuzz": check_fuzz,
          "sections": check_sections, "signals": check_signals, "mysql8": check_mysql8, "root": check_root, "modprobe": check_modprobe, "stores": check_stores, "debs": check_debs, "upgrade": check_upgrade, "lookup": check_lookup,
          "lanes": check_lanes, "device": check_device}
if __name__ == "__main__":   # tests/docs/shipped.py imports the helpers
    for name in args or list(CHECKS):
        if name not in CHECKS:
            sys.exit("doccheck.py: no check %s (%s)" % (name, " ".join(CHECKS)))
        CHECKS[name]()
    sys.exit(1 if bad else 0)
