<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
// scripts/clients-test.sh: IDS_FILE (the recorded IDs, decimal), the stream
// in $SNOWFLAKE_DEVICE, DECODED (the CLI's `decode --json` of them).
require __DIR__ . '/Snowflake.php';

$n = 0;
function check(bool $ok, string $what): void
{
    global $n;
    $n++;
    echo ($ok ? 'ok' : 'not ok') . " $n $what\n";
}

$want = array_map('intval', file(getenv('IDS_FILE'), FILE_IGNORE_NEW_LINES));
$sf = new Snowflake\Reader();
$got = $sf->next(count($want));
$sf->close();
check($got === $want, 'php: ' . count($want) . ' IDs read as recorded, across short reads');
$ok = true;
foreach (file(getenv('DECODED'), FILE_IGNORE_NEW_LINES) as $line) {
    $c = json_decode($line, true, 512, JSON_BIGINT_AS_STRING);
    $m = Snowflake\decode((int)$c['id']);
    foreach (['id', 'timestamp', 'unix_ms', 'datacenter', 'worker', 'sequence'] as $k) {
        $ok = $ok && (string)$m[$k] === (string)$c[$k];
    }
}
check($ok, 'php: decode agrees with snowflake decode --json');
check(str_contains(Snowflake\describe('Transport endpoint is not connected'), 'ENOTCONN'),
    'php: ENOTCONN is reported as refused (strict or fenced)');
