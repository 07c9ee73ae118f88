// SPDX-License-Identifier: GPL-2.0
/*
 * Name resolution with a deadline, for the stores whose client library
 * takes an address (Redis, ZooKeeper, MySQL; etcd's libcurl resolves by
 * itself): getaddrinfo_a(3), a lookup that outlives its time kept until
 * it ends.  Its end is told by an eventfd (the lookup's notification) and
 * waited for in the engine's one wait, ag_wait(): its deadline and the
 * stop signals (issue 40 D9: a stop during a lookup that never answers is
 * seen within 100 ms).  Tested by userspace/tests/agent_resolve_test.c
 * (with a DNS server of its own) and the contract scenarios
 * name_lookup_hangs and stop_within_1s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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

/*
 * Written by each lookup's notification (a thread of glibc's, every
 * signal blocked), read by the waiter; one for all lookups, never closed
 * (a lookup left running notifies it when it ends, whenever that is).
 */
static int gai_evfd = -1;

static void gai_notify(union sigval v)
{
	uint64_t one = 1;

	(void)v;
	(void)!write(gai_evfd, &one, sizeof(one));
}

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
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = gai_notify };
	struct pollfd p = { .events = POLLIN };
	int64_t end = boot_ns() + timeout_ms * NS_PER_MS;
	bool stopped = false;
	uint64_t n;
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
	if (gai_evfd < 0)
		gai_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (gai_evfd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return -ENOMEM;
	}
	p.fd = gai_evfd;
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
	if (!req->ar_name || getaddrinfo_a(GAI_NOWAIT, list, 1, &sev)) {
		free((char *)req->ar_name);
		free(hints);
		free(req);
		snprintf(err, errlen, "cannot start resolving %s", host);
		return -ENOENT;
	}
	/*
	 * The engine's wait: woken by a notification (this lookup's, or one
	 * left running that ended now: looked at again), the deadline, or a
	 * stop signal (ag_wait() -1, ECANCELED).
	 */
	while (gai_error(req) == EAI_INPROGRESS) {
		r = ag_wait(&p, 1, end);
		if (r <= 0) {
			stopped = r < 0 && errno == ECANCELED;
			break;
		}
		(void)!read(gai_evfd, &n, sizeof(n));
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
		if (stopped) {
			snprintf(err, errlen, "resolving %s: given up at a stop signal", host);
			return -ECANCELED;
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
