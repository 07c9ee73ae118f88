// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): the ZooKeeper reply bound.
 *
 * libzookeeper reads every reply into a buffer of the size its 4-byte
 * length prefix says (calloc(1, len): up to 2 GiB, no limit of its own),
 * so junk after a reply, or a forged prefix, would grow the agent by
 * whatever the peer sends.  The library has no setting for it, and
 * interposing the allocator holds only where the library is a shared
 * object (the static agent has no library to tell apart) and leaves the
 * library spinning on a socket it no longer reads.  So the agent gives the
 * library, for each server of the ensemble, a relay of its own on
 * 127.0.0.1: it passes the library's requests as they are, and the
 * server's bytes frame by frame, reading each length prefix first (every
 * message a server sends, the connect reply too, is one frame).  A prefix
 * above ZKB_REPLY_MAX or below 0 cuts both connections before any of that
 * frame is handed on: the library sees a connection loss, as for a server
 * that went away, and connects again; the agent never holds more than one
 * read of 64 KiB per connection.
 *
 * One thread accepts on the listeners; one thread per relayed connection
 * (the library keeps one connection at a time) moves its bytes.  Every
 * blocking step is bounded: connect and send by RELAY_IO_MS, the rest by
 * poll() on the two sockets and the relay's stop eventfd.  Threads start
 * with every signal blocked (the agent's signals are the main thread's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "zk_bound.h"

#define ZKB_SERVERS_MAX	32
#define RELAY_IO_MS	5000
#define RELAY_BUF	65536

struct zkb {
	int stopfd;				/* eventfd: readable once stopping */
	int n;
	int lfd[ZKB_SERVERS_MAX];		/* listeners, 127.0.0.1 */
	struct sockaddr_storage srv[ZKB_SERVERS_MAX];
	socklen_t srvlen[ZKB_SERVERS_MAX];
	char name[ZKB_SERVERS_MAX][80];		/* addr:port, for the log */
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int threads;				/* relay threads running, under mu */
	int64_t until;				/* zkb_live(), atomic; 0: no limit */
	int cut_said;				/* atomic: the cut logged once per heartbeat */
};

struct relay {
	struct zkb *b;
	int i;					/* which server */
	int lib;				/* the library's connection */
};

int zkb_frame_ok(const unsigned char hdr[4], uint32_t *len)
{
	uint32_t v = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];

	*len = v;
	return v > (uint32_t)ZKB_REPLY_MAX ? -1 : 0;	/* a negative int32 too */
}

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = RELAY_IO_MS / 1000,
			      .tv_usec = (suseconds_t)RELAY_IO_MS % 1000 * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* All of @n bytes to @fd (send timeout RELAY_IO_MS): 0, or -1. */
