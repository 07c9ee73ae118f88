<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** An error of the device; getCode() is the errno, the message says what to do. */
class SnowflakeException extends \RuntimeException
{
    public function __construct(int $errno, public readonly string $path, ?string $message = null)
    {
        parent::__construct($message ?? describe($errno, $path), $errno);
    }
}
