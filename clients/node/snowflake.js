// SPDX-License-Identifier: LGPL-2.1-or-later
// Read and decode IDs of /dev/snowflake (docs/clients.md).  IDs are BigInt,
// never Number: a Number loses precision past 2^53, and IDs are ~2^62, so
// two different IDs would compare equal (the duplicates of npm snowflake
// packages that parse IDs into Numbers).
//
//   const { Snowflake, decode } = require('./snowflake');
//   const sf = new Snowflake();
//   const ids = sf.next(16);        // 16 BigInts, increasing
//   decode(ids[0]);                 // { unix_ms: 1795..n, datacenter: 1, ... }
'use strict';
const fs = require('fs');
const os = require('os');

const DEFAULT_PATH = '/dev/snowflake';
const DEFAULT_LAYOUT = {
  epoch_ms: 1288834974657n, time_unit_ms: 1n,
  timestamp_bits: 41n, datacenter_bits: 5n, worker_bits: 5n, sequence_bits: 12n,
};

function describe(code) {
  switch (code) {
    case 'ENOTCONN':
      return 'the device refuses IDs (ENOTCONN): strict mode without a worker id, ' +
        'or fenced by snowflake-agent; see `snowflake config`';
    case 'ENOENT': return 'no /dev/snowflake: is the snowflake module loaded?';
    case 'EACCES': return 'permission denied: add the user to the group snowflake';
    default: return code;
  }
}

class SnowflakeRefused extends Error {
  constructor() { super(describe('ENOTCONN')); this.code = 'ENOTCONN'; }
}

class Snowflake {
  constructor(path) {
    this.path = path || process.env.SNOWFLAKE_DEVICE || DEFAULT_PATH;
    this.fd = fs.openSync(this.path, 'r');
    this.rest = Buffer.alloc(0);   // a part of an ID (from a pipe, never the device)
  }

  // n IDs: a read may return fewer (the millisecond ran out): loop.
  next(n = 1) {
    const out = [];
    while (out.length < n) {
      const buf = Buffer.alloc(8 * (n - out.length));
      let got;
      try {
        got = fs.readSync(this.fd, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
        if (e.code === 'ENOTCONN') throw new SnowflakeRefused();
        e.message = describe(e.code) + ' (' + this.path + ')';
        throw e;
      }
      if (got === 0) throw new Error('end of file: no more IDs in ' + this.path);
      const data = Buffer.concat([this.rest, buf.subarray(0, got)]);
      const whole = data.length - (data.length % 8);
      for (let i = 0; i < whole; i += 8)
        out.push(os.endianness() === 'LE' ? data.readBigUInt64LE(i) : data.readBigUInt64BE(i));
      this.rest = Buffer.from(data.subarray(whole));
    }
    return out;
  }

  close() { fs.closeSync(this.fd); }
}

// Split an ID (a BigInt, or its decimal string) with a layout.
function decode(id, layout = DEFAULT_LAYOUT) {
  id = BigInt(id);
  const mask = (b) => (1n << b) - 1n;
  const { sequence_bits: s, worker_bits: w, datacenter_bits: d } = layout;
  const ts = id >> (s + w + d);
  return {
    id: id.toString(),
    timestamp: ts,
    unix_ms: layout.epoch_ms + ts * layout.time_unit_ms,
    datacenter: Number((id >> (s + w)) & mask(d)),
    worker: Number((id >> s) & mask(w)),
    sequence: Number(id & mask(s)),
  };
}

module.exports = { Snowflake, SnowflakeRefused, decode, describe, DEFAULT_LAYOUT };
