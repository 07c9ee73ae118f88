<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/**
 * A character device that is not the generator (ENOTTY): another misc
 * device (/dev/hwrng, /dev/fuse), /dev/null, or /dev/uuidv7 given as
 * /dev/snowflake and the reverse.
 */
class NotSnowflakeDevice extends SnowflakeException
{
}
