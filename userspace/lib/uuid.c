// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsnowflake: /dev/uuidv7, RFC 9562 UUIDv7s from the same module.
 * Reading, the canonical text form, and the time of a UUIDv7.
 */
#define _GNU_SOURCE	/* secure_getenv */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

SF_EXPORT int snowflake_uuid_open(struct snowflake **sf, const char *path, int flags)
{
	/* /dev/uuidv7 has nothing to configure. */
	if (flags & SNOWFLAKE_CONFIGURE) {
		if (sf)
			*sf = NULL;
		return -EINVAL;
	}
	return sf_open(sf, path, flags, SNOWFLAKE_UUID_PATH_ENV, SNOWFLAKE_UUID_DEFAULT_PATH,
		       SNOWFLAKE_UUID_DEVICE_NAME);
}

SF_EXPORT long snowflake_uuid_next_n(struct snowflake *sf,
				     uint8_t (*uuids)[SNOWFLAKE_UUID_SIZE], size_t n)
{
	return sf_read_records(sf, uuids, n, SNOWFLAKE_UUID_SIZE, SNOWFLAKE_UUID_MAX_PER_READ);
}

SF_EXPORT int snowflake_uuid_next(struct snowflake *sf, uint8_t uuid[SNOWFLAKE_UUID_SIZE])
{
	long r = snowflake_uuid_next_n(sf, (uint8_t (*)[SNOWFLAKE_UUID_SIZE])uuid, 1);

	return r < 0 ? (int)r : 0;
}

SF_EXPORT int snowflake_uuid_format(const uint8_t uuid[SNOWFLAKE_UUID_SIZE],
				    char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;
	int i;

	if (!uuid || !buf)
		return -EINVAL;
	if (len < SNOWFLAKE_UUID_STR_MAX)
		return -ENOSPC;
	for (i = 0; i < SNOWFLAKE_UUID_SIZE; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[uuid[i] >> 4];
		*p++ = hex[uuid[i] & 0xf];
	}
	*p = '\0';
	return (int)(p - buf);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

SF_EXPORT int snowflake_uuid_parse(const char *s, uint8_t uuid[SNOWFLAKE_UUID_SIZE])
{
	uint8_t out[SNOWFLAKE_UUID_SIZE];
	size_t len, i, o = 0;

	if (!s || !uuid)
		return -EINVAL;
	len = strlen(s);
	if (len == SNOWFLAKE_UUID_STR_MAX + 1 && s[0] == '"' && s[len - 1] == '"') {
		s++;
		len -= 2;
	}
	if (len != SNOWFLAKE_UUID_STR_MAX - 1)
		return -EINVAL;
	for (i = 0; i < len; ) {
		int hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			i++;
			continue;
		}
		hi = hexval(s[i]);
		lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[o++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	memcpy(uuid, out, sizeof(out));
	return 0;
}

SF_EXPORT int snowflake_uuid_time(const uint8_t uuid[SNOWFLAKE_UUID_SIZE], uint64_t *unix_ms)
{
	uint64_t ms = 0;
	int i;

	if (!uuid || !unix_ms)
		return -EINVAL;
	/* Version 7 (bits 48..51) and the RFC 9562 variant 0b10. */
	if ((uuid[6] >> 4) != 7 || (uuid[8] >> 6) != 2)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		ms = ms << 8 | uuid[i];
	*unix_ms = ms;
	return 0;
}
