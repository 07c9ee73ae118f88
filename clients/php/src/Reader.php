<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** IDs of /dev/snowflake ($SNOWFLAKE_DEVICE), as ints. */
final class Reader
{
    use ReadsRecords;

    private const ENV = 'SNOWFLAKE_DEVICE';
    private const DEFAULT = DEFAULT_PATH;
    private const NAME = 'snowflake';

    /** @return int[] $n IDs, strictly increasing (unsigned(): as unsigned decimals). */
    public function next(int $n = 1): array
    {
        return $this->records($n, 8);
    }

    private function record(string $b): int
    {
        // The host's byte order: 'P' (little-endian) on x86-64 and arm64, else 'J'.
        return unpack(pack('S', 1) === "\x01\x00" ? 'P' : 'J', $b)[1];
    }
}
