// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the pair's record (issue 40, docs/lease-record.md), as
 * every store returns it, through ag_rec_parse() (userspace/agent/
 * validate.c).  What is accepted must be exactly what the agent writes:
 * ag_rec_format() of the parsed value gives back the very bytes, the mark
 * is within the layout's range, a free record has no ttl, and the owner is
 * printable ASCII.  Self-contained: the agent's pure sources are included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../userspace/agent/validate.c"

#define MAX_MS	3487858230208ULL	/* the default layout's last timestamp */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ag_rec_val v;
	char buf[AG_REC_MAX];
	size_t i;
	int n;

	if (ag_rec_parse((const char *)data, size, MAX_MS, &v))
		return 0;
	n = ag_rec_format(&v, buf, sizeof(buf));
	if (n < 0 || (size_t)n != size || memcmp(buf, data, size))
		abort();	/* accepted in a form the agent does not write */
	if (v.mark > MAX_MS || (ag_rec_free(&v) && v.ttl_ms) || v.ttl_ms > 0x7fffffff)
		abort();
	for (i = 0; v.owner[i]; i++)
		if (v.owner[i] < 0x20 || v.owner[i] >= 0x7f)
			abort();
	return 0;
}
