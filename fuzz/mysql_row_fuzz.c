// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: a row of SELECT owner, mark as the agent's MySQL
 * store reads it (ag_mysql_row(), userspace/agent/store_parse.c).  Input:
 * a byte picking the layout's last ms, a byte of flags (owner NULL, mark
 * NULL), a byte giving the owner's length, the owner, the mark's text.
 * Accepted only when the mark is a BIGINT UNSIGNED's exact text (no
 * sign, space or leading zero) within [0, max], and "ours" only when the
 * owner is exactly the agent's.
 */
#include "agent_fuzz.h"
#include "store_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char me[] = "host:0123456789abcdef0123456789abcdef";
	const char *owner, *mark;
	size_t olen, mlen;
	uint64_t max, v = 0;
	bool ours = false;
	uint8_t flags;

	if (size < 3)
		return 0;
	max = pick_max_ms(data[0]);
	flags = data[1];
	olen = data[2];
	if (olen > size - 3)
		olen = size - 3;
	owner = (const char *)data + 3;
	mark = owner + olen;
	mlen = size - 3 - olen;
	if (ag_mysql_row(flags & 1 ? NULL : owner, olen, flags & 2 ? NULL : mark, mlen, me, max,
			 &v, &ours) != AG_VAL_OK) {
		return 0;
	}
	ACHECK(!(flags & 2));
	ACHECK(is_decimal_of(mark, mlen, v, 0));
	ACHECK(v <= max);
	ACHECK(ours == (!(flags & 1) && olen == strlen(me) && !memcmp(owner, me, olen)));
	return 0;
}
