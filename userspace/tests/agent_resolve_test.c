// SPDX-License-Identifier: GPL-2.0
/*
 * Native unit tests of snowflake-agent's name resolution with a deadline
 * (agent/resolve.c, issue 31 finding 7: every timed-out lookup leaked its
 * request, gai_cancel() failing on a running one).  The real glibc
 * resolver against a DNS server of the test's own: each test runs in a
 * mount and network namespace of its own (a user namespace too when not
 * root), where /etc/resolv.conf names 127.0.0.1 (this test's server, a
 * thread answering after a delay it sets, or never) and
 * /etc/nsswitch.conf says "hosts: files dns".  Built under ASan + UBSan;
 * LeakSanitizer proves that the lookups left running are freed once they
 * end.  kselftest TAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sanitizer/lsan_interface.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../agent/resolve.c"

int64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The engine's wait (agent.c) without its stop signals: this test has
 * none; a stop during a lookup is the contract's (stop_within_1s).
 */
int ag_wait(struct pollfd *p, unsigned int n, int64_t end)
{
	int64_t left = end - boot_ns();
	int r;

	if (left <= 0)
		return 0;
	do
		r = poll(p, n, (int)((left + NS_PER_MS - 1) / NS_PER_MS));
	while (r < 0 && errno == EINTR);
	return r;
}

/* ---- the namespaces: 0, or -1 with *why */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int bind_text(const char *target, const char *text)
{
	char path[] = "/tmp/sf-resolve-test.XXXXXX";
	int fd = mkstemp(path), r;

	if (fd < 0)
		return -1;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	if (!r)
		r = mount(path, target, NULL, MS_BIND, NULL);
	unlink(path);	/* the mount keeps it */
	return r;
}

static int namespaces(const char **why)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int s;

	if (unshare(CLONE_NEWNS | CLONE_NEWNET)) {
		/* not root: a user namespace of its own, root in it */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)) {
			*why = "unshare (a mount and a network namespace; a user namespace when not root)";
			return -1;
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned int)uid);
		if (write_file("/proc/self/setgroups", "deny") ||
		    write_file("/proc/self/uid_map", map)) {
			*why = "the user namespace's uid_map";
			return -1;
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned int)gid);
		if (write_file("/proc/self/gid_map", map)) {
			*why = "the user namespace's gid_map";
			return -1;
		}
	}
	/* nothing of this namespace's mounts reaches the host's */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		*why = "making / private";
		return -1;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		*why = "lo's flags";
		return -1;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		*why = "lo up";
		return -1;
	}
	close(s);
	if (bind_text("/etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n") ||
	    bind_text("/etc/nsswitch.conf", "hosts: files dns\n")) {
		*why = "binding the test's resolv.conf and nsswitch.conf over /etc's";
		return -1;
	}
	return 0;
}

/* ---- the DNS server: 127.0.0.1:53, UDP */
#define NAME	"store.resolve-test.invalid"
#define KEPT	64

struct dns {
	int fd;
	int delay_ms;			/* -1: never answer */
	pthread_t th;
	pthread_mutex_t mu;
	unsigned short ports[KEPT];	/* the lookups: their sockets' ports */
	int nports;
	struct {
		struct sockaddr_in from;
		unsigned char q[512];
		ssize_t len;
		int64_t due;
	} kept[KEPT];
	int nkept;
};

/* The reply to query @q: NAME's A query 127.0.0.1, the rest no record. */
static ssize_t reply(const unsigned char *q, ssize_t len, unsigned char *out)
{
	static const unsigned char a[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 127, 0, 0, 1 };
	ssize_t i = 12;
	int qtype;

	while (i < len && q[i])
		i += 1 + q[i];
	if (i + 5 > len)
		return -1;
	qtype = q[i + 1] << 8 | q[i + 2];
	i += 5;
	memcpy(out, q, (size_t)i);
	out[2] = 0x81;	/* QR, RD */
	out[3] = 0x80;	/* RA, NOERROR */
	out[4] = 0;
	out[5] = 1;
	out[6] = 0;
	out[7] = qtype == 1;
	memset(out + 8, 0, 4);
	if (qtype == 1) {
		memcpy(out + i, a, sizeof(a));
		i += (ssize_t)sizeof(a);
	}
	return i;
}

