// SPDX-License-Identifier: LGPL-2.1-or-later
// node --test tests of snowflake-device, run by tests/clients/run.sh on
// the package installed with npm into a scratch project.  The recorded
// streams come from the environment: SNOWFLAKE_DEVICE and
// SNOWFLAKE_UUID_DEVICE (a file, or a FIFO written in 13-byte pieces),
// IDS_FILE and UUIDS_FILE (what they hold), DECODED, DECODED_CUSTOM and
// UUIDS_DECODED (`snowflake decode --json` of some of them), CUSTOM_BITS,
// CUSTOM_EPOCH, CUSTOM_UNIT (the custom layout).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const sf = require('snowflake-device');

const lines = (v) => fs.readFileSync(process.env[v], 'utf8').split('\n').filter((l) => l);
// The CLI's JSON with its numbers as BigInt (JSON.parse would round them).
const cliParts = (l) => {
  const c = JSON.parse(l);
  for (const k of ['unix_ms', 'timestamp'])
    c[k] = BigInt(new RegExp(`"${k}":(\\d+)`).exec(l)[1]);
  return c;
};
const customLayout = () => {
  const [t, d, w, s] = process.env.CUSTOM_BITS.split('/').map(Number);
  return { epoch_ms: BigInt(process.env.CUSTOM_EPOCH), time_unit_ms: BigInt(process.env.CUSTOM_UNIT),
    timestamp_bits: t, datacenter_bits: d, worker_bits: w, sequence_bits: s };
};
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'snowflake-device-'));

test('reads the recorded IDs across short reads, as BigInt', () => {
  const want = lines('IDS_FILE').map(BigInt);
  const dev = new sf.Snowflake();
  const got = dev.next(want.length);
  dev.close();
  assert.equal(got.length, want.length);
  assert.ok(got.every((v) => typeof v === 'bigint'));
  assert.deepEqual(got, want);
});

test('reads the recorded UUIDv7s across short reads', () => {
  const want = lines('UUIDS_FILE');
  const dev = new sf.UUIDv7();
  const got = dev.next(want.length);
  dev.close();
  assert.deepEqual(got, want);
});

test('Number would merge neighbouring IDs, BigInt keeps them apart', () => {
  const id = BigInt(lines('IDS_FILE')[0]);
  assert.notEqual(id + 1n, id);
  assert.equal(Number(id + 1n), Number(id));
  assert.throws(() => sf.decode(Number(id)), /not exact as a Number/);
  assert.equal(sf.toJSONIds([id, id + 1n]), `["${id}","${id + 1n}"]`);
});

test('decode agrees with snowflake decode --json', () => {
  const cli = lines('DECODED');
  assert.ok(cli.length > 1);
  for (const l of cli) {
    const c = cliParts(l);
    assert.deepEqual({ ...sf.decode(c.id) }, c);
    assert.deepEqual({ ...sf.decode(BigInt(c.id)) }, c);
    // As JSON: the same text as the CLI's (the ID a string, numbers exact).
    assert.equal(JSON.stringify(sf.decode(c.id)), l);
  }
});

test('decode with another layout agrees with the CLI', () => {
  const cli = lines('DECODED_CUSTOM');
  assert.ok(cli.length > 1);
  for (const l of cli) {
    const c = cliParts(l);
    assert.deepEqual({ ...sf.decode(c.id, customLayout()) }, c);
  }
});

test('decodeUUID agrees with snowflake decode --json', () => {
  const cli = lines('UUIDS_DECODED');
  assert.ok(cli.length > 1);
  for (const l of cli) {
    const c = JSON.parse(l);
    assert.deepEqual(sf.decodeUUID(c.uuid), c);
    assert.deepEqual(sf.decodeUUID(Buffer.from(c.uuid.replace(/-/g, ''), 'hex')), c);
    assert.equal(JSON.stringify(sf.decodeUUID(c.uuid)), l);
  }
  assert.throws(() => sf.decodeUUID('0189e2b6-1f0e-4c4b-8c2a-3b6f0e2a1d77'), /not a UUIDv7/);
});

