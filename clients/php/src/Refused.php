<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/**
 * The device refuses IDs (ENOTCONN): strict mode without a worker id, or
 * fenced by snowflake-agent.  Retrying later may succeed; /dev/uuidv7 keeps
 * serving.
 */
class Refused extends SnowflakeException
{
}
