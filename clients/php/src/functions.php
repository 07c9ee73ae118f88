<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
// Read and decode the IDs of /dev/snowflake and the UUIDs of /dev/uuidv7.
// IDs are PHP ints (the device's have bit 63 clear: they fit PHP's signed
// 64-bit int); unsigned() gives any 64-bit value as its unsigned decimal,
// and JSON gets IDs as strings (toJsonIds(), decode()['id']): JavaScript
// rounds numbers past 2^53.
//
//   $sf = new Snowflake\Reader();           // $SNOWFLAKE_DEVICE, else /dev/snowflake
//   $ids = $sf->next(16);                   // 16 ints, strictly increasing
//   Snowflake\decode($ids[0]);              // ['id' => '...', 'unix_ms' => ..., 'worker' => ...]
namespace Snowflake;

const DEFAULT_PATH = '/dev/snowflake';
const DEFAULT_UUID_PATH = '/dev/uuidv7';
// 41/5/5/12 from Twitter's epoch, in milliseconds: the module's default
// (`snowflake config` shows the device's).
const DEFAULT_LAYOUT = ['epoch_ms' => 1288834974657, 'time_unit_ms' => 1, 'timestamp_bits' => 41,
    'datacenter_bits' => 5, 'worker_bits' => 5, 'sequence_bits' => 12];

// Linux's errno values (the client is for Linux's device).
const EPERM = 1;
const ENOENT = 2;
const EINTR = 4;
const ENXIO = 6;
const EACCES = 13;
const ENODEV = 19;
const ENOTTY = 25;
const ENOTCONN = 107;
const ERRNO_NAMES = [EPERM => 'EPERM', ENOENT => 'ENOENT', ENXIO => 'ENXIO', EACCES => 'EACCES',
    ENODEV => 'ENODEV', ENOTTY => 'ENOTTY', ENOTCONN => 'ENOTCONN'];

/** The message for an errno of the device at $path. */
function describe(int $errno, string $path = DEFAULT_PATH): string
{
    $name = ERRNO_NAMES[$errno] ?? "errno $errno";
    switch ($errno) {
        case ENOTCONN:
            return "$path refuses IDs (ENOTCONN): strict mode and no worker id yet, or fenced "
                . 'by snowflake-agent (lease lost or expired, or the VM was cloned); '
                . 'see `snowflake config`; /dev/uuidv7 keeps serving';
        case ENOENT:
        case ENODEV:
        case ENXIO:
            return "$path: no such device ($name): is the snowflake module loaded? "
                . "(`modprobe snowflake`; in a container: --device $path)";
        case ENOTTY:
            return "$path: not a snowflake device (ENOTTY): a character device that is not "
                . 'the generator (see its /sys/dev/char entry)';
        case EACCES:
        case EPERM:
            return "$path: permission denied ($name): reading needs the group snowflake "
                . '(`usermod -aG snowflake USER`, SupplementaryGroups=snowflake in a unit, '
                . '--group-add in a container)';
    }
    return "$path: $name";
}

/** The exception for an errno of the device at $path. */
function error(int $errno, string $path): SnowflakeException
{
    return match ($errno) {
        ENOTCONN => new Refused($errno, $path),
        ENOENT, ENODEV, ENXIO => new DeviceNotFound($errno, $path),
        EACCES, EPERM => new Denied($errno, $path),
        ENOTTY => new NotSnowflakeDevice($errno, $path),
        default => new SnowflakeException($errno, $path),
    };
}

/**
 * Where the kernel names the devices (/sys/dev/char/MAJ:MIN -> .../misc/NAME);
 * the tests point it at a fake tree with sysfsRoot('/tmp/...').
 */
function sysfsRoot(?string $set = null): string
{
    static $root = '/sys';
    if ($set !== null) {
        $root = $set;
    }
    return $root;
}

/**
 * A character device must be the misc device called $name ('snowflake' or
 * 'uuidv7'); other files (a recording, a FIFO) are read as they are.
 * Without sysfs a device cannot be identified and is refused.
 * @param resource $stream
 */
function identify($stream, string $path, string $name): void
{
    $st = fstat($stream);
    if ($st === false || ($st['mode'] & 0170000) !== 0020000) {
        return;
    }
    $r = $st['rdev'];
    $major = (($r >> 8) & 0xfff) | (($r >> 32) & ~0xfff);
    $minor = ($r & 0xff) | (($r >> 12) & ~0xff);
    $link = $major === 10 ? @readlink(sysfsRoot() . "/dev/char/$major:$minor") : false;
    if ($link === false || !str_ends_with($link, "/misc/$name")) {
        throw error(ENOTTY, $path);
    }
}

