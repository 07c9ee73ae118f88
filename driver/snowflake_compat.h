/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel APIs that changed between the oldest kernel snowflake supports
 * (6.1) and the newest it is written for: the code uses today's names and
 * this header provides them on older kernels.  The one file with
 * LINUX_VERSION_CODE tests (scripts/style.sh lets checkpatch accept them
 * here only).
 *
 * Built and booted here: Debian's 6.1 and 6.12.  Newer kernels are followed
 * from the upstream headers, untested here.
 */
#ifndef _SNOWFLAKE_COMPAT_H
#define _SNOWFLAKE_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/uio.h>
#include <linux/version.h>

/* hrtimer_setup() since 6.13; hrtimer_init() is gone since 6.15. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* iter_iov_addr() and iter_iov_len() since 6.4 (struct iov_iter.__iov). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
static inline void __user *iter_iov_addr(const struct iov_iter *i)
{
	if (iter_is_ubuf(i))
		return i->ubuf + i->iov_offset;
	return i->iov->iov_base + i->iov_offset;
}

static inline size_t iter_iov_len(const struct iov_iter *i)
{
	if (iter_is_ubuf(i))
		return i->count;
	return i->iov->iov_len - i->iov_offset;
}
#endif

#endif /* _SNOWFLAKE_COMPAT_H */
