<?php
// SPDX-License-Identifier: LGPL-2.1-or-later
namespace Snowflake;

/** No such device: the module is not loaded (ENOENT, ENODEV, ENXIO). */
class DeviceNotFound extends SnowflakeException
{
}
