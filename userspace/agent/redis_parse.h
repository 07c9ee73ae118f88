/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Redis store's reply checks, pure (no I/O, no globals): what redis.c
 * reads from its Lua scripts and INFO goes through these before the agent
 * uses it, and the libFuzzer target fuzz/redis_reply_fuzz.c calls them
 * with any reply.  Marks are checked with validate.h's strict parser.
 */
#ifndef SNOWFLAKE_AGENT_REDIS_PARSE_H
#define SNOWFLAKE_AGENT_REDIS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "validate.h"

/* What a claim or renewal script returned. */
enum ag_redis_kind {
	AG_RS_INT,	/* one of the script's integers: *code */
	AG_RS_MARK,	/* a valid mark: *mark */
	AG_RS_INVALID,	/* {text}: the pair's mark, invalid (the script said so) */
	AG_RS_ODD,	/* anything else: the call fails */
};

/*
 * The claim or renewal script's reply @r, checked against @max_ms (the
 * layout's last timestamp).  AG_RS_INVALID sets *@text and *@text_len
 * (within @r).  A string that is not a valid mark is AG_RS_ODD: the script
 * returns only marks it checked.
 */
enum ag_redis_kind ag_redis_script_reply(const redisReply *r, uint64_t max_ms, long long *code,
					 uint64_t *mark, const char **text, size_t *text_len);

/*
 * The init script's reply @r: {0} or {1}, or {2, text} / {3, text} (the
 * invalid or stale mark found, *@text and *@text_len within @r).  Its
 * first number (agent.h's INIT_*), or -1 for anything else.
 */
int ag_redis_init_reply(const redisReply *r, const char **text, size_t *text_len);

/*
 * The field @name of an INFO reply's @len bytes at @info ("name:value"
 * lines ending in \r\n) into @out: 0, or -1 when missing or longer than
 * @out_len - 1.
 */
int ag_redis_info_field(const char *info, size_t len, const char *name, char *out,
			size_t out_len);

#endif /* SNOWFLAKE_AGENT_REDIS_PARSE_H */
