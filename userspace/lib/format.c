// SPDX-License-Identifier: LGPL-2.1-or-later
/* libsnowflake: IDs as text.  No locale, no allocation, no state. */
#include <errno.h>
#include <string.h>

#include "internal.h"

SF_EXPORT int snowflake_format(uint64_t id, enum snowflake_format fmt, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[SNOWFLAKE_FORMAT_MAX];
	char *p = tmp + sizeof(tmp);
	size_t n;

	if (!buf)
		return -EINVAL;
	*--p = '\0';
	switch (fmt) {
	case SNOWFLAKE_FORMAT_JSON:
		*--p = '"';
		/* fall through */
	case SNOWFLAKE_FORMAT_DEC:
		do {
			*--p = (char)('0' + id % 10);
			id /= 10;
		} while (id);
		if (fmt == SNOWFLAKE_FORMAT_JSON)
			*--p = '"';
		break;
	case SNOWFLAKE_FORMAT_HEX:
		do {
			*--p = hex[id & 0xf];
			id >>= 4;
		} while (id);
		*--p = 'x';
		*--p = '0';
		break;
	default:
		return -EINVAL;
	}
	n = (size_t)(tmp + sizeof(tmp) - 1 - p);
	if (len < n + 1)
		return -ENOSPC;
	memcpy(buf, p, n + 1);
	return (int)n;
}

static int digit(char c, unsigned int base)
{
	int v;

	if (c >= '0' && c <= '9')
		v = c - '0';
	else if (c >= 'a' && c <= 'f')
		v = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		v = c - 'A' + 10;
	else
		return -1;
	return (unsigned int)v < base ? v : -1;
}

SF_EXPORT int snowflake_parse(const char *s, uint64_t *id)
{
	unsigned int base = 10;
	size_t len;
	uint64_t v = 0;

	if (!s || !id)
		return -EINVAL;
	len = strlen(s);
	if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
		s++;
		len -= 2;
	}
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		len -= 2;
	}
	if (!len)
		return -EINVAL;
	/* Every character must be a digit: no sign, space or quote left. */
	for (size_t i = 0; i < len; i++)
		if (digit(s[i], base) < 0)
			return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned int d = (unsigned int)digit(s[i], base);

		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	*id = v;
	return 0;
}