/** A 64-bit value as its unsigned decimal (an int with bit 63 set is negative in PHP). */
function unsigned(int $id): string
{
    return sprintf('%u', $id);
}

/** IDs as a JSON array of strings, as `snowflake next --format json` prints them. */
function toJsonIds(array $ids): string
{
    return json_encode(array_map(fn (int $id): string => unsigned($id), $ids));
}

/** The time as `snowflake decode` writes it; null past the year 9999. */
function isoTime(int $unixMs): ?string
{
    if ($unixMs < 0 || intdiv($unixMs, 1000) > 253402300799) {
        return null;
    }
    return gmdate('Y-m-d\TH:i:s', intdiv($unixMs, 1000)) . sprintf('.%03dZ', $unixMs % 1000);
}

/**
 * Split an ID (an int, or its unsigned decimal string) with a layout (the
 * device's: `snowflake config`): the fields of `snowflake decode --json`.
 * \DomainException for an ID with bits above the layout, or whose time
 * does not fit an int.
 */
function decode(int|string $id, array $layout = DEFAULT_LAYOUT): array
{
    $orig = $id;
    if (is_string($id)) {
        if (!preg_match('/^[0-9]{1,20}$/', $id) || cmpDecimal($id, '18446744073709551615') > 0) {
            throw new \DomainException("$id is not an unsigned 64-bit ID");
        }
        // Past PHP_INT_MAX, bit 63 is set: above every layout (63 bits at most).
        $id = cmpDecimal($id, (string)PHP_INT_MAX) > 0 ? -1 : (int)$id;
    }
    $s = $layout['sequence_bits'];
    $w = $layout['worker_bits'];
    $d = $layout['datacenter_bits'];
    $bits = $layout['timestamp_bits'] + $d + $w + $s;
    if ($id < 0 || $id >> $bits !== 0) {
        throw new \DomainException((is_string($orig) ? $orig : unsigned($id)) . ' has bits set above the '
            . "{$layout['timestamp_bits']}/$d/$w/$s layout");
    }
    $ts = $id >> ($s + $w + $d);
    $ms = $layout['epoch_ms'] + $ts * $layout['time_unit_ms'];
    if (!is_int($ms)) {
        throw new \DomainException(unsigned($id) . ': its time does not fit a PHP int');
    }
    return ['id' => unsigned($id), 'time' => isoTime($ms), 'unix_ms' => $ms, 'timestamp' => $ts,
        'datacenter' => ($id >> ($s + $w)) & ((1 << $d) - 1),
        'worker' => ($id >> $s) & ((1 << $w) - 1),
        'sequence' => $id & ((1 << $s) - 1)];
}

/** Compare two unsigned decimal strings: <0, 0, >0. */
function cmpDecimal(string $a, string $b): int
{
    $a = ltrim($a, '0');
    $b = ltrim($b, '0');
    return strlen($a) <=> strlen($b) ?: strcmp($a, $b) <=> 0;
}

/** The time of a UUIDv7 (canonical string or 16 bytes), as `snowflake decode --json`. */
function decodeUuid(string $uuid): array
{
    if (strlen($uuid) === 16) {
        $bytes = $uuid;
    } elseif (preg_match('/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i', $uuid)) {
        $bytes = hex2bin(str_replace('-', '', $uuid));
    } else {
        throw new \DomainException("$uuid is not a UUID");
    }
    $text = formatUuid($bytes);
    if ((ord($bytes[6]) >> 4) !== 7 || (ord($bytes[8]) >> 6) !== 2) {
        throw new \DomainException("$text is not a UUIDv7");
    }
    $ms = unpack('J', "\0\0" . substr($bytes, 0, 6))[1];
    return ['uuid' => $text, 'version' => 7, 'time' => isoTime($ms), 'unix_ms' => $ms];
}

/** 16 bytes in the canonical 8-4-4-4-12 form. */
function formatUuid(string $bytes): string
{
    $h = bin2hex($bytes);
    return substr($h, 0, 8) . '-' . substr($h, 8, 4) . '-' . substr($h, 12, 4) . '-'
        . substr($h, 16, 4) . '-' . substr($h, 20);
}