static void *dns_serve(void *arg)
{
	struct dns *d = arg;
	unsigned char buf[512], out[600];

	for (;;) {
		struct pollfd p = { .fd = d->fd, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		int64_t now = boot_ns();
		ssize_t n;
		int i, j;

		pthread_mutex_lock(&d->mu);
		for (i = 0; i < d->nkept; i++) {
			if (d->delay_ms < 0 || d->kept[i].due > now)
				continue;
			n = reply(d->kept[i].q, d->kept[i].len, out);
			if (n > 0)
				(void)sendto(d->fd, out, (size_t)n, 0,
					     (struct sockaddr *)&d->kept[i].from, sizeof(from));
			d->kept[i--] = d->kept[--d->nkept];
		}
		pthread_mutex_unlock(&d->mu);
		if (poll(&p, 1, 10) <= 0)
			continue;
		n = recvfrom(d->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n < 17)
			continue;
		pthread_mutex_lock(&d->mu);
		for (j = 0; j < d->nports && d->ports[j] != from.sin_port; j++)
			;
		if (j == d->nports && d->nports < KEPT)
			d->ports[d->nports++] = from.sin_port;
		if (d->nkept < KEPT) {
			d->kept[d->nkept].from = from;
			memcpy(d->kept[d->nkept].q, buf, (size_t)n);
			d->kept[d->nkept].len = n;
			d->kept[d->nkept].due = boot_ns() + (int64_t)d->delay_ms * NS_PER_MS;
			d->nkept++;
		}
		pthread_mutex_unlock(&d->mu);
	}
	return NULL;
}

static int dns_start(struct dns *d, int delay_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };

	memset(d, 0, sizeof(*d));
	d->delay_ms = delay_ms;
	pthread_mutex_init(&d->mu, NULL);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	return pthread_create(&d->th, NULL, dns_serve, d) ? -1 : 0;
}

static int dns_lookups(struct dns *d)
{
	int n;

	pthread_mutex_lock(&d->mu);
	n = d->nports;
	pthread_mutex_unlock(&d->mu);
	return n;
}

#define SETUP(d, delay) do {							\
	const char *why = "";							\
	ASSERT_EQ(0, namespaces(&why)) TH_LOG("%s: %s", why, strerror(errno));	\
	ASSERT_EQ(0, dns_start(d, delay)) TH_LOG("the DNS server on 127.0.0.1:53: %s", \
						strerror(errno));		\
} while (0)

/*
 * A resolver that never answers: 8 lookups time out and are left
 * running; every later one is refused at once, none started (the server
 * sees 8 lookups).  On b0278b3 every call started one more.
 */
TEST(lookups_left_running_bounded)
{
	static struct dns d;
	char out[64], err[256];
	int64_t t;
	int i, r;

	SETUP(&d, -1);
	for (i = 0; i < GAI_LEFT_MAX; i++) {
		r = resolve_bounded(NAME, 50, out, sizeof(out), err, sizeof(err));
		ASSERT_EQ(-ETIMEDOUT, r) TH_LOG("lookup %d: %d %s", i, r, err);
		ASSERT_NE(NULL, strstr(err, "took longer than 50 ms")) TH_LOG("%s", err);
	}
	for (i = 0; i < 4; i++) {
		t = boot_ns();
		r = resolve_bounded(NAME, 50, out, sizeof(out), err, sizeof(err));
		ASSERT_EQ(-ETIMEDOUT, r) TH_LOG("lookup %d: %d %s", GAI_LEFT_MAX + i, r, err);
		ASSERT_NE(NULL, strstr(err, "8 earlier lookups still run"))
			TH_LOG("lookup %d: %s", GAI_LEFT_MAX + i, err);
		ASSERT_GT(20 * NS_PER_MS, boot_ns() - t);	/* refused at once */
	}
	usleep(300 * 1000);
	ASSERT_EQ(GAI_LEFT_MAX, dns_lookups(&d)) TH_LOG("the server saw %d lookups", dns_lookups(&d));
}

/*
 * A resolver that answers after 300 ms: 4 lookups of 50 ms time out and
 * are kept; once they have ended, the next lookup (given 3 s) gets the
 * answer and frees them: LeakSanitizer finds nothing.  On b0278b3 the
 * four requests, their names, hints and results were lost.
 */
TEST(lookups_left_running_freed_once_ended)
{
	static struct dns d;
	char out[64], err[256];
	int i, r;

	SETUP(&d, 300);
	for (i = 0; i < 4; i++) {
		r = resolve_bounded(NAME, 50, out, sizeof(out), err, sizeof(err));
		ASSERT_EQ(-ETIMEDOUT, r) TH_LOG("lookup %d: %d %s", i, r, err);
	}
	usleep(800 * 1000);	/* all four answered */
	r = resolve_bounded(NAME, 3000, out, sizeof(out), err, sizeof(err));
	ASSERT_EQ(0, r) TH_LOG("%s", err);
	ASSERT_STREQ("127.0.0.1", out);
	ASSERT_EQ(4 + 1, dns_lookups(&d));
	ASSERT_EQ(0, __lsan_do_recoverable_leak_check())
		TH_LOG("LeakSanitizer: lookups that timed out were not freed once they ended");
}

TEST_HARNESS_MAIN
