<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
// Read and decode IDs of /dev/snowflake (docs/clients.md).  IDs are PHP
// ints: bit 63 of an ID is 0, so they fit PHP's signed 64-bit int.
//
//   require 'Snowflake.php';
//   $sf = new Snowflake\Reader();
//   $ids = $sf->next(16);             // 16 ints, increasing
//   Snowflake\decode($ids[0]);        // ['unix_ms' => ..., 'worker' => ..., ...]
namespace Snowflake;

const DEFAULT_PATH = '/dev/snowflake';
const DEFAULT_LAYOUT = ['epoch_ms' => 1288834974657, 'time_unit_ms' => 1, 'timestamp_bits' => 41,
    'datacenter_bits' => 5, 'worker_bits' => 5, 'sequence_bits' => 12];

class Refused extends \RuntimeException
{
}

function describe(string $what): string
{
    if (stripos($what, 'not connected') !== false) {
        return 'the device refuses IDs (ENOTCONN): strict mode without a worker id, '
            . 'or fenced by snowflake-agent; see `snowflake config`';
    }
    return $what;
}

class Reader
{
    private $f;
    private string $rest = '';   // a part of an ID (from a pipe, never the device)
    public string $path;

    public function __construct(?string $path = null)
    {
        $this->path = $path ?? (getenv('SNOWFLAKE_DEVICE') ?: DEFAULT_PATH);
        $f = @fopen($this->path, 'rb');
        if ($f === false) {
            throw new \RuntimeException('cannot open ' . $this->path . ': '
                . (error_get_last()['message'] ?? 'unknown error'));
        }
        stream_set_read_buffer($f, 0);   // one read(2) per fread: no read-ahead of IDs
        $this->f = $f;
    }

    /** @return int[] $n IDs: a read may return fewer (the millisecond ran out): loop. */
    public function next(int $n = 1): array
    {
        $out = [];
        while (count($out) < $n) {
            $data = @fread($this->f, 8 * ($n - count($out)));
            if ($data === false || $data === '') {
                $err = error_get_last()['message'] ?? '';
                if (stripos($err, 'not connected') !== false) {
                    throw new Refused(describe($err));
                }
                throw new \RuntimeException($err !== '' ? $err : 'end of file: no more IDs in ' . $this->path);
            }
            $data = $this->rest . $data;
            $whole = intdiv(strlen($data), 8) * 8;
            $this->rest = substr($data, $whole);
            // 'P': unsigned 64-bit little-endian, the byte order of x86-64.
            foreach (unpack('P*', substr($data, 0, $whole)) as $id) {
                $out[] = $id;
            }
        }
        return $out;
    }

    public function close(): void
    {
        fclose($this->f);
    }
}

function decode(int $id, array $layout = DEFAULT_LAYOUT): array
{
    $s = $layout['sequence_bits'];
    $w = $layout['worker_bits'];
    $d = $layout['datacenter_bits'];
    $ts = $id >> ($s + $w + $d);
    return ['id' => (string)$id, 'timestamp' => $ts,
        'unix_ms' => $layout['epoch_ms'] + $ts * $layout['time_unit_ms'],
        'datacenter' => ($id >> ($s + $w)) & ((1 << $d) - 1),
        'worker' => ($id >> $s) & ((1 << $w) - 1),
        'sequence' => $id & ((1 << $s) - 1)];
}
