// SPDX-License-Identifier: LGPL-2.1-or-later
// Read and decode the IDs of /dev/snowflake and the UUIDs of /dev/uuidv7.
// IDs are BigInt, never Number: a Number holds integers exactly only up to
// 2^53 and IDs are about 2^62, so two different IDs would become one Number
// (the duplicates of npm snowflake packages that parse IDs into Numbers).
// Send them to JSON as strings: toJSONIds(), or decode(id).toJSON().
//
//   const { Snowflake, decode } = require('snowflake-device');
//   const sf = new Snowflake();          // $SNOWFLAKE_DEVICE, else /dev/snowflake
//   const ids = sf.next(16);             // 16 BigInts, strictly increasing
//   decode(ids[0]);                      // { id: '...', unix_ms: 1795...n, worker: 3, ... }
'use strict';
const fs = require('fs');
const os = require('os');

const DEFAULT_PATH = '/dev/snowflake';
const DEFAULT_UUID_PATH = '/dev/uuidv7';
// 41/5/5/12 from Twitter's epoch, in milliseconds: the module's default
// (`snowflake config` shows the device's).
const DEFAULT_LAYOUT = Object.freeze({
  epoch_ms: 1288834974657n, time_unit_ms: 1n,
  timestamp_bits: 41, datacenter_bits: 5, worker_bits: 5, sequence_bits: 12,
});
const MAX_TIME_MS = 253402300799999n;   // 9999-12-31T23:59:59.999Z
const U64 = 1n << 64n;

function describe(code, path = DEFAULT_PATH) {
  switch (code) {
    case 'ENOTCONN':
      return `${path} refuses IDs (ENOTCONN): strict mode and no worker id yet, or fenced ` +
        'by snowflake-agent (lease lost or expired, or the VM was cloned); ' +
        'see `snowflake config`; /dev/uuidv7 keeps serving';
    case 'ENOENT': case 'ENODEV': case 'ENXIO':
      return `${path}: no such device (${code}): is the snowflake module loaded? ` +
        `(\`modprobe snowflake\`; in a container: --device ${path})`;
    case 'ENOTTY':
      return `${path}: not a snowflake device (ENOTTY): a character device that is not ` +
        'the generator (see its /sys/dev/char entry)';
    case 'EACCES': case 'EPERM':
      return `${path}: permission denied (${code}): reading needs the group snowflake ` +
        '(`usermod -aG snowflake USER`, SupplementaryGroups=snowflake in a unit, ' +
        '--group-add in a container)';
    default:
      return `${path}: ${code}`;
  }
}

class SnowflakeError extends Error {
  constructor(code, path, cause) {
    super(describe(code, path), cause ? { cause } : undefined);
    this.name = this.constructor.name;
    this.code = code;
    this.path = path;
  }
}
/** No such device: the module is not loaded (ENOENT, ENODEV, ENXIO). */
class DeviceNotFound extends SnowflakeError {}
/** Not in the group that reads the device (EACCES, EPERM). */
class Denied extends SnowflakeError {}
/** ENOTCONN: strict mode without a worker id, or fenced by snowflake-agent. */
class Refused extends SnowflakeError {}
/** ENOTTY: a character device that is not the generator (/dev/hwrng, /dev/null). */
class NotSnowflakeDevice extends SnowflakeError {}

// Where the kernel names the devices (/sys/dev/char/MAJ:MIN -> .../misc/NAME);
// the tests point it at a fake tree (setSysfsRoot).
let sysfsRoot = '/sys';

// A character device must be the misc device called name ('snowflake' or
// 'uuidv7'); other files (a recording, a FIFO) are read as they are.
// Without sysfs a device cannot be identified and is refused.
function identify(fd, path, name) {
  const st = fs.fstatSync(fd, { bigint: true });
  if (!st.isCharacterDevice())
    return;
  const r = st.rdev;
  const major = ((r >> 8n) & 0xfffn) | ((r >> 32n) & ~0xfffn);
  const minor = (r & 0xffn) | ((r >> 12n) & ~0xffn);
  let link = '';
  if (major === 10n) {
    try {
      link = fs.readlinkSync(`${sysfsRoot}/dev/char/${major}:${minor}`);
    } catch (e) { /* not known: refused below */ }
  }
  if (!link.endsWith(`/misc/${name}`))
    throw new NotSnowflakeDevice('ENOTTY', path);
}

function toError(e, path) {
  const cls = { ENOTCONN: Refused, ENOENT: DeviceNotFound, ENODEV: DeviceNotFound,
    ENXIO: DeviceNotFound, EACCES: Denied, EPERM: Denied }[e.code];
  return cls ? new cls(e.code, path, e) : new SnowflakeError(e.code || 'EIO', path, e);
}

class Reader {
  constructor(size, env, dflt, name, opts) {
    if (typeof opts === 'string' || opts === undefined || opts === null)
      opts = { path: opts };
    this.size = size;
    this.rest = Buffer.alloc(0);   // a part of a record: from a pipe, never the device
    if (opts.fd !== undefined) {   // a descriptor already open, not closed here
      this.fd = opts.fd;
      this.path = `fd ${opts.fd}`;
      this.own = false;
      return;
    }
    this.path = opts.path || process.env[env] || dflt;
    try {
      this.fd = fs.openSync(this.path, 'r');   // libuv adds O_CLOEXEC
    } catch (e) {
      throw toError(e, this.path);
    }
    try {
      identify(this.fd, this.path, name);
    } catch (e) {
      fs.closeSync(this.fd);
      throw e;
    }
    this.own = true;
  }

