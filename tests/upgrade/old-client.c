// SPDX-License-Identifier: GPL-2.0
/*
 * A program of the previous release's users: built by tests/upgrade/run.sh
 * against the previous release's libsnowflake-dev (its snowflake.h and
 * libsnowflake.so), linked dynamically, and run in the guest against
 * today's libsnowflake.so.1 and module (tests/upgrade/guest.sh).  It reads
 * IDs one at a time and in a batch, the device's layout, statistics and
 * floor, a UUIDv7, and decodes and formats an ID: every call must succeed
 * and the IDs rise.  Prints one line; exit 1 with the failing call's name.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <snowflake.h>

#define CHECK(call) do { int rc_ = (int)(call); if (rc_ < 0) { \
	fprintf(stderr, "%s: %s\n", #call, snowflake_strerror(rc_)); return 1; } } while (0)

int main(void)
{
	struct snowflake *sf, *uu;
	struct snowflake_config cfg;
	struct snowflake_stats st;
	struct snowflake_parts parts;
	uint64_t a, b, batch[16], floor_ms, last_ms;
	uint8_t uuid[SNOWFLAKE_UUID_SIZE];
	char buf[SNOWFLAKE_FORMAT_MAX];
	long n;
	int i;

	CHECK(snowflake_open(&sf, NULL, 0));
	CHECK(snowflake_next(sf, &a));
	n = snowflake_next_n(sf, batch, 16);
	CHECK(n);
	CHECK(snowflake_next(sf, &b));
	if (!(b > a) || n < 1 || !(batch[0] > a) || !(b > batch[n - 1])) {
		fprintf(stderr, "IDs not rising: %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", a, batch[0], b);
		return 1;
	}
	for (i = 1; i < n; i++)
		if (batch[i] <= batch[i - 1]) {
			fprintf(stderr, "batch not rising at %d\n", i);
			return 1;
		}
	CHECK(snowflake_get_config(sf, &cfg));
	CHECK(snowflake_get_stats(sf, &st));
	CHECK(snowflake_get_floor(sf, &floor_ms, &last_ms));
	CHECK(snowflake_decode(&cfg, b, &parts));
	CHECK(snowflake_format(b, SNOWFLAKE_FORMAT_DEC, buf, sizeof(buf)));
	snowflake_close(sf);
	CHECK(snowflake_uuid_open(&uu, NULL, 0));
	CHECK(snowflake_uuid_next(uu, uuid));
	snowflake_close(uu);
	printf("old-client: %s worker=%u datacenter=%u batch=%ld floor_ms=%" PRIu64 "\n",
	       buf, parts.worker, parts.datacenter, n, floor_ms);
	return 0;
}
