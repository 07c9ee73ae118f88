/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel APIs that changed between the oldest kernel snowflake supports
 * (5.10) and the newest it is built for (7.2): the code uses today's names
 * and this header provides them on older kernels.  The one file with
 * LINUX_VERSION_CODE tests (tests/style/run.sh lets checkpatch accept them
 * here only).  Each shim names the upstream commit and the release that
 * made it unnecessary.
 *
 * Built W=1 clean and booted with the whole guest suite (make check,
 * tests/vmtest/run.sh): Debian 11's 5.10, Debian 12's 6.1, 6.12 and 6.12-rt,
 * Debian sid's 7.2 and 7.2-rt; `make kernels-check` builds against the
 * newest headers the mirror has.  docs/reference.md ("Kernel range") lists
 * per feature the first kernel that has it.
 */
#ifndef _SNOWFLAKE_COMPAT_H
#define _SNOWFLAKE_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/notifier.h>
#include <linux/random.h>
#include <linux/uio.h>
#include <linux/version.h>

/*
 * hrtimer_setup() since 6.13 (908a1d775422 "hrtimers: Introduce
 * hrtimer_setup() to replace hrtimer_init()"); hrtimer_init() is gone since
 * 6.16 (9779489a31d7 "hrtimers: Delete hrtimer_init()"), so the code calls
 * hrtimer_setup() only.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/*
 * ITER_UBUF (iter_is_ubuf(), iov_iter.ubuf) and user_backed_iter() since
 * 6.0 (fcb14cb1bdac "new iov_iter flavour - ITER_UBUF").  Before it, user
 * memory always came as ITER_IOVEC: there is no ubuf, and a user-backed
 * iterator is an iovec one.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 0, 0)
static inline bool iter_is_ubuf(const struct iov_iter *i)
{
	return false;
}

static inline bool user_backed_iter(const struct iov_iter *i)
{
	return iter_is_iovec(i);
}

static inline void __user *sf_iter_ubuf(const struct iov_iter *i)
{
	return NULL;
}
#else
static inline void __user *sf_iter_ubuf(const struct iov_iter *i)
{
	return i->ubuf;
}
#endif

/*
 * iter_iov_addr() and iter_iov_len() since 6.4 ("iov_iter: add
 * iter_iov_addr() and iter_iov_len() helpers", with iov_iter.__iov).
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
static inline void __user *iter_iov_addr(const struct iov_iter *i)
{
	if (iter_is_ubuf(i))
		return sf_iter_ubuf(i) + i->iov_offset;
	return i->iov->iov_base + i->iov_offset;
}

static inline size_t iter_iov_len(const struct iov_iter *i)
{
	if (iter_is_ubuf(i))
		return i->count;
	return i->iov->iov_len - i->iov_offset;
}
#endif

/*
 * lockdep_assert_not_held() since 5.14 (3e31f94752e4 "lockdep: Add
 * lockdep_assert_not_held()"); before, the same test lockdep_assert_held()
 * makes, inverted.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 14, 0)
#ifdef CONFIG_LOCKDEP
#define lockdep_assert_not_held(l)	WARN_ON(debug_locks && lockdep_is_held(l))
#else
#define lockdep_assert_not_held(l)	((void)(l))
#endif
#endif

/*
 * The VM-fork notifier, register_random_vmfork_notifier(), since 5.18
 * (f3c2682bad7b "random: provide notifier for VM fork"), and only with
 * CONFIG_VMGENID: without it the kernel's own stubs never call.  Before
 * 5.18 the same do-nothing stubs.  SF_VMFORK_NOTIFIER says whether this
 * build can learn of a VM fork at all; sysfs vm_fork_notifier reports it
 * (docs/ABI/sysfs-class-misc-snowflake) and the module says so at load.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 18, 0)
#define SF_VMFORK_NOTIFIER	0
static inline int register_random_vmfork_notifier(struct notifier_block *nb)
{
	return 0;
}

static inline int unregister_random_vmfork_notifier(struct notifier_block *nb)
{
	return 0;
}
#else
#define SF_VMFORK_NOTIFIER	IS_ENABLED(CONFIG_VMGENID)
#endif

#endif /* _SNOWFLAKE_COMPAT_H */
