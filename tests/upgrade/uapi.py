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
direction, magic, number and structure.  Every other macro an older
header defined (flags, STATE_* bits, limits, device names, NO_DEADLINE:
all of them, not only one form) is still defined with the same value,
evaluated by the compiler; a *_FLAGS_ALL may only gain bits, an ioctl
(any macro whose value has the magic in its type field) keeps its
direction, type and number and its size does not shrink; a function-like
macro keeps its text.  Exit 1 on any difference.

uapi.py --self-test ROOT: today's header against itself with one change
planted at a time (a STATE_* bit, a device name, an ioctl written in
another form with another number, NO_DEADLINE, a flag removed from
*_FLAGS_ALL): each must be found (issue 42, finding 5)."""
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


def macros(text):
    """{name: ('u', int) | ('s', str) | ('f', text)}: every macro the header
    defines (but its include guard), its value as the compiler computes it."""
    names, funcs = [], {}
    for m in re.finditer(r'^#define\s+(\w+)(\(?)(.*(?:\\\n.*)*)', text, re.M):
        name, paren, body = m.groups()
        if name.startswith('_UAPI_'):
            continue
        if paren:
            funcs[name] = ('f', ' '.join(body.replace('\\\n', ' ').split()))
        else:
            names.append(name)
    res = dict(funcs)
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f'{d}/linux')
        with open(f'{d}/linux/snowflake.h', 'w') as f:
            f.write(text)
        with open(f'{d}/t.c', 'w') as f:
            f.write('#include <stdio.h>\n#include <linux/ioctl.h>\n#include <linux/snowflake.h>\n'
                    'static void pu(const char *n, unsigned long long v) { printf("%s u %llu\\n", n, v); }\n'
                    'static void ps(const char *n, const char *v) { printf("%s s %s\\n", n, v); }\n'
                    '#define P(x) _Generic((x), char *: ps, const char *: ps, default: pu)(#x, x)\n'
                    'int main(void)\n{\n')
            for n in names:
                f.write(f'\tP({n});\n')
            f.write('\treturn 0;\n}\n')
        subprocess.run(['gcc', '-I', d, '-o', f'{d}/t', f'{d}/t.c'], check=True)
        out = subprocess.run([f'{d}/t'], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        n, kind, val = line.split(' ', 2)
        res[n] = (kind, int(val) if kind == 'u' else val)
    return res


def compare_macros(old_m, new_m, magic):
    """The differences of the macros an older header defined, in today's."""
    errs = []
    for n, (kind, val) in sorted(old_m.items()):
        nv = new_m.get(n)
        if nv is None:
            errs.append(f'{n} removed')
        elif nv[0] != kind:
            errs.append(f'{n} {val!r} -> {nv[1]!r} (another kind)')
        elif kind == 'u' and magic is not None and (val >> 8) & 0xff == magic and n.startswith('SNOWFLAKE_IOC_') \
                and n != 'SNOWFLAKE_IOC_MAGIC':
            # _IOC: nr bits 0-7, type 8-15, size 16-29, dir 30-31.
            if (val & 0xc000ffff) != (nv[1] & 0xc000ffff) or (nv[1] >> 16) & 0x3fff < (val >> 16) & 0x3fff:
                errs.append(f'{n} {val:#x} -> {nv[1]:#x} (direction, type, number or a smaller size)')
        elif kind == 'u' and n.endswith('_FLAGS_ALL'):
            if val & ~nv[1]:
                errs.append(f'{n} {val:#x} -> {nv[1]:#x} (lost bits {val & ~nv[1]:#x})')
        elif nv[1] != val:
            errs.append(f'{n} {val!r} -> {nv[1]!r}')
    return errs


if len(sys.argv) > 2 and sys.argv[1] == '--self-test':
    root = sys.argv[2]
    today = open(os.path.join(root, HDR)).read()
    base = macros(today)
    magic = base['SNOWFLAKE_IOC_MAGIC'][1]
    plants = [
        ('a STATE_* bit', r'(#define SNOWFLAKE_STATE_LOCKED\s+)0x8U', r'\g<1>0x100U'),
        ('a device name', r'(#define SNOWFLAKE_UUID_DEVICE_NAME\s+)"uuidv7"', r'\1"uuid7"'),
        ('an ioctl in another form, another number',
         r'(#define SNOWFLAKE_IOC_GET_FENCE\s+)_IOR\(SNOWFLAKE_IOC_MAGIC, 0x07, struct snowflake_fence\)',
         r'\1_IOC(_IOC_READ, SNOWFLAKE_IOC_MAGIC, 0x08, sizeof(struct snowflake_fence))'),
        ('NO_DEADLINE', r'(#define SNOWFLAKE_NO_DEADLINE\s+)\(~0ULL\)', r'\1(~1ULL)'),
        ('a flag gone from *_FLAGS_ALL', r'(#define SNOWFLAKE_FENCE_FLAGS_ALL\s+)SNOWFLAKE_FENCE_ON', r'\g<1>0U'),
        ('CONFIG_RANDOM_SEQUENCE', r'(#define SNOWFLAKE_CONFIG_RANDOM_SEQUENCE\s+)0x1U', r'\g<1>0x2U'),
    ]
    bad = 0
    same = compare_macros(base, base, magic)
    print(f'{"ok" if not same else "not ok"} 1 today against itself: {len(base)} macros, no difference {same}')
    bad += bool(same)
    for i, (what, pat, rep) in enumerate(plants, 2):
        text, k = re.subn(pat, rep, today)
        errs = compare_macros(base, macros(text), magic) if k == 1 else []
        print(f'{"ok" if errs else "not ok"} {i} {what} changed is found: {errs if k == 1 else "pattern not in the header"}')
        bad += not errs
    sys.exit(1 if bad else 0)

today = open(os.path.join(root, HDR)).read()
new, new_defs, new_ioc, new_magic = layout(today)
new_macros = macros(today)
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
    old_macros = macros(text)
    errs += compare_macros(old_macros, new_macros, new_macros.get('SNOWFLAKE_IOC_MAGIC', ('u', None))[1])
    sizes = ' '.join(f'{s.replace("snowflake_", "")}={old[s][0]}' for s in sorted(old))
    print(f'# release {v} ({git("rev-parse", "--short", last[v]).strip()}): {len(old)} structs ({sizes}), '
          f'{len(old_defs)} SIZE_VERs, {len(old_ioc)} ioctls, {len(old_macros)} macros: {"kept" if not errs else "CHANGED"}')
    for e in errs:
        print(f'#   {e}')
    bad += len(errs)
print('# today: ' + ' '.join(f'{s.replace("snowflake_", "")}={new[s][0]}' for s in sorted(new)))
sys.exit(1 if bad else 0)