  // n records: a read may return fewer (the device: the millisecond ran out;
  // a pipe: any number of bytes), so it loops.
  records(n) {
    if (!Number.isInteger(n) || n < 1)
      throw new RangeError('n must be a positive integer');
    const out = [];
    while (out.length < n) {
      const buf = Buffer.alloc(this.size * (n - out.length));
      let got;
      try {
        got = fs.readSync(this.fd, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code === 'EINTR')   // a signal (libuv retries too)
          continue;
        throw toError(e, this.path);
      }
      if (got === 0)
        throw new Error(`end of file: no more records in ${this.path}`);
      const data = Buffer.concat([this.rest, buf.subarray(0, got)]);
      const whole = data.length - (data.length % this.size);
      for (let i = 0; i < whole; i += this.size)
        out.push(this.record(data, i));
      this.rest = Buffer.from(data.subarray(whole));
    }
    return out;
  }

  close() {
    if (this.own && this.fd >= 0)
      fs.closeSync(this.fd);
    this.fd = -1;
  }
}

/** IDs of /dev/snowflake ($SNOWFLAKE_DEVICE), as BigInts. */
class Snowflake extends Reader {
  constructor(opts) { super(8, 'SNOWFLAKE_DEVICE', DEFAULT_PATH, 'snowflake', opts); }
  /** n IDs (BigInt), strictly increasing. */
  next(n = 1) { return this.records(n); }
  record(data, i) {
    return os.endianness() === 'LE' ? data.readBigUInt64LE(i) : data.readBigUInt64BE(i);
  }
}

function formatUUID(b) {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** UUIDv7s of /dev/uuidv7 ($SNOWFLAKE_UUID_DEVICE), in the canonical form. */
class UUIDv7 extends Reader {
  constructor(opts) { super(16, 'SNOWFLAKE_UUID_DEVICE', DEFAULT_UUID_PATH, 'uuidv7', opts); }
  /** n UUIDv7s (strings), strictly increasing. */
  next(n = 1) { return this.records(n); }
  record(data, i) { return formatUUID(data.subarray(i, i + 16)); }
}

function isoTime(unixMs) {
  return unixMs >= 0n && unixMs <= MAX_TIME_MS ? new Date(Number(unixMs)).toISOString() : null;
}

function toBigInt(id) {
  if (typeof id === 'number' && !Number.isSafeInteger(id))
    throw new TypeError(`${id} is not exact as a Number: pass IDs as BigInt or string`);
  const v = BigInt(id);
  if (v < 0n || v >= U64)
    throw new RangeError(`${v} is not an unsigned 64-bit ID`);
  return v;
}

// JSON: the ID as a string; a number as a Number while it is exact, else a string.
function jsonNumber(v) {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

/**
 * Split an ID (BigInt, decimal string, or a safe-integer Number) with a
 * layout (the device's: `snowflake config`): the fields of `snowflake
 * decode --json`.  RangeError for an ID with bits above the layout.
 */
function decode(id, layout = DEFAULT_LAYOUT) {
  const v = toBigInt(id);
  const s = BigInt(layout.sequence_bits), w = BigInt(layout.worker_bits);
  const d = BigInt(layout.datacenter_bits), t = BigInt(layout.timestamp_bits);
  const mask = (b) => (1n << b) - 1n;
  if (v >> (t + d + w + s))
    throw new RangeError(`${v} has bits set above the ${layout.timestamp_bits}/` +
      `${layout.datacenter_bits}/${layout.worker_bits}/${layout.sequence_bits} layout`);
  const timestamp = v >> (s + w + d);
  const unixMs = BigInt(layout.epoch_ms) + timestamp * BigInt(layout.time_unit_ms);
  const parts = {
    id: v.toString(),
    time: isoTime(unixMs),
    unix_ms: unixMs,
    timestamp,
    datacenter: Number((v >> (s + w)) & mask(d)),
    worker: Number((v >> s) & mask(w)),
    sequence: Number(v & mask(s)),
  };
  Object.defineProperty(parts, 'toJSON', {
    enumerable: false,
    value() {
      return { ...this, unix_ms: jsonNumber(this.unix_ms), timestamp: jsonNumber(this.timestamp) };
    },
  });
  return parts;
}

/** The time of a UUIDv7 (canonical string or 16 bytes), as `snowflake decode --json`. */
function decodeUUID(u) {
  let b = u;
  if (typeof u === 'string') {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(u))
      throw new TypeError(`${u} is not a UUID`);
    b = Buffer.from(u.replace(/-/g, ''), 'hex');
  }
  if (!Buffer.isBuffer(b) && !(b instanceof Uint8Array))
    throw new TypeError('a UUID is a string or 16 bytes');
  b = Buffer.from(b);
  if (b.length !== 16)
    throw new TypeError('a UUID is a string or 16 bytes');
  const uuid = formatUUID(b);
  if (b[6] >> 4 !== 7 || b[8] >> 6 !== 2)
    throw new RangeError(`${uuid} is not a UUIDv7`);
  const unixMs = b.readUIntBE(0, 6);   // 48 bits: exact as a Number
  return { uuid, version: 7, time: isoTime(BigInt(unixMs)), unix_ms: unixMs };
}

/** IDs as a JSON array of strings, as `snowflake next --format json` prints them. */
function toJSONIds(ids) {
  return JSON.stringify(ids.map((i) => toBigInt(i).toString()));
}

module.exports = {
  DEFAULT_LAYOUT, DEFAULT_PATH, DEFAULT_UUID_PATH, Denied, DeviceNotFound, Refused,
  NotSnowflakeDevice,
  /** For the tests: where sysfs is (default '/sys'). */
  setSysfsRoot(root) { sysfsRoot = root; },
  Snowflake, SnowflakeError, UUIDv7, decode, decodeUUID, describe, toJSONIds,
};
