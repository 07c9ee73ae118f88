<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** Not in the group that reads the device (EACCES, EPERM). */
class Denied extends SnowflakeException
{
}
