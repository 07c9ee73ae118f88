// SPDX-License-Identifier: GPL-2.0
// node_bench.js: the Node.js peer of `make bench` (issue 14), run in the
// guest by bench/init-bench.sh: /dev/snowflake read with fs.readSync (one ID
// and 4096 per read) against @sapphire/snowflake's generate() (the most used
// npm snowflake package), one process, every request timed with
// process.hrtime.bigint() (the same method for all three).  Prints
//   BENCH node peer=NAME batch=N requests=.. ids=.. seconds=.. ids_per_s=.. p50_ns=.. p99_ns=.. not_increasing=..
// usage: node node_bench.js SECONDS ROUNDS
'use strict';
const fs = require('fs');
const { Snowflake } = require('@sapphire/snowflake');

const seconds = parseFloat(process.argv[2] || '1') || 1;
const rounds = parseInt(process.argv[3] || '3', 10) || 3;
const MAX_SAMPLES = 1 << 20;
const lat = new Float64Array(MAX_SAMPLES);

function run(name, batch, next, strict = true) {
  // Warm up (the JIT), unmeasured: a fifth of a point.
  const warm = process.hrtime.bigint() + BigInt(Math.round(seconds * 0.2e9));
  while (process.hrtime.bigint() < warm) next();
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const t0 = process.hrtime.bigint();
  let t = t0, n = 0, ids = 0, reqs = 0, bad = 0, last = -1n;
  do {
    const got = next();
    const t1 = process.hrtime.bigint();
    if (got.first <= last) {
      // The device never; @sapphire/snowflake wraps its 12-bit increment
      // past 4096 IDs in one ms (no wait): counted and reported.
      if (strict) throw new Error(name + ': not increasing');
      bad++;
    }
    last = got.first + BigInt(got.count - 1);
    if (n < MAX_SAMPLES) lat[n++] = Number(t1 - t);
    reqs++;
    ids += got.count;
    t = t1;
  } while (t < end);
  const ns = Number(t - t0);
  const s = lat.subarray(0, n).sort();
  const pct = (p) => s[Math.min(n, Math.max(1, Math.ceil(p / 100 * n))) - 1];
  console.log(`BENCH node peer=${name} batch=${batch} requests=${reqs} ids=${ids} ` +
    `seconds=${(ns / 1e9).toFixed(4)} ids_per_s=${Math.round(ids * 1e9 / ns)} ` +
    `p50_ns=${pct(50)} p99_ns=${pct(99)} not_increasing=${bad}`);
}

const fd = fs.openSync('/dev/snowflake', 'r');
const one = Buffer.alloc(8);
const many = Buffer.alloc(4096 * 8);
const sf = new Snowflake(1288834974657n);

console.log(`BENCH node_env node=${process.version} sapphire=${JSON.parse(fs.readFileSync(require.resolve('@sapphire/snowflake').replace(/dist.*/, 'package.json'))).version}`);
for (let r = 1; r <= rounds; r++) {
  console.log(`BENCH round i=${r}`);
  run('node_dev_readsync', 1, () => {
    if (fs.readSync(fd, one, 0, 8, null) !== 8) throw new Error('short read');
    return { first: one.readBigUInt64LE(0), count: 1 };
  });
  run('node_dev_readsync', 4096, () => {
    const got = fs.readSync(fd, many, 0, many.length, null);
    if (got < 8) throw new Error('short read');
    return { first: many.readBigUInt64LE(0), count: got / 8 };
  });
  run('node_sapphire', 1, () => ({ first: sf.generate(), count: 1 }), false);
}
console.log('BENCH node_done');
