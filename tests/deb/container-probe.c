// SPDX-License-Identifier: GPL-2.0
/*
 * container-probe: what a process in a container can do with /dev/snowflake
 * and /dev/uuidv7 (tests/deb/guest-containers.sh; static, so that the
 * image needs nothing else).
 *
 *   container-probe ids PATH N      N IDs, one unsigned decimal a line
 *   container-probe uuids PATH N    N UUIDv7s, 32 hex digits a line
 *   container-probe node PATH       "mode=0460 uid=0 gid=G acl=none|group:G:r-"
 *                                   of the node (acl: its access ACL's named
 *                                   groups, as the kernel stores them)
 *   container-probe configure PATH|fd:N
 *                                   change the generator as snowflake(1)
 *                                   config does, to the values it has
 *                                   (GET_CONFIG, then SET_CONFIG of the same):
 *                                   PATH is opened for writing first (else
 *                                   read-only), fd:N is a descriptor handed
 *                                   in; prints "open=OK|ERRNO set=OK|ERRNO"
 *                                   ("open=fd-rw" or "fd-ro" for fd:N)
 *
 * One value a read(2) (a short read is looped, as any reader must).  Exit
 * status: 0 done (configure: accepted), 1 refused (an open or the ioctl
 * failed, the errno name on stderr or in the line), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/snowflake.h>

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

static int fail(const char *what, int e)
{
	fprintf(stderr, "container-probe: %s: %s\n", what, ename(e));
	return 1;
}

/* Read exactly @len bytes, looping over short reads and EINTR. */
static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

/*
 * One read(2) per value, as a service takes one ID per request: readers
 * running at once interleave at the device.
 */
static int values(const char *path, unsigned long n, size_t size)
{
	unsigned char v[16];
	uint64_t id;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(path, errno);
	for (; n; n--) {
		err = read_full(fd, v, size);
		if (err)
			return fail("read", -err);
		if (size == 8) {
			memcpy(&id, v, 8);
			printf("%" PRIu64 "\n", id);
		} else {
			for (size_t b = 0; b < size; b++)
				printf("%02x", v[b]);
			putchar('\n');
		}
	}
	close(fd);
	return fflush(stdout) ? fail("stdout", errno) : 0;
}

static int node(const char *path)
{
	unsigned char acl[256];
	struct stat st;
	ssize_t len;
	int named = 0;

	if (stat(path, &st))
		return fail(path, errno);
	printf("mode=%04o uid=%u gid=%u acl=", (unsigned int)(st.st_mode & 07777),
	       (unsigned int)st.st_uid, (unsigned int)st.st_gid);
	/*
	 * system.posix_acl_access: a 4-byte header, then 8-byte entries
	 * (le16 tag, le16 perm, le32 id); 8 is ACL_GROUP, a named group.
	 */
	len = getxattr(path, "system.posix_acl_access", acl, sizeof(acl));
	for (ssize_t off = 4; len > 4 && off + 8 <= len; off += 8) {
		unsigned int tag = acl[off] | acl[off + 1] << 8;
		unsigned int perm = acl[off + 2] | acl[off + 3] << 8;
		unsigned int id = acl[off + 4] | acl[off + 5] << 8 |
				  acl[off + 6] << 16 | (unsigned int)acl[off + 7] << 24;

		if (tag != 8)
			continue;
		printf("%sgroup:%u:%s%s", named++ ? "," : "", id,
		       perm & 4 ? "r" : "-", perm & 2 ? "w" : "-");
	}
	printf("%s\n", named ? "" : "none");
	return 0;
}

static int configure(const char *what)
{
	struct snowflake_config c;
	const char *open_res;
	char *end;
	int fd, err = 0, acc;

	if (!strncmp(what, "fd:", 3)) {
		fd = (int)strtol(what + 3, &end, 10);
		if (end == what + 3 || *end || fd < 0)
			return 2;
		acc = fcntl(fd, F_GETFL);
		if (acc < 0)
			return fail(what, errno);
		open_res = (acc & O_ACCMODE) == O_RDWR ? "fd-rw" : "fd-ro";
	} else {
		fd = open(what, O_RDWR | O_CLOEXEC);
		open_res = "OK";
		if (fd < 0) {
			open_res = ename(errno);
			fd = open(what, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return fail(what, errno);
		}
	}
	memset(&c, 0, sizeof(c));
	if (ioctl(fd, SNOWFLAKE_IOC_GET_CONFIG, &c))
		return fail("GET_CONFIG", errno);
	if (ioctl(fd, SNOWFLAKE_IOC_SET_CONFIG, &c))
		err = errno;
	printf("open=%s set=%s\n", open_res, err ? ename(err) : "OK");
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long n = 0;

	if (argc == 4)
		n = strtoul(argv[3], NULL, 10);
	if (argc == 4 && !strcmp(argv[1], "ids") && n)
		return values(argv[2], n, 8);
	if (argc == 4 && !strcmp(argv[1], "uuids") && n)
		return values(argv[2], n, 16);
	if (argc == 3 && !strcmp(argv[1], "node"))
		return node(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "configure"))
		return configure(argv[2]);
	fprintf(stderr, "usage: container-probe ids|uuids PATH N | node PATH |\n"
		"       container-probe configure PATH|fd:N\n");
	return 2;
}
