// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/uuidv7: RFC 9562 UUIDv7s from the generator's clock, strictly
 * increasing (as 16 bytes, memcmp) across the whole host.
 *
 * The clock and the lock are /dev/snowflake's (snowflake_main.c): wall
 * clock at load plus CLOCK_BOOTTIME, moved only forward (catch-up, floor).
 * A read reserves a block (a millisecond and a run of counter values) under
 * the generator's spinlock; the random bits are drawn, the UUIDs formatted
 * and copied after it is released.  The arithmetic is in uuid_core.c.
 *
 * No worker id goes into a UUID, so neither strict mode nor the fence
 * (SNOWFLAKE_IOC_SET_FENCE) refuses reads here: see README.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/wait.h>

#include <linux/snowflake.h>

#include "snowflake_compat.h"
#include "snowflake_dev.h"
#include "uuid_core.h"

/*
 * Random bytes drawn per get_random_bytes() of a batch read: 32 fresh bits
 * for each of SFU_CHUNK UUIDs.  get_random_bytes() makes one ChaCha20 block
 * for its key erasure, which also gives the first 32 bytes, then one per 64
 * bytes, the last one partial through a bounce buffer: 32 + 64 * k bytes
 * use every byte of every block.  480 bytes: 120 UUIDs for 8 blocks (the
 * limit, 16 bytes of output per block, would be 7.5) on 480 bytes of stack.
 */
#define SFU_RND_BYTES	(32 + 64 * 7)
#define SFU_CHUNK	(SFU_RND_BYTES / sizeof(u32))

/**
 * struct sf_uuid_dev - /dev/uuidv7
 * @core:	the UUIDv7 state.  Every access holds sf_gen_lock(), the
 *		generator's spinlock, which also orders it with the clock.
 * @wq:		pollers waiting for the next millisecond.
 * @ms_timer:	wakes @wq one millisecond after a poll found the current
 *		millisecond used up (never, in practice: 2^41 UUIDs fit).
 *		Does not take the lock.
 * @misc:	the /dev/uuidv7 node and its sysfs files.
 */
struct sf_uuid_dev {
	struct sf_uuid_core core;
	wait_queue_head_t wq;
	struct hrtimer ms_timer;
	struct miscdevice misc;
};

static struct sf_uuid_dev sfu_dev;

static enum hrtimer_restart sfu_ms_timer_fn(struct hrtimer *timer)
{
	struct sf_uuid_dev *u = container_of(timer, struct sf_uuid_dev,
					     ms_timer);

	wake_up_interruptible_poll(&u->wq, EPOLLIN | EPOLLRDNORM);
	return HRTIMER_NORESTART;
}

static int sfu_open(struct inode *inode, struct file *file)
{
	file->f_mode |= FMODE_NOWAIT;
	return nonseekable_open(inode, file);
}

/* Reserve a block under the generator's lock; see sf_uuid_core_reserve(). */
static int sfu_reserve(struct sf_uuid_dev *u, u32 want,
		       struct sf_uuid_block *b)
{
	u64 seed = get_random_u64();
	u64 clock;
	int ret;

	clock = sf_gen_lock_clock();
	ret = sf_uuid_core_reserve(&u->core, clock, want, seed, b);
	sf_gen_unlock();
	return ret;
}

/*
 * The current millisecond is used up: sleep one millisecond on @wq, where
 * the poll timer also wakes.  Nothing is held.  Returns -ERESTARTSYS when a
 * signal is pending.
 */
static int sfu_wait_ms(struct sf_uuid_dev *u)
{
	DEFINE_WAIT(wait);
	ktime_t expires = ms_to_ktime(1);

	prepare_to_wait(&u->wq, &wait, TASK_INTERRUPTIBLE);
	schedule_hrtimeout_range(&expires, 0, HRTIMER_MODE_REL);
	finish_wait(&u->wq, &wait);
	return signal_pending(current) ? -ERESTARTSYS : 0;
}

/*
 * Store UUIDs @idx..@idx + @n - 1 of @b, with the random bits @rnd[0..@n-1],
 * to the user buffer @p: each formatted in registers (sf_uuid_hi() and
 * sf_uuid_lo(), big-endian) and stored with two 8-byte stores, its second
 * half first.  A store that faults writes nothing (it is one instruction),
 * so a fault leaves no byte of the UUID it stopped in the buffer: if the
 * second half cannot be stored, nothing of that UUID was; if the second
 * half was and the first half then faults, the first half starts on a
 * lower page than the second half, the page the UUID before it was just
 * stored to; so this happens only to a read's first UUID, and that read
 * fails with EFAULT.  Returns the UUIDs stored.
 */