test('IDs are unsigned 64-bit', () => {
  const d = tmp();
  const f = path.join(d, 'ids');
  const b = Buffer.alloc(19, 0xff);
  if (os.endianness() === 'LE') b.writeBigUInt64LE(1n << 63n, 8); else b.writeBigUInt64BE(1n << 63n, 8);
  fs.writeFileSync(f, b);
  const dev = new sf.Snowflake(f);
  assert.deepEqual(dev.next(2), [(1n << 64n) - 1n, 1n << 63n]);
  assert.throws(() => dev.next(1), /end of file/);   // 3 bytes are no ID
  dev.close();
  assert.equal(sf.decode((1n << 63n) - 1n).timestamp, (1n << 41n) - 1n);
  assert.throws(() => sf.decode(1n << 63n), /above the 41\/5\/5\/12 layout/);
  assert.throws(() => sf.decode(-1n), /unsigned 64-bit/);
  fs.rmSync(d, { recursive: true });
});

test('no device says so', () => {
  const p = path.join(os.tmpdir(), `no-snowflake-${process.pid}`);
  assert.throws(() => new sf.Snowflake(p), (e) => e instanceof sf.DeviceNotFound &&
    e.code === 'ENOENT' && /is the snowflake module loaded\?/.test(e.message) && e.message.includes(p));
  assert.throws(() => new sf.UUIDv7(p), sf.DeviceNotFound);
});

test('no permission says so', (t) => {
  const d = tmp();
  const f = path.join(d, 'snowflake');
  fs.writeFileSync(f, Buffer.alloc(8));
  fs.chmodSync(f, 0);
  let readable = true;
  try { fs.accessSync(f, fs.constants.R_OK); } catch { readable = false; }
  if (readable) {
    t.skip('this process reads a mode-000 file (CAP_DAC_OVERRIDE): ' +
      'tests/clients/run.sh runs the tests without it');
  } else {
    assert.throws(() => new sf.Snowflake(f), (e) => e instanceof sf.Denied &&
      e.code === 'EACCES' && /group snowflake/.test(e.message));
  }
  fs.rmSync(d, { recursive: true });
});

test('ENOTCONN is refused, and says why', async () => {
  // read(2) of a listening socket fails with ENOTCONN, as a read of the
  // device does while it refuses IDs.  (The fd of a listening server:
  // Node's TCP handle exposes it on Unix.)
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const fd = server._handle.fd;
    assert.ok(Number.isInteger(fd) && fd > 2, `the server's fd: ${fd}`);
    assert.throws(() => new sf.Snowflake({ fd }).next(), (e) => e instanceof sf.Refused &&
      e instanceof sf.SnowflakeError && e.code === 'ENOTCONN' &&
      /strict mode/.test(e.message) && /fenced by snowflake-agent/.test(e.message));
  } finally {
    server.close();
  }
});

// Issue 24: any character device opened as the generator (/dev/hwrng gave
// random numbers).  /dev/null, and FOREIGN_DEVICE: a node for a misc device
// that is not ours (fuse), made by clients-test.sh with mknod.
test('refuses a character device that is not the generator', () => {
  const foreign = process.env.FOREIGN_DEVICE;
  for (const Cls of [sf.Snowflake, sf.UUIDv7]) {
    for (const p of ['/dev/null', foreign]) {
      assert.throws(() => new Cls(p), (e) => e instanceof sf.NotSnowflakeDevice &&
        e.code === 'ENOTTY' && /not a snowflake device/.test(e.message));
    }
  }
  // A sysfs that names the node: each reader takes only its own device.
  const root = tmp();
  fs.mkdirSync(path.join(root, 'dev', 'char'), { recursive: true });
  const link = path.join(root, 'dev', 'char', process.env.FOREIGN_DEVNUM);
  sf.setSysfsRoot(root);
  try {
    for (const [name, Good, Other] of [['snowflake', sf.Snowflake, sf.UUIDv7],
      ['uuidv7', sf.UUIDv7, sf.Snowflake]]) {
      fs.rmSync(link, { force: true });
      fs.symlinkSync(`../../devices/virtual/misc/${name}`, link);
      new Good(foreign).close();
      assert.throws(() => new Other(foreign), sf.NotSnowflakeDevice);
    }
  } finally {
    sf.setSysfsRoot('/sys');
    fs.rmSync(root, { recursive: true, force: true });
  }
});