static int send_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Connect to server @i by RELAY_IO_MS (or the stop): the socket, or -1. */
static int connect_server(struct zkb *b, int i)
{
	struct pollfd p[2] = { { .events = POLLOUT }, { .fd = b->stopfd, .events = POLLIN } };
	int fd, err = 0, fl;
	socklen_t el = sizeof(err);

	fd = socket(b->srv[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&b->srv[i], b->srvlen[i]) && errno != EINPROGRESS)
		goto fail;
	p[0].fd = fd;
	if (poll(p, 2, RELAY_IO_MS) <= 0 || p[1].revents ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		goto fail;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		goto fail;
	set_timeouts(fd);
	return fd;
fail:
	close(fd);
	return -1;
}

void zkb_live(struct zkb *b, int64_t until)
{
	if (!b)
		return;
	__atomic_store_n(&b->until, until, __ATOMIC_RELEASE);
	__atomic_store_n(&b->cut_said, 0, __ATOMIC_RELEASE);
}

/*
 * The poll timeout (ms) until the heartbeat: -1 none, or 0 and said once
 * when it has passed (the connection is to be cut or refused).
 */
static int live_ms(struct zkb *b, int i)
{
	int64_t u = __atomic_load_n(&b->until, __ATOMIC_ACQUIRE), left;

	if (!u)
		return -1;
	left = u - boot_ns();
	if (left > 0)
		return (int)((left + NS_PER_MS - 1) / NS_PER_MS);
	if (!__atomic_exchange_n(&b->cut_said, 1, __ATOMIC_ACQ_REL))
		logm(AG_WARN, "event=zookeeper_relay_cut server=%s: the agent's main loop made no store step for ttl-ms while a lease is held: its connection is cut and none is taken, so that the session and the pair's key expire after the session's timeout instead of being kept alive by the library's own pings",
		     b->name[i]);
	return 0;
}

static void *relay_run(void *arg)
{
	struct relay *r = arg;
	struct zkb *b = r->b;
	unsigned char *buf = malloc(RELAY_BUF), hdr[4];
	uint32_t need = 0, len;
	int hlen = 0, srv = buf ? connect_server(b, r->i) : -1;

	set_timeouts(r->lib);
	while (srv >= 0) {
		struct pollfd p[3] = { { .fd = r->lib, .events = POLLIN },
				       { .fd = srv, .events = POLLIN },
				       { .fd = b->stopfd, .events = POLLIN } };
		ssize_t n, i;
		int tmo = live_ms(b, r->i), pr;

		if (!tmo)
			break;		/* past the heartbeat: cut */
		pr = poll(p, 3, tmo);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!pr)
			continue;	/* the heartbeat asked again */
		if (p[2].revents)
			break;
		if (p[0].revents) {
			n = recv(r->lib, buf, RELAY_BUF, 0);
			if (n <= 0 || send_all(srv, buf, (size_t)n))
				break;
		}
		if (!p[1].revents)
			continue;
		n = recv(srv, buf, RELAY_BUF, 0);
		if (n <= 0)
			break;
		/* The frames in this read: a header's 4 bytes, then its length. */
		for (i = 0; i < n;) {
			if (need) {
				uint32_t take = (uint32_t)(n - i) < need ? (uint32_t)(n - i) : need;

				need -= take;
				i += take;
				continue;
			}
			hdr[hlen++] = buf[i++];
			if (hlen < 4)
				continue;
			hlen = 0;
			if (zkb_frame_ok(hdr, &len)) {
				logm(AG_WARN, "event=zookeeper_reply_too_large server=%s length=%u max=%d: not a reply the agent reads; the connection is cut",
				     b->name[r->i], len, ZKB_REPLY_MAX);
				goto out;
			}
			need = len;
		}
		if (send_all(r->lib, buf, (size_t)n))
			break;
	}
out:
	if (srv >= 0)
		close(srv);
	close(r->lib);
	free(buf);
	pthread_mutex_lock(&b->mu);
	b->threads--;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	free(r);
	return NULL;
}

/* Start @fn(@arg) detached, every signal blocked in it: 0, or -1. */
static int spawn(pthread_t *t, void *(*fn)(void *), void *arg, bool detach)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t tmp;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&at);
	if (detach)
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(t ? t : &tmp, &at, fn, arg);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret ? -1 : 0;
}