static size_t sfu_put(u8 __user *p, const struct sf_uuid_block *b, u32 idx,
		      const u32 *rnd, size_t n)
{
	u64 ms = b->ms, first = b->first + idx;
	size_t i = 0;

	if (!user_access_begin(p, n * SF_UUID_BYTES))
		return 0;
	for (; i < n; i++) {
		__be64 __user *d = (__be64 __user *)(p + i * SF_UUID_BYTES);
		u64 c = first + i;

		unsafe_put_user(cpu_to_be64(sf_uuid_lo(c, rnd[i])), d + 1,
				efault);
		unsafe_put_user(cpu_to_be64(sf_uuid_hi(ms, c)), d, efault);
	}
	user_access_end();
	return n;
efault:
	user_access_end();
	return i;
}

/* UUID @idx of @b through copy_to_iter(); true when all 16 bytes went. */
static bool sfu_copy_one(struct iov_iter *to, const struct sf_uuid_block *b,
			 u32 idx, u32 rnd)
{
	u8 buf[SF_UUID_BYTES];

	sf_uuid_format(buf, b->ms, b->first + idx, rnd);
	return copy_to_iter(buf, SF_UUID_BYTES, to) == SF_UUID_BYTES;
}

/*
 * Copy UUIDs @idx..@idx + @n - 1 of @b, with the random bits @rnd, to @to;
 * returns how many were copied whole.  Into user memory they go through
 * sfu_put(), so no byte of a UUID the caller does not receive is written.
 * A UUID that a readv() splits across two segments goes through
 * copy_to_iter(): only there can a fault leave part of one behind, which
 * snowflake(4) says.  Kernel memory (kernel_read()) cannot fault: one UUID
 * at a time through copy_to_iter(), so a short copy stops between UUIDs.
 */
static size_t sfu_copy_out(struct iov_iter *to, const struct sf_uuid_block *b,
			   u32 idx, const u32 *rnd, size_t n)
{
	size_t done = 0;

	if (unlikely(!user_backed_iter(to))) {
		while (done < n && sfu_copy_one(to, b, idx + done, rnd[done]))
			done++;
		return done;
	}
	while (done < n) {
		size_t len = min(iter_iov_len(to), iov_iter_count(to));
		size_t k = min(len / SF_UUID_BYTES, n - done);
		size_t put;

		if (unlikely(!k)) {
			if (!sfu_copy_one(to, b, idx + done, rnd[done]))
				break;
			done++;
			continue;
		}
		put = sfu_put(iter_iov_addr(to), b, idx + done, rnd + done, k);
		iov_iter_advance(to, put * SF_UUID_BYTES);
		done += put;
		if (put != k)
			break;
	}
	return done;
}

/*
 * Copy @b->count (> 1) UUIDs, drawing their random bits SFU_CHUNK at a
 * time.  Kept out of line: with CONFIG_INIT_STACK_ALL_ZERO the buffer is
 * zeroed on every call, which single-UUID reads skip.
 */
static noinline ssize_t sfu_copy_chunked(struct iov_iter *to,
					 const struct sf_uuid_block *b)
{
	u32 rnd[SFU_CHUNK];
	size_t done = 0;
	u32 start = 0;

	while (start < b->count) {
		u32 n = min_t(u32, b->count - start, SFU_CHUNK);
		size_t copied;

		get_random_bytes(rnd, n * sizeof(rnd[0]));
		copied = sfu_copy_out(to, b, start, rnd, n);
		done += copied;
		if (copied != n)
			break;
		start += n;
		cond_resched();
	}
	memzero_explicit(rnd, sizeof(rnd));
	return done ? done * SF_UUID_BYTES : -EFAULT;
}

/* Copy the block; bytes of whole UUIDs copied, or -EFAULT when none. */
static ssize_t sfu_copy(struct iov_iter *to, const struct sf_uuid_block *b)
{
	u32 rnd;

	if (b->count > 1)
		return sfu_copy_chunked(to, b);
	rnd = get_random_u32();
	return sfu_copy_out(to, b, 0, &rnd, 1) ? SF_UUID_BYTES : -EFAULT;
}

