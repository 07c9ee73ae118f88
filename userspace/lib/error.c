// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsnowflake: messages for the errors of the device and the library.
 * Static strings for every errno the library documents (no strerror());
 * any other value gets "unknown error N" in a thread-local buffer:
 * thread-safe either way.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "internal.h"

SF_EXPORT const char *snowflake_strerror(int err)
{
	static __thread char unknown[32];
	int e = err;

	/* -errno as documented (a positive errno is taken too); INT_MIN has no opposite. */
	if (e < 0)
		e = e == INT_MIN ? INT_MAX : -e;
	switch (e) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid argument (bad layout, value, size or flag)";
	case EAGAIN:
		return "no ID left in this tick (non-blocking)";
	case ENOTCONN:
		return "reads refused: strict mode without a worker id, fenced, or past the lease's deadline or ceiling";
	case EOVERFLOW:
		return "time out of range: does not fit timestamp_bits from the epoch (or, decoded, 64-bit Unix ms)";
	case EBUSY:
		return "layout is fixed once an ID was issued";
	case EPERM:
		return "not permitted: configuring needs CAP_SYS_ADMIN or membership in snowflake-admin";
	case EACCES:
		return "permission denied";
	case ENOTTY:
		return "not a snowflake device";
	case ENOENT:
		return "no such device (is the snowflake module loaded?)";
	case ENODEV:
		return "no such device";
	case ENXIO:
		return "no such device or address";
	case E2BIG:
		return "structure has nonzero bytes the kernel does not know";
	case EOPNOTSUPP:
		return "not supported by this snowflake module (too old)";
	case EFAULT:
		return "bad address";
	case ERANGE:
		return "value out of range";
	case ENOSPC:
		return "buffer too small";
	case EINTR:
		return "interrupted by a signal";
	case ENODATA:
		return "end of file: no ID could be read";
	case ENOMEM:
		return "out of memory";
	case EBADF:
		return "bad file descriptor";
	case EISDIR:
		return "is a directory";
	case ENOTDIR:
		return "not a directory";
	case EMFILE:
		return "too many open files";
	case ENFILE:
		return "too many open files in system";
	case ESPIPE:
		return "illegal seek";
	case EIO:
		return "input/output error";
	case ELOOP:
		return "too many levels of symbolic links";
	case ENAMETOOLONG:
		return "file name too long";
	case EROFS:
		return "read-only file system";
	case ESTALE:
		return "the VM was cloned or restored since the lease was taken (another vm_forks): nothing changed";
	case EPROTO:
		return "unexpected content in the device's sysfs file";
	case EPIPE:
		return "broken pipe";
	default:
		snprintf(unknown, sizeof(unknown), "unknown error %d", err);
		return unknown;
	}
}