static void *accept_run(void *arg)
{
	struct zkb *b = arg;
	struct pollfd p[ZKB_SERVERS_MAX + 1];
	int i;

	for (i = 0; i < b->n; i++)
		p[i] = (struct pollfd){ .fd = b->lfd[i], .events = POLLIN };
	p[b->n] = (struct pollfd){ .fd = b->stopfd, .events = POLLIN };
	for (;;) {
		if (poll(p, (nfds_t)b->n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[b->n].revents)
			return NULL;
		for (i = 0; i < b->n; i++) {
			struct relay *r;
			int fd;

			if (!p[i].revents)
				continue;
			fd = accept4(b->lfd[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			if (!live_ms(b, i)) {
				close(fd);	/* past the heartbeat: refused */
				continue;
			}
			r = malloc(sizeof(*r));
			if (!r) {
				close(fd);
				continue;
			}
			*r = (struct relay){ .b = b, .i = i, .lib = fd };
			pthread_mutex_lock(&b->mu);
			b->threads++;
			pthread_mutex_unlock(&b->mu);
			if (spawn(NULL, relay_run, r, true)) {
				pthread_mutex_lock(&b->mu);
				b->threads--;
				pthread_mutex_unlock(&b->mu);
				close(fd);
				free(r);
			}
		}
	}
}

/* One "addr:port" of @hosts as server @i, with its listener. 0, or -1. */
static int add_server(struct zkb *b, const char *tok, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct addrinfo *ai = NULL;
	char host[80], *port;
	int i = b->n, fd;

	if (i >= ZKB_SERVERS_MAX || strlen(tok) >= sizeof(host)) {
		snprintf(err, errlen, "more than %d servers, or a server's address too long",
			 ZKB_SERVERS_MAX);
		return -1;
	}
	snprintf(host, sizeof(host), "%s", tok);
	snprintf(b->name[i], sizeof(b->name[i]), "%s", tok);
	port = strrchr(host, ':');
	if (!port || getaddrinfo(host, (*port = '\0', port + 1), &hints, &ai) || !ai) {
		snprintf(err, errlen, "server %s: not a numeric address:port", tok);
		return -1;
	}
	memcpy(&b->srv[i], ai->ai_addr, ai->ai_addrlen);
	b->srvlen[i] = ai->ai_addrlen;
	freeaddrinfo(ai);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&lo, sizeof(lo)) || listen(fd, 8)) {
		snprintf(err, errlen, "a relay for %s on 127.0.0.1: %s", tok, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	b->lfd[i] = fd;
	b->n++;
	return 0;
}

struct zkb *zkb_start(const char *hosts, char *out, size_t len, char *err, size_t errlen)
{
	struct zkb *b = calloc(1, sizeof(*b));
	char *list = strdup(hosts), *chroot, *tok, *save = NULL;
	size_t o = 0;
	int i;

	if (b)
		b->stopfd = -1;
	if (!b || !list) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	b->stopfd = eventfd(0, EFD_CLOEXEC);
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (b->stopfd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	chroot = strchr(list, '/');
	if (chroot)
		*chroot++ = '\0';
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (add_server(b, tok, err, errlen))
			goto fail;
	for (i = 0; i < b->n; i++) {
		struct sockaddr_in sa = { 0 };
		socklen_t sl = sizeof(sa);
		int w;

		if (getsockname(b->lfd[i], (struct sockaddr *)&sa, &sl)) {
			snprintf(err, errlen, "getsockname: %s", strerror(errno));
			goto fail;
		}
		w = snprintf(out + o, len - o, "%s127.0.0.1:%u", i ? "," : "", ntohs(sa.sin_port));
		if (w < 0 || (size_t)w >= len - o)
			goto toolong;
		o += (size_t)w;
	}
	if (chroot && snprintf(out + o, len - o, "/%s", chroot) >= (int)(len - o))
		goto toolong;
	if (!b->n || spawn(&b->acceptor, accept_run, b, false)) {
		snprintf(err, errlen, "no server, or no thread for the relay");
		goto fail;
	}
	free(list);
	return b;
toolong:
	snprintf(err, errlen, "the relay's host list is too long");
fail:
	free(list);
	if (b) {
		for (i = 0; i < b->n; i++)
			close(b->lfd[i]);
		if (b->stopfd >= 0)
			close(b->stopfd);
		free(b);
	}
	return NULL;
}

void zkb_stop(struct zkb *b)
{
	uint64_t one = 1;
	int i;

	if (!b)
		return;
	(void)!write(b->stopfd, &one, sizeof(one));
	pthread_join(b->acceptor, NULL);
	/* Every relay thread sees the stop at its next poll, or its send times out. */
	pthread_mutex_lock(&b->mu);
	while (b->threads)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
	for (i = 0; i < b->n; i++)
		close(b->lfd[i]);
	close(b->stopfd);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
}
