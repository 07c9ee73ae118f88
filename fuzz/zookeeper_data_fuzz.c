// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the ZooKeeper mark node's data, as the agent reads it
 * (ag_zk_mark_data(), userspace/agent/store_parse.c).  The first byte
 * picks the layout's last ms; the rest is the node's data.  Accepted only
 * when the data is exactly MARK_FMT's 20 digits of a value within
 * [0, max], alone or followed by one space and a printable owner.
 */
#include "agent_fuzz.h"
#include "store_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1, *owner = NULL;
	uint64_t max, mark = 0;
	size_t len, olen = 0, i;

	if (!size)
		return 0;
	max = pick_max_ms(data[0]);
	len = size - 1;
	if (ag_zk_mark_data(s, len, max, &mark, &owner, &olen) != AG_VAL_OK)
		return 0;
	ACHECK(len >= AG_MARK_DIGITS);
	ACHECK(is_decimal_of(s, AG_MARK_DIGITS, mark, AG_MARK_DIGITS));
	ACHECK(mark <= max);
	if (len == AG_MARK_DIGITS) {
		ACHECK(!owner && !olen);
		return 0;
	}
	ACHECK(s[AG_MARK_DIGITS] == ' ');
	ACHECK(owner == s + AG_MARK_DIGITS + 1 && olen == len - AG_MARK_DIGITS - 1);
	ACHECK(olen >= 1 && olen <= AG_OWNER_MAX);
	for (i = 0; i < olen; i++)
		ACHECK(owner[i] >= 0x20 && owner[i] < 0x7f);
	return 0;
}
