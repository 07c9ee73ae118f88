#!/usr/bin/env python3
"""tests/deb/autopkgtest.py [--machine] CONTROL: the tests of an autopkgtest
control file (debian/tests/control, deb822 stanzas), one a line:
"NAME<TAB>RESTRICTIONS<TAB>DEPENDS" (comma-separated lists, Depends' "@"
as it is).  --machine: only the names of those that need the machine
(Restrictions: isolation-machine; the upgrade lane's guest runs them),
otherwise only the others (tests/deb/autopkgtest.sh runs them in the deb
lane's root).  A stanza without Tests: (Test-Command: is not supported) or
an unknown restriction is an error: exit 1 with the stanza's line."""
import re
import sys

KNOWN = {'allow-stderr', 'superficial', 'needs-root', 'isolation-machine', 'isolation-container',
         'breaks-testbed', 'flaky', 'skippable', 'rw-build-tree', 'needs-internet'}
machine = sys.argv[1] == '--machine'
path = sys.argv[-1]
text = open(path).read()
stanzas, cur, line_of = [], {}, {}
for n, line in enumerate(text.splitlines() + [''], 1):
    if line.startswith('#'):
        continue
    if not line.strip():
        if cur:
            stanzas.append(cur)
            cur = {}
        continue
    if line[0] in ' \t' and cur:
        cur[key] += ' ' + line.strip()
        continue
    m = re.match(r'^([A-Za-z-]+):\s*(.*)$', line)
    if not m:
        sys.exit(f'{path}:{n}: not a field: {line}')
    key = m.group(1).lower()
    cur[key] = m.group(2)
    cur.setdefault('_line', n)
for st in stanzas:
    if 'tests' not in st:
        sys.exit(f'{path}:{st["_line"]}: a stanza without Tests:')
    restr = [r for r in re.split(r'[\s,]+', st.get('restrictions', '')) if r]
    bad = [r for r in restr if r not in KNOWN]
    if bad:
        sys.exit(f'{path}:{st["_line"]}: unknown restriction {" ".join(bad)}')
    deps = ','.join(d.strip() for d in st.get('depends', '@').split(',') if d.strip())
    for name in re.split(r'[\s,]+', st['tests'].strip()):
        if ('isolation-machine' in restr) != machine:
            continue
        print(name if machine else f'{name}\t{",".join(restr)}\t{deps}')
