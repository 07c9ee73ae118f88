// SPDX-License-Identifier: GPL-2.0
/*
 * Name resolution with a deadline, for the stores whose client library
 * takes an address (Redis, ZooKeeper, MySQL; etcd's libcurl resolves by
 * itself): getaddrinfo_a(3), a lookup that outlives its time kept until
 * it ends.  Tested by userspace/tests/agent_resolve_test.c (with a DNS
 * server of its own) and the contract scenario name_lookup_hangs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"

/*
 * Lookups that outlived their caller's time: getaddrinfo_a's thread owns
 * each until it ends (gai_cancel() cannot stop a running one), so they
 * are kept here and freed once done, at the next lookup; at most
 * GAI_LEFT_MAX at once (a resolver that never answers): then no new one
 * is started, and memory stays bounded.  Contract scenario
 * name_lookup_hangs (mutant i31-11).
 */
#define GAI_LEFT_MAX	8
static struct gaicb *gai_left[GAI_LEFT_MAX];

static void gai_free(struct gaicb *req)
{
	if (req->ar_result)
		freeaddrinfo(req->ar_result);
	free((char *)req->ar_name);
	free((void *)req->ar_request);
	free(req);
}

/* Free the lookups left running that have ended; how many still run. */
static int gai_reap(void)
{
	int i, n = 0;

	for (i = 0; i < GAI_LEFT_MAX; i++) {
		if (!gai_left[i])
			continue;
		if (gai_error(gai_left[i]) == EAI_INPROGRESS) {
			n++;
			continue;
		}
		gai_free(gai_left[i]);
		gai_left[i] = NULL;
	}
	return n;
}

int resolve_bounded(const char *host, int64_t timeout_ms, char *out, size_t len,
		    char *err, size_t errlen)
{
	unsigned char addr[sizeof(struct in6_addr)];
	struct addrinfo *hints;
	struct gaicb *req, *list[1];
	struct timespec ts;
	int64_t end = boot_ns() + timeout_ms * NS_PER_MS, left;
	int r;

	if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1) {
		snprintf(out, len, "%s", host);
		return 0;
	}
	if (gai_reap() >= GAI_LEFT_MAX) {
		snprintf(err, errlen, "resolving %s: %d earlier lookups still run", host,
			 GAI_LEFT_MAX);
		return -ETIMEDOUT;
	}
	/* getaddrinfo_a(3): a thread resolves, we wait at most timeout_ms. */
	req = calloc(1, sizeof(*req));
	hints = calloc(1, sizeof(*hints));
	if (!req || !hints) {
		free(req);
		free(hints);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	hints->ai_socktype = SOCK_STREAM;
	req->ar_name = strdup(host);
	req->ar_request = hints;
	list[0] = req;
	if (!req->ar_name || getaddrinfo_a(GAI_NOWAIT, list, 1, NULL)) {
		free((char *)req->ar_name);
		free(hints);
		free(req);
		snprintf(err, errlen, "cannot start resolving %s", host);
		return -ENOENT;
	}
	for (;;) {
		left = end - boot_ns();
		if (left <= 0 || gai_error(req) != EAI_INPROGRESS)
			break;
		ts.tv_sec = left / 1000000000LL;
		ts.tv_nsec = left % 1000000000LL;
		gai_suspend((const struct gaicb *const *)list, 1, &ts);
	}
	r = gai_error(req);
	if (r == EAI_INPROGRESS) {
		/* Still running: it owns req until it ends; freed then (gai_reap()). */
		if (gai_cancel(req) == EAI_CANCELED) {
			gai_free(req);
		} else {
			int i;

			for (i = 0; i < GAI_LEFT_MAX && gai_left[i]; i++)
				;
			if (i < GAI_LEFT_MAX)	/* always: gai_reap() made room */
				gai_left[i] = req;
		}
		snprintf(err, errlen, "resolving %s took longer than %lld ms", host,
			 (long long)timeout_ms);
		return -ETIMEDOUT;
	}
	if (r == 0 && req->ar_result &&
	    getnameinfo(req->ar_result->ai_addr, req->ar_result->ai_addrlen, out, (socklen_t)len,
			NULL, 0, NI_NUMERICHOST) == 0)
		r = 0;
	else if (r == 0)
		r = EAI_FAIL;
	if (req->ar_result)
		freeaddrinfo(req->ar_result);
	free((char *)req->ar_name);
	free(hints);
	free(req);
	if (r) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(r));
		return -ENOENT;
	}
	return 0;
}
