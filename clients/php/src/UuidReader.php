<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** UUIDv7s of /dev/uuidv7 ($SNOWFLAKE_UUID_DEVICE), in the canonical form. */
final class UuidReader
{
    use ReadsRecords;

    private const ENV = 'SNOWFLAKE_UUID_DEVICE';
    private const DEFAULT = DEFAULT_UUID_PATH;
    private const NAME = 'uuidv7';

    /** @return string[] $n UUIDv7s, strictly increasing. */
    public function next(int $n = 1): array
    {
        return $this->records($n, 16);
    }

    private function record(string $b): string
    {
        return formatUuid($b);
    }
}
