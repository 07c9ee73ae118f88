/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snowflake-agent(8): the ZooKeeper reply bound (zk_bound.c).  A relay on
 * 127.0.0.1 between libzookeeper and each server of the ensemble hands the
 * servers' replies on frame by frame and cuts the connection at a length
 * prefix the library must not allocate.
 */
#ifndef SNOWFLAKE_AGENT_ZK_BOUND_H
#define SNOWFLAKE_AGENT_ZK_BOUND_H

#include <stddef.h>
#include <stdint.h>

/*
 * The largest reply handed on: 16 times jute.maxbuffer's default (1 MiB),
 * above anything an ensemble sends the agent.
 */
#define ZKB_REPLY_MAX	(16 << 20)

struct zkb;

/*
 * Start a relay for @hosts ("addr:port,addr:port[/chroot]", numeric
 * addresses: resolve_hosts()): the list to give the library in @out
 * ("127.0.0.1:port,...[/chroot]").  NULL with a message in @err.
 */
struct zkb *zkb_start(const char *hosts, char *out, size_t len, char *err, size_t errlen);

/*
 * Length prefix check of one frame header (4 bytes, big endian, signed):
 * 0 when a reply of that length may be handed on, -1 when not.  Pure (unit
 * tested).
 */
int zkb_frame_ok(const unsigned char hdr[4], uint32_t *len);

/*
 * The main loop's heartbeat (issue 40 D9): until @until (boot_ns(); 0: no
 * limit) the relay hands bytes on; past it, it cuts every connection and
 * takes no new one until a later @until is given, so that the library's
 * own threads (its pings) cannot keep the session, and the pair's key,
 * alive for an agent whose main loop no longer runs: the ensemble expires
 * the session after its timeout.  Any thread.
 */
void zkb_live(struct zkb *b, int64_t until);

/* Stop it: every relayed connection closed, its threads ended. */
void zkb_stop(struct zkb *b);

#endif /* SNOWFLAKE_AGENT_ZK_BOUND_H */
