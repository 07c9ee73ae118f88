// SPDX-License-Identifier: LGPL-2.1-or-later
// scripts/clients-test.sh: IDS_FILE (the recorded IDs, decimal), the stream
// in $SNOWFLAKE_DEVICE, DECODED (the CLI's `decode --json` of them).
'use strict';
const fs = require('fs');
const { Snowflake, decode, describe } = require('./snowflake');

let n = 0;
const check = (ok, what) => console.log(`${ok ? 'ok' : 'not ok'} ${++n} ${what}`);
const want = fs.readFileSync(process.env.IDS_FILE, 'utf8').trim().split('\n').map(BigInt);
const sf = new Snowflake();
const got = sf.next(want.length);
sf.close();
check(got.length === want.length && got.every((v, i) => typeof v === 'bigint' && v === want[i]),
  `node: ${want.length} IDs read as recorded (BigInt), across short reads`);
// Two IDs one apart differ as BigInts; as Numbers they would not.
check(want[0] + 1n !== want[0] && Number(want[0] + 1n) === Number(want[0]),
  'node: Number would merge neighbouring IDs, BigInt keeps them apart');
const cli = fs.readFileSync(process.env.DECODED, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
check(cli.every((c) => {
  const m = decode(c.id);
  return m.id === c.id && m.timestamp === BigInt(c.timestamp) && m.unix_ms === BigInt(c.unix_ms) &&
    m.datacenter === c.datacenter && m.worker === c.worker && m.sequence === c.sequence;
}), 'node: decode agrees with snowflake decode --json');
check(describe('ENOTCONN').includes('ENOTCONN'), 'node: ENOTCONN is reported as refused (strict or fenced)');