static ssize_t sfu_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct sf_uuid_dev *u = &sfu_dev;
	bool nowait = (iocb->ki_filp->f_flags & O_NONBLOCK) ||
		      (iocb->ki_flags & IOCB_NOWAIT);
	size_t want = iov_iter_count(to) / SF_UUID_BYTES;
	struct sf_uuid_block blk;
	ssize_t ret;

	if (!want)
		return -EINVAL;
	want = min_t(size_t, want, SNOWFLAKE_UUID_MAX_PER_READ);

	for (;;) {
		ret = sfu_reserve(u, want, &blk);
		if (ret != -EAGAIN)
			break;
		if (nowait)
			return -EAGAIN;
		ret = sfu_wait_ms(u);
		if (ret)
			return ret;
	}
	if (ret < 0)
		return ret;

	ret = sfu_copy(to, &blk);
	if (ret < (ssize_t)blk.count * SF_UUID_BYTES) {
		/* Rare: a bad buffer.  Count only what the caller received. */
		u32 delivered = ret > 0 ? ret / SF_UUID_BYTES : 0;
		spinlock_t *lock = sf_gen_lock();

		spin_lock(lock);
		sf_uuid_core_undeliver(&u->core, blk.count - delivered,
				       !delivered);
		spin_unlock(lock);
	}
	return ret;
}

static __poll_t sfu_poll(struct file *file, poll_table *wait)
{
	struct sf_uuid_dev *u = &sfu_dev;
	u64 clock;
	int ready;

	/*
	 * Join the wait queue before looking at the state: the timer that
	 * fires after the check below wakes us, so no wakeup is lost (the
	 * same ordering as eventfd_poll()).  The clock only moves forward,
	 * so nothing else makes a used-up millisecond readable sooner.
	 */
	poll_wait(file, &u->wq, wait);

	clock = sf_gen_lock_clock();
	ready = sf_uuid_core_peek(&u->core, clock);
	sf_gen_unlock();

	if (ready > 0)
		return EPOLLIN | EPOLLRDNORM;
	if (ready < 0)		/* past 2^48 ms: a read fails at once */
		return EPOLLIN | EPOLLRDNORM | EPOLLERR;
	hrtimer_start(&u->ms_timer, ms_to_ktime(1), HRTIMER_MODE_REL);
	return 0;
}

static const struct file_operations sfu_fops = {
	.owner		= THIS_MODULE,
	.open		= sfu_open,
	.read_iter	= sfu_read_iter,
	.poll		= sfu_poll,
};

/* sysfs: /sys/class/misc/uuidv7/statistics/, see docs/ABI/. */

static ssize_t sfu_show(char *buf, bool issued)
{
	spinlock_t *lock = sf_gen_lock();
	u64 v;

	spin_lock(lock);
	v = issued ? sfu_dev.core.issued : sfu_dev.core.reads;
	spin_unlock(lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static ssize_t issued_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sfu_show(buf, true);
}

static ssize_t reads_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sfu_show(buf, false);
}

static DEVICE_ATTR_RO(issued);
static DEVICE_ATTR_RO(reads);

static struct attribute *sfu_stat_attrs[] = {
	&dev_attr_issued.attr,
	&dev_attr_reads.attr,
	NULL,
};

static const struct attribute_group sfu_stat_group = {
	.name = "statistics",
	.attrs = sfu_stat_attrs,
};

static const struct attribute_group *sfu_groups[] = {
	&sfu_stat_group,
	NULL,
};

/**
 * sf_uuid_register() - create /dev/uuidv7
 *
 * Called by the module's init once the generator (its lock and clock) is
 * ready.
 *
 * Return: 0, or the error of misc_register().
 */
int sf_uuid_register(void)
{
	struct sf_uuid_dev *u = &sfu_dev;
	int ret;

	BUILD_BUG_ON(SF_UUID_BYTES != SNOWFLAKE_UUID_SIZE);
	BUILD_BUG_ON(48 + 4 + 2 + SF_UUID_COUNTER_BITS + SF_UUID_RANDOM_BITS != 128);

	sf_uuid_core_init(&u->core, SF_UUID_COUNTER_BITS);
	init_waitqueue_head(&u->wq);
	hrtimer_setup(&u->ms_timer, sfu_ms_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL);

	u->misc.minor = MISC_DYNAMIC_MINOR;
	u->misc.name = SNOWFLAKE_UUID_DEVICE_NAME;
	u->misc.fops = &sfu_fops;
	u->misc.groups = sfu_groups;
	u->misc.mode = 0444;

	ret = misc_register(&u->misc);
	if (ret)
		pr_err("cannot register /dev/%s: %d\n",
		       SNOWFLAKE_UUID_DEVICE_NAME, ret);
	return ret;
}

/**
 * sf_uuid_deregister() - remove /dev/uuidv7; mirrors sf_uuid_register()
 */
void sf_uuid_deregister(void)
{
	misc_deregister(&sfu_dev.misc);
	hrtimer_cancel(&sfu_dev.ms_timer);
}
