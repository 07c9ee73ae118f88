#!/usr/bin/env python3
"""tests/upgrade/uapi.py ROOT: the uapi header of every older release
(each version of debian/changelog below VERSION, at the last commit whose
VERSION file said so) against today's uapi/linux/snowflake.h: structures
only grow.

Each header is compiled (gcc -g, one object of each struct) and read back
with pahole: every member of an older structure is still there, at the same
offset, with the same size and type; a structure's size never shrinks and
new members come after the old end.  Every SNOWFLAKE_*_SIZE_VER* an older
header defined is still defined with the same value, and each older
structure's size is one of today's SIZE_VERs of it (the sizes the kernel
documents as accepted: an older binary's ioctl carries its size in the
command, _IOC_SIZE).  Every ioctl an older header defined keeps its
direction, magic, number and structure.  Exit 1 on any difference."""
import os
import re
import subprocess
import sys
import tempfile

root = sys.argv[1]
HDR = 'uapi/linux/snowflake.h'


def git(*args):
    return subprocess.run(['git', '-C', root, *args], capture_output=True, text=True).stdout


def layout(text):
    """{struct: (size, {member: (offset, size, type)})}, {define: value}, {ioctl: (dir, nr, struct)}"""
    structs = sorted(set(re.findall(r'^struct (snowflake_\w+) \{', text, re.M)))
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f'{d}/linux')
        with open(f'{d}/linux/snowflake.h', 'w') as f:
            f.write(text)
        with open(f'{d}/t.c', 'w') as f:
            f.write('#include <linux/snowflake.h>\n')
            for s in structs:
                f.write(f'struct {s} v_{s};\n')
        subprocess.run(['gcc', '-g', '-c', '-I', d, '-o', f'{d}/t.o', f'{d}/t.c'], check=True)
        out = subprocess.run(['pahole', f'{d}/t.o'], capture_output=True, text=True, check=True).stdout
    res, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'^struct (\w+) \{', line)
        if m:
            cur = m.group(1)
            res[cur] = [0, {}]
            continue
        m = re.match(r'^\s+(.+?)\s+(\w+)(\[\d+\])?;\s+/\*\s+(\d+)\s+(\d+)\s+\*/', line)
        if m and cur:
            res[cur][1][m.group(2)] = (int(m.group(4)), int(m.group(5)), m.group(1) + (m.group(3) or ''))
        m = re.search(r'/\* size: (\d+)', line)
        if m and cur:
            res[cur][0] = int(m.group(1))
    defs = dict(re.findall(r'^#define (SNOWFLAKE_\w+_SIZE_VER\d+)\s+(\d+)', text, re.M))
    ioc = {n: (d, nr, s) for n, d, nr, s in re.findall(
        r'^#define (SNOWFLAKE_IOC_\w+)\s+_IO(R|W|WR)\(SNOWFLAKE_IOC_MAGIC,\s*(0x[0-9a-fA-F]+),\s*struct (\w+)\)', text, re.M)}
    magic = re.search(r'^#define SNOWFLAKE_IOC_MAGIC\s+(\S+)', text, re.M)
    return res, defs, ioc, magic.group(1) if magic else None


today = open(os.path.join(root, HDR)).read()
new, new_defs, new_ioc, new_magic = layout(today)
cur_version = open(os.path.join(root, 'VERSION')).read().strip()
versions = re.findall(r'^snowflake \(([^)]+)\)', open(os.path.join(root, 'debian/changelog')).read(), re.M)
last = {}
for c in git('log', '--format=%H', '--', 'VERSION').split():
    before, after = git('show', f'{c}^:VERSION').strip(), git('show', f'{c}:VERSION').strip()
    if before and before != after and before not in last:
        last[before] = c + '^'
bad = 0
for v in versions:
    if v == cur_version:
        continue
    if v not in last:
        print(f'# release {v}: no commit in this clone (a shallow clone?)')
        bad += 1
        continue
    text = git('show', f'{last[v]}:{HDR}')
    if not text:
        print(f'# release {v} ({git("rev-parse", "--short", last[v]).strip()}): no {HDR} yet')
        continue
    old, old_defs, old_ioc, old_magic = layout(text)
    errs = []
    if old_magic != new_magic:
        errs.append(f'SNOWFLAKE_IOC_MAGIC {old_magic} -> {new_magic}')
    for s, (size, members) in old.items():
        if s not in new:
            errs.append(f'struct {s} removed')
            continue
        nsize, nmembers = new[s]
        if nsize < size:
            errs.append(f'struct {s} shrank {size} -> {nsize}')
        for m, lay in members.items():
            if nmembers.get(m) != lay:
                errs.append(f'struct {s}.{m} {lay} -> {nmembers.get(m)}')
        for m, (off, _, _) in nmembers.items():
            if m not in members and off < size:
                errs.append(f'struct {s}.{m} new inside the old {size} bytes (offset {off})')
        tag = s.replace('snowflake_', '').upper()
        vers = {int(val) for d, val in new_defs.items() if d.startswith(f'SNOWFLAKE_{tag}_SIZE_VER')}
        if vers and size not in vers:
            errs.append(f'struct {s}: its old size {size} is none of today\'s SNOWFLAKE_{tag}_SIZE_VER* {sorted(vers)}')
    for d, val in old_defs.items():
        if new_defs.get(d) != val:
            errs.append(f'{d} {val} -> {new_defs.get(d)}')
    for n, spec in old_ioc.items():
        if new_ioc.get(n) != spec:
            errs.append(f'{n} {spec} -> {new_ioc.get(n)}')
    sizes = ' '.join(f'{s.replace("snowflake_", "")}={old[s][0]}' for s in sorted(old))
    print(f'# release {v} ({git("rev-parse", "--short", last[v]).strip()}): {len(old)} structs ({sizes}), '
          f'{len(old_defs)} SIZE_VERs, {len(old_ioc)} ioctls: {"kept" if not errs else "CHANGED"}')
    for e in errs:
        print(f'#   {e}')
    bad += len(errs)
print('# today: ' + ' '.join(f'{s.replace("snowflake_", "")}={new[s][0]}' for s in sorted(new)))
sys.exit(1 if bad else 0)
