// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/snowflake: unique, time-ordered 64-bit IDs for the whole host.
 *
 * Every read returns whole 8-byte IDs.  The generator's clock is the wall
 * clock captured once at load plus the elapsed CLOCK_BOOTTIME, so stepping
 * the wall clock changes nothing; it only moves forward (catch-up, floor).
 * The arithmetic lives in snowflake_core.c; this file adds the clock, the
 * lock, the waiting and the interfaces.  See README.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/user_namespace.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <linux/snowflake.h>

#include "snowflake_compat.h"
#include "snowflake_core.h"
#include "snowflake_dev.h"

/* IDs formatted on the stack per copy_to_iter() call (512 bytes). */
#define SF_CHUNK		64

/**
 * struct snowflake_dev - the host's one generator
 * @lock:		protects @core: configuration, tick state and counters.
 *			Taken in process context (read, poll, ioctl, sysfs)
 *			and by @catchup_work, never in hard-irq context; held
 *			only for the arithmetic of snowflake_core.h (inline):
 *			the clock is read before it is taken, the IDs are
 *			copied after it is released.
 * @core:		the generator.  Every access holds @lock.
 * @rnd:		the next random sequence start (random-sequence mode).
 *			Read under @lock, replaced without it by the reader
 *			that used it (READ_ONCE/WRITE_ONCE): two ticks that
 *			start at the same random number are still distinct
 *			ticks, so a race here costs no uniqueness.
 * @anchor_ns:		wall clock minus CLOCK_BOOTTIME, both at load.  Set
 *			before the device is registered; read-only after.
 * @catchup_ms:		catch-up threshold, read-only after load.
 * @instance_id:	128 random bits drawn at load, shown in sysfs: this
 *			load of the module, as opposed to any earlier or later
 *			one.  Set before the device is registered; read-only
 *			after.
 * @wq:			pollers and blocked readers: woken at the start of the
 *			next tick (@tick_timer for pollers, each reader's own
 *			timeout) and by every change of state that can let a
 *			read succeed sooner or fail (floor, catch-up,
 *			configuration, ids and the lease's deadline and
 *			window, fence).
 * @tick_timer:		wakes @wq at the start of the next tick; armed by a
 *			poll that found the tick used up.  Does not take @lock.
 * @catchup_work:	compares the wall clock with ours once a second
 *			(deferrable: it never wakes an idle CPU by itself);
 *			not queued at all when @catchup_ms is 0.
 * @vm_forks:		VM forks reported by the vmgenid notifier since load.
 *			The notifier only increments it (no lock: it may run
 *			in hard-irq context on some platforms); every path
 *			that reserves, peeks or reports brings @core up to
 *			date under @lock first (sf_sync_vm_forks()).
 * @vmfork_nb:		our entry in the kernel's VM-fork notifier chain.
 * @vmfork_work:	after a fork: brings @core up to date, says so in the
 *			log and wakes @wq.
 * @misc:		the /dev/snowflake node and its sysfs files.
 */
struct snowflake_dev {
	spinlock_t lock; /* protects core, see above */
	struct sf_core core;
	u32 rnd;
	s64 anchor_ns;
	u64 catchup_ms;
	u8 instance_id[16];
	wait_queue_head_t wq;
	struct hrtimer tick_timer;
	struct delayed_work catchup_work;
	atomic_t vm_forks;
	struct notifier_block vmfork_nb;
	struct work_struct vmfork_work;
	struct miscdevice misc;
};

static struct snowflake_dev sf_dev;

/* Module parameters: read once at load, see snowflake(4). */
static unsigned long long param_epoch_ms = SNOWFLAKE_TWITTER_EPOCH_MS;
module_param_named(epoch_ms, param_epoch_ms, ullong, 0444);
MODULE_PARM_DESC(epoch_ms, "Unix time in ms of timestamp 0 (default 1288834974657, Twitter's)");

static unsigned int param_time_unit_ms = SNOWFLAKE_DEFAULT_TIME_UNIT_MS;
module_param_named(time_unit_ms, param_time_unit_ms, uint, 0444);
MODULE_PARM_DESC(time_unit_ms, "Length of one timestamp tick in ms, 1..3600000 (default 1)");

static unsigned int param_timestamp_bits = SNOWFLAKE_DEFAULT_TIMESTAMP_BITS;
module_param_named(timestamp_bits, param_timestamp_bits, uint, 0444);
MODULE_PARM_DESC(timestamp_bits, "Width of the timestamp field (default 41)");

static unsigned int param_datacenter_bits = SNOWFLAKE_DEFAULT_DATACENTER_BITS;
module_param_named(datacenter_bits, param_datacenter_bits, uint, 0444);
MODULE_PARM_DESC(datacenter_bits, "Width of the datacenter field, 0..31 (default 5)");

static unsigned int param_worker_bits = SNOWFLAKE_DEFAULT_WORKER_BITS;
module_param_named(worker_bits, param_worker_bits, uint, 0444);
MODULE_PARM_DESC(worker_bits, "Width of the worker field, 0..31 (default 5)");

static unsigned int param_sequence_bits = SNOWFLAKE_DEFAULT_SEQUENCE_BITS;
module_param_named(sequence_bits, param_sequence_bits, uint, 0444);
MODULE_PARM_DESC(sequence_bits, "Width of the sequence field, 0..31 (default 12)");

static unsigned int param_datacenter_id;
module_param_named(datacenter_id, param_datacenter_id, uint, 0444);
MODULE_PARM_DESC(datacenter_id, "Datacenter id (default 0)");

static int param_worker_id = -1;
module_param_named(worker_id, param_worker_id, int, 0444);
MODULE_PARM_DESC(worker_id, "Worker id; -1: not set, 0 is used (default -1)");

static unsigned long long param_floor_ms;
module_param_named(floor_ms, param_floor_ms, ullong, 0444);
MODULE_PARM_DESC(floor_ms, "No ID gets a timestamp below this Unix time in ms (default 0)");

static bool param_random_sequence;
module_param_named(random_sequence, param_random_sequence, bool, 0444);
MODULE_PARM_DESC(random_sequence, "Start each tick at a random sequence number (default 0)");

static bool param_strict;
module_param_named(strict, param_strict, bool, 0444);
MODULE_PARM_DESC(strict, "Refuse reads with ENOTCONN until a worker id is set (default 0)");

static unsigned int param_catchup_threshold_ms = 1000;
module_param_named(catchup_threshold_ms, param_catchup_threshold_ms, uint, 0444);
MODULE_PARM_DESC(catchup_threshold_ms,
		 "Move the clock forward when the wall clock is this many ms ahead; 0: never (default 1000)");

/*
 * The generator's raw clock: wall clock at load plus elapsed boottime.
 * Never read with @sf->lock held: on hpet or acpi_pm a clock read costs
 * about 1 µs, which would be added to every reader's wait for the lock.
 * Reading it before the lock is safe (see sf_core_reserve()); lockdep
 * kernels check that nobody reads it under the lock.
 */
static u64 sf_now_ms(struct snowflake_dev *sf)
{
	s64 ns;

	lockdep_assert_not_held(&sf->lock);
	ns = sf->anchor_ns + ktime_get_boottime_ns();

	return ns > 0 ? div_u64(ns, NSEC_PER_MSEC) : 0;
}

/*
 * Bring @sf->core up to date with the VM forks the notifier counted.  A
 * reservation made after the notifier ran is refused; the notification
 * itself arrives some time after the clone's vCPUs resumed (the window
 * snowflake(4) describes).
 */
static inline void sf_sync_vm_forks(struct snowflake_dev *sf)
{
	u32 n = (u32)atomic_read(&sf->vm_forks);

	lockdep_assert_held(&sf->lock);
	if (unlikely(n != sf->core.vm_forks))
		sf_core_vm_fork(&sf->core, n);
}

/*
 * Read the raw clock, then take @sf->lock, and return the reading.  The
 * clock is read before the lock (see sf_now_ms()); the reading may then be
 * stale by the time the lock is held (preempted in between, or a long wait
 * for the lock on PREEMPT_RT).  A stale time only makes IDs older, never
 * wrong (sf_core_reserve()), but the lease's deadline is judged by it: so
 * when more than one jiffy went by, drop the lock and read again.  A
 * reading used under the lock is thus at most two jiffies old (plus the
 * ms it is rounded down to), which snowflake(4) tells lease holders to
 * leave in their margin.  jiffies is one load: nothing else is added.
 */
static u64 sf_lock_now(struct snowflake_dev *sf)
	__acquires(&sf->lock)
{
	unsigned long j;
	u64 now;

	for (;;) {
		j = READ_ONCE(jiffies);
		now = sf_now_ms(sf);
		spin_lock(&sf->lock);
		if (likely(time_before_eq(READ_ONCE(jiffies), j + 1))) {
			sf_sync_vm_forks(sf);
			return now;
		}
		spin_unlock(&sf->lock);
	}
}

/* The raw ms in which CLOCK_BOOTTIME @boot_ns falls; U64_MAX for none. */
static u64 sf_boottime_to_raw_ms(const struct snowflake_dev *sf, u64 boot_ns)
{
	s64 raw;

	if (boot_ns == SNOWFLAKE_NO_DEADLINE)
		return U64_MAX;
	if (boot_ns > (u64)S64_MAX - max_t(s64, sf->anchor_ns, 0))
		return U64_MAX - 1;	/* some 292 years: not in this boot */
	raw = (s64)boot_ns + sf->anchor_ns;
	return raw > 0 ? div_u64(raw, NSEC_PER_MSEC) : 0;
}

/*
 * How far the wall clock is ahead of the raw clock, in ms rounded down from
 * the ns difference (0 when behind).  The wall clock is read first: the
 * difference can then only come out smaller than the true one, so the
 * generator's clock after a catch-up is never later than the wall clock.
 */
static u64 sf_wall_ahead_ms(const struct snowflake_dev *sf)
{
	s64 wall = ktime_get_real_ns();
	s64 raw = sf->anchor_ns + ktime_get_boottime_ns();

	return wall > raw ? div_u64(wall - raw, NSEC_PER_MSEC) : 0;
}

/* CLOCK_BOOTTIME at which the raw clock reads @raw_ms. */
static ktime_t sf_raw_to_boottime(const struct snowflake_dev *sf, u64 raw_ms)
{
	return ns_to_ktime(raw_ms * NSEC_PER_MSEC - sf->anchor_ns);
}

static void sf_wake_pollers(struct snowflake_dev *sf)
{
	wake_up_interruptible_poll(&sf->wq, EPOLLIN | EPOLLRDNORM);
}

static enum hrtimer_restart sf_tick_timer_fn(struct hrtimer *timer)
{
	struct snowflake_dev *sf = container_of(timer, struct snowflake_dev,
						tick_timer);

	sf_wake_pollers(sf);
	return HRTIMER_NORESTART;
}

static void sf_catchup_fn(struct work_struct *work)
{
	struct snowflake_dev *sf = container_of(to_delayed_work(work),
						struct snowflake_dev,
						catchup_work);
	u64 ahead = sf_wall_ahead_ms(sf);
	bool moved;

	spin_lock(&sf->lock);
	moved = sf_core_catch_up(&sf->core, ahead, sf->catchup_ms);
	spin_unlock(&sf->lock);

	if (moved)
		sf_wake_pollers(sf);
	queue_delayed_work(system_power_efficient_wq, &sf->catchup_work, HZ);
}

/*
 * The vmgenid driver reports that this VM was cloned or restored from a
 * snapshot.  May run in hard-irq context on some platforms: no lock here,
 * only the count (read under @lock by every reservation) and the work.
 */
static int sf_vmfork_notify(struct notifier_block *nb, unsigned long action,
			    void *data)
{
	struct snowflake_dev *sf = container_of(nb, struct snowflake_dev,
						vmfork_nb);

	atomic_inc(&sf->vm_forks);
	schedule_work(&sf->vmfork_work);
	return NOTIFY_DONE;
}

static void sf_vmfork_fn(struct work_struct *work)
{
	struct snowflake_dev *sf = container_of(work, struct snowflake_dev,
						vmfork_work);
	u32 n;

	spin_lock(&sf->lock);
	sf_sync_vm_forks(sf);
	n = sf->core.vm_forks;
	spin_unlock(&sf->lock);

	sf_wake_pollers(sf);
	pr_warn("virtual machine fork %u: reads refused until a worker id is assigned for it\n",
		n);
}

static int sf_open(struct inode *inode, struct file *file)
{
	file->f_mode |= FMODE_NOWAIT;
	return nonseekable_open(inode, file);
}

/*
 * The current tick is used up (or looked used up to a clock read before the
 * lock).  Try again with a fresh clock, and for a blocking read sleep on @wq
 * until the next tick starts (a timeout on CLOCK_BOOTTIME) or a change of
 * state wakes us, then re-check: eventfd's pattern.  We are on the queue
 * (prepare_to_wait()) before each check, so a wakeup between the check and
 * the sleep is not lost: it leaves us TASK_RUNNING and the sleep returns at
 * once.  A floor raised or a catch-up while we sleep therefore ends the
 * wait at once instead of at the end of the old tick (up to an hour).
 *
 * Returns what sf_core_reserve() returned, or -ERESTARTSYS.
 */
static noinline int sf_reserve_wait(struct snowflake_dev *sf, bool nowait,
				    u32 want, struct sf_block *blk)
{
	DEFINE_WAIT(wait);
	ktime_t expires;
	u64 now;
	int ret;

	for (;;) {
		if (!nowait)
			prepare_to_wait(&sf->wq, &wait, TASK_INTERRUPTIBLE);
		now = sf_lock_now(sf);
		ret = sf_core_reserve(&sf->core, now, want, READ_ONCE(sf->rnd),
				      blk);
		if (ret == -EAGAIN) {
			if (nowait)
				sf->core.stats.eagain++;
			else
				sf->core.stats.exhausted_waits++;
		}
		spin_unlock(&sf->lock);

		/*
		 * A non-blocking reader that found the tick used up may wait
		 * in epoll with EPOLLET: it is told again only after a wakeup,
		 * and sf_poll(), which arms the tick timer, is not called in
		 * between.  Arm it here as sf_poll() does, so that the start
		 * of the next tick wakes it.
		 */
		if (ret == -EAGAIN && nowait)
			hrtimer_start(&sf->tick_timer,
				      sf_raw_to_boottime(sf, blk->retry_ms),
				      HRTIMER_MODE_ABS);
		if (ret != -EAGAIN || nowait)
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		expires = sf_raw_to_boottime(sf, blk->retry_ms);
		schedule_hrtimeout_range_clock(&expires, 0, HRTIMER_MODE_ABS,
					       CLOCK_BOOTTIME);
	}
	if (!nowait)
		finish_wait(&sf->wq, &wait);
	return ret;
}

/* The user address and length of @to's current segment (user-backed). */
static u64 __user *sf_iter_seg(const struct iov_iter *to, size_t *len)
{
	*len = min(iter_iov_len(to), iov_iter_count(to));
	return iter_iov_addr(to);
}

/*
 * Write @n consecutive IDs from @first to @p, each with one 8-byte store.
 * A store that faults writes nothing (it is one instruction), so the copy
 * stops at an ID boundary and no byte of an ID the caller does not receive
 * lands in its buffer.  Returns how many IDs were written.
 *
 * Eight stores per turn of the loop (64 bytes, one branch): a batch read
 * is bound by these stores (BENCHMARKS.md, P6).  Each store has its own
 * fault label (a fault at store k of a turn: k IDs of it were written), so
 * the count stays exact inside a turn.
 */
static size_t sf_put_ids(u64 __user *p, u64 first, size_t n)
{
	size_t i = 0;

	if (!user_access_begin(p, n * sizeof(u64)))
		return 0;
	for (; i + 8 <= n; i += 8) {
		unsafe_put_user(first + i, p + i, efault0);
		unsafe_put_user(first + i + 1, p + i + 1, efault1);
		unsafe_put_user(first + i + 2, p + i + 2, efault2);
		unsafe_put_user(first + i + 3, p + i + 3, efault3);
		unsafe_put_user(first + i + 4, p + i + 4, efault4);
		unsafe_put_user(first + i + 5, p + i + 5, efault5);
		unsafe_put_user(first + i + 6, p + i + 6, efault6);
		unsafe_put_user(first + i + 7, p + i + 7, efault7);
	}
	for (; i < n; i++)
		unsafe_put_user(first + i, p + i, efault0);
	user_access_end();
	return n;
efault7:
	i++;
efault6:
	i++;
efault5:
	i++;
efault4:
	i++;
efault3:
	i++;
efault2:
	i++;
efault1:
	i++;
efault0:
	user_access_end();
	return i;
}

/*
 * Kernel iterators (splice, sendfile): IDs formatted in chunks on the
 * stack, then copied; kernel memory does not fault.  Out of line: with
 * CONFIG_INIT_STACK_ALL_ZERO the buffer is zeroed on every call.
 */
static noinline size_t sf_copy_ids_kernel(struct iov_iter *to, u64 first,
					  u32 count)
{
	u64 buf[SF_CHUNK];
	size_t done = 0;

	while (count) {
		u32 i, n = min_t(u32, count, SF_CHUNK);
		size_t copied;

		for (i = 0; i < n; i++)
			buf[i] = first + i;
		copied = copy_to_iter(buf, n * sizeof(u64), to);
		done += copied / sizeof(u64);
		if (copied != n * sizeof(u64))
			break;
		first += n;
		count -= n;
	}
	return done;
}

/*
 * Copy @count consecutive IDs starting at @first.  Returns the bytes of
 * whole IDs copied, or -EFAULT when not even one could be.
 *
 * Into user memory the IDs go straight to the buffer, one pass, no bounce
 * (sf_put_ids()).  An ID that a readv() splits across two segments goes
 * through copy_to_iter(): only there can a fault leave part of an
 * undelivered ID behind, which snowflake(4) says.
 */
static ssize_t sf_copy_ids(struct iov_iter *to, u64 first, u32 count)
{
	size_t done = 0;

	if (unlikely(!user_backed_iter(to)))
		done = sf_copy_ids_kernel(to, first, count);
	while (done < count && user_backed_iter(to)) {
		size_t len, n, put;
		u64 __user *p = sf_iter_seg(to, &len);
		u64 id = first + done;

		n = min_t(size_t, len / sizeof(u64), count - done);
		if (unlikely(!n)) {
			if (copy_to_iter(&id, sizeof(id), to) != sizeof(id))
				break;
			done++;
			continue;
		}
		put = sf_put_ids(p, id, n);
		iov_iter_advance(to, put * sizeof(u64));
		done += put;
		if (put != n)
			break;
	}
	return done ? done * sizeof(u64) : -EFAULT;
}

static ssize_t sf_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct snowflake_dev *sf = &sf_dev;
	size_t want = iov_iter_count(to) / sizeof(u64);
	struct sf_block blk;
	ssize_t ret;
	u64 now;

	if (unlikely(!want))
		return -EINVAL;
	want = min_t(size_t, want, SNOWFLAKE_MAX_IDS_PER_READ);

	/* The clock is read before the lock: safe, see sf_core_reserve(). */
	now = sf_lock_now(sf);
	ret = sf_core_reserve(&sf->core, now, want, READ_ONCE(sf->rnd), &blk);
	spin_unlock(&sf->lock);

	if (unlikely(ret == -EAGAIN)) {
		bool nowait = (iocb->ki_filp->f_flags & O_NONBLOCK) ||
			      (iocb->ki_flags & IOCB_NOWAIT);

		ret = sf_reserve_wait(sf, nowait, want, &blk);
	}
	if (unlikely(ret < 0))
		return ret;
	if (unlikely(blk.rnd_used))
		WRITE_ONCE(sf->rnd, get_random_u32());

	ret = sf_copy_ids(to, blk.first, blk.count);
	if (unlikely(ret < (ssize_t)blk.count * (ssize_t)sizeof(u64))) {
		/* Rare: a bad buffer.  Count only what the caller received. */
		u32 delivered = ret > 0 ? ret / sizeof(u64) : 0;

		spin_lock(&sf->lock);
		sf_core_undeliver(&sf->core, blk.count - delivered, !delivered);
		spin_unlock(&sf->lock);
	}
	return ret;
}

static __poll_t sf_poll(struct file *file, poll_table *wait)
{
	struct snowflake_dev *sf = &sf_dev;
	u64 retry_ms = 0, now;
	int ready;

	/*
	 * Join the wait queue before looking at the state: a tick timer or a
	 * configuration change that fires after the check below wakes us, so
	 * no wakeup is lost (the same ordering as eventfd_poll()).  The clock
	 * is read after joining: a tick that starts later wakes us.
	 */
	poll_wait(file, &sf->wq, wait);

	now = sf_lock_now(sf);
	ready = sf_core_peek(&sf->core, now, &retry_ms);
	spin_unlock(&sf->lock);

	if (ready > 0)
		return EPOLLIN | EPOLLRDNORM;
	/* The timestamp no longer fits: permanent, reads fail with EOVERFLOW. */
	if (ready == -EOVERFLOW)
		return EPOLLERR;
	if (ready == 0)
		hrtimer_start(&sf->tick_timer, sf_raw_to_boottime(sf, retry_ms),
			      HRTIMER_MODE_ABS);
	return 0;
}

/* Copy a "get" structure out: truncated to @usize, or its tail zeroed. */
static int sf_copy_out(void __user *uptr, size_t usize, const void *k,
		       size_t ksize)
{
	if (copy_to_user(uptr, k, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uptr + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}

/*
 * May this file change the generator (the SET ioctls)?  Yes for a caller
 * with CAP_SYS_ADMIN in the initial user namespace, as always, and for a
 * file opened for writing by an opener of the initial user namespace: the
 * node's mode and ACL then say who may configure (udev gives writing to the
 * group snowflake-admin), so the daemons need no capability at all.
 *
 * The opener's credentials (file->f_cred, taken at open), not current's:
 * the right is checked when it is acquired, as for any file opened for
 * writing, and travels with the descriptor.  Handing an O_RDWR descriptor
 * to a less privileged process (fork after setuid, SCM_RIGHTS, systemd's
 * socket or fd store) is a deliberate grant by the one who could open it;
 * a read-only descriptor never grants it, whoever holds it.
 *
 * The opener must be in the initial user namespace: root of a user
 * namespace whose uid 0 maps to the host's root passes the node's DAC
 * checks (the inode's owner is mapped) and may open it for writing, but it
 * is a container, which reads and never configures.  write(2) stays
 * -EINVAL; the sysfs files stay CAP_SYS_ADMIN only (they have no opener to
 * speak of: they are 0644 root, see docs/ABI).
 */
static bool sf_may_configure(const struct file *file)
{
	/*
	 * The file first: capable() is audited (an LSM logs a denial), so it
	 * is asked only when its answer decides.
	 */
	if ((file->f_mode & FMODE_WRITE) &&
	    file->f_cred->user_ns == &init_user_ns)
		return true;
	return capable(CAP_SYS_ADMIN);
}

/*
 * Copy a "set" structure in, for a caller that may configure: at least
 * @ver0 bytes, a longer one only with zeros past what we know (-E2BIG).
 */
static int sf_copy_in(const struct file *file, void *k, size_t ksize,
		      const void __user *uptr, size_t usize, size_t ver0)
{
	if (!sf_may_configure(file))
		return -EPERM;
	if (usize < ver0)
		return -EINVAL;
	return copy_struct_from_user(k, ksize, uptr, usize);
}

static int sf_ioctl_get_config(struct snowflake_dev *sf, void __user *uptr,
			       size_t usize)
{
	struct snowflake_config cfg;

	if (usize < SNOWFLAKE_CONFIG_SIZE_VER0)
		return -EINVAL;

	spin_lock(&sf->lock);
	cfg = sf->core.cfg;
	spin_unlock(&sf->lock);

	return sf_copy_out(uptr, usize, &cfg, sizeof(cfg));
}

static int sf_ioctl_set_config(struct snowflake_dev *sf,
			       const struct file *file, void __user *uptr,
			       size_t usize)
{
	struct snowflake_config cfg;
	const char *why = NULL;
	u64 now;
	int ret;

	ret = sf_copy_in(file, &cfg, sizeof(cfg), uptr, usize, SNOWFLAKE_CONFIG_SIZE_VER0);
	if (ret)
		return ret;

	now = sf_now_ms(sf);
	spin_lock(&sf->lock);
	ret = sf_core_set_config(&sf->core, &cfg, now, &why);
	spin_unlock(&sf->lock);

	if (ret)
		pr_debug("SET_CONFIG refused: %s\n", why);
	else
		sf_wake_pollers(sf);
	return ret;
}

/*
 * The ids, the deadline, the window (floor and ceiling) and the re-arm take
 * effect together, or none of them: sf_core_set_ids_arg() checks all that
 * can fail before it changes anything, under @sf->lock, which every reader
 * holds to reserve.  A reader therefore sees the old lease or the new one,
 * never the new pair with the old ceiling or the old pair with the new one.
 */
static int sf_ioctl_set_ids(struct snowflake_dev *sf, const struct file *file,
			    void __user *uptr, size_t usize)
{
	struct snowflake_ids ids;
	u64 deadline_ms, now;
	int ret;

	ret = sf_copy_in(file, &ids, sizeof(ids), uptr, usize, SNOWFLAKE_IDS_SIZE_VER0);
	if (ret)
		return ret;
	ret = sf_core_check_ids(&ids, usize);
	if (ret)
		return ret;
	deadline_ms = sf_boottime_to_raw_ms(sf, ids.deadline_ns);

	/*
	 * The time is for the window's floor: as in sf_set_floor(), a
	 * reading at most two jiffies old, so that the floor's jump does
	 * not run the clock ahead by however long we were preempted.
	 */
	now = sf_lock_now(sf);
	ret = sf_core_set_ids_arg(&sf->core, &ids, deadline_ms, now);
	spin_unlock(&sf->lock);

	if (!ret)
		sf_wake_pollers(sf);
	return ret;
}

static void sf_get_stats(struct snowflake_dev *sf, struct snowflake_stats *st)
{
	u64 now = sf_now_ms(sf);

	spin_lock(&sf->lock);
	sf_sync_vm_forks(sf);
	sf_core_stats(&sf->core, now, st);
	spin_unlock(&sf->lock);
}

static int sf_ioctl_get_stats(struct snowflake_dev *sf, void __user *uptr,
			      size_t usize)
{
	struct snowflake_stats st;

	if (usize < SNOWFLAKE_STATS_SIZE_VER0)
		return -EINVAL;

	sf_get_stats(sf, &st);
	return sf_copy_out(uptr, usize, &st, sizeof(st));
}

static int sf_ioctl_get_floor(struct snowflake_dev *sf, void __user *uptr,
			      size_t usize)
{
	struct snowflake_floor fl = { 0 };

	if (usize < SNOWFLAKE_FLOOR_SIZE_VER0)
		return -EINVAL;

	spin_lock(&sf->lock);
	fl.floor_ms = sf->core.floor_ms;
	fl.last_timestamp_ms = sf_core_last_timestamp(&sf->core);
	spin_unlock(&sf->lock);

	return sf_copy_out(uptr, usize, &fl, sizeof(fl));
}

/*
 * A floor above the generator's clock moves the clock to the floor's tick,
 * measured from the time read here: a reading S ms stale moves it S ms too
 * far, and the host then stamps S ms ahead of the floor and reaches a
 * lease's ceiling S ms early (sf_raise_floor()).  So the reading is taken
 * as for reads, by sf_lock_now(): at most two jiffies old (plus the ms it
 * is rounded down to) when it is used, not however long this thread was
 * preempted between the clock and the lock.
 */
static int sf_set_floor(struct snowflake_dev *sf, u64 floor_ms)
{
	u64 now;
	int ret;

	now = sf_lock_now(sf);
	ret = sf_core_set_floor(&sf->core, floor_ms, now);
	spin_unlock(&sf->lock);

	if (!ret)
		sf_wake_pollers(sf);
	return ret;
}

static int sf_ioctl_set_floor(struct snowflake_dev *sf, const struct file *file,
			      void __user *uptr, size_t usize)
{
	struct snowflake_floor fl;
	int ret;

	ret = sf_copy_in(file, &fl, sizeof(fl), uptr, usize, SNOWFLAKE_FLOOR_SIZE_VER0);
	if (ret)
		return ret;
	ret = sf_core_check_floor(&fl);
	if (ret)
		return ret;

	return sf_set_floor(sf, fl.floor_ms);
}

static int sf_ioctl_get_fence(struct snowflake_dev *sf, void __user *uptr,
			      size_t usize)
{
	struct snowflake_fence fe = { 0 };

	if (usize < SNOWFLAKE_FENCE_SIZE_VER0)
		return -EINVAL;

	spin_lock(&sf->lock);
	fe.flags = sf->core.fenced ? SNOWFLAKE_FENCE_ON : 0;
	fe.fences = sf->core.fences;
	spin_unlock(&sf->lock);

	return sf_copy_out(uptr, usize, &fe, sizeof(fe));
}

static int sf_ioctl_set_fence(struct snowflake_dev *sf, const struct file *file,
			      void __user *uptr, size_t usize)
{
	struct snowflake_fence fe;
	bool on, changed;
	int ret;

	ret = sf_copy_in(file, &fe, sizeof(fe), uptr, usize, SNOWFLAKE_FENCE_SIZE_VER0);
	if (ret)
		return ret;
	ret = sf_core_check_fence(&fe);
	if (ret)
		return ret;

	on = fe.flags & SNOWFLAKE_FENCE_ON;
	spin_lock(&sf->lock);
	changed = sf_core_set_fence(&sf->core, on);
	spin_unlock(&sf->lock);

	if (changed) {
		sf_wake_pollers(sf);
		pr_info("%s\n", on ? "fenced: reads refused" : "fence lifted");
	}
	return 0;
}

/* Same magic, number and direction; the size may differ (extensible). */
static bool sf_cmd_is(unsigned int cmd, unsigned int ref)
{
	return _IOC_TYPE(cmd) == _IOC_TYPE(ref) && _IOC_NR(cmd) == _IOC_NR(ref) &&
	       _IOC_DIR(cmd) == _IOC_DIR(ref);
}

static long sf_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct snowflake_dev *sf = &sf_dev;
	void __user *uptr = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	if (_IOC_TYPE(cmd) != SNOWFLAKE_IOC_MAGIC)
		return -ENOTTY;

	switch (_IOC_NR(cmd)) {
	case _IOC_NR(SNOWFLAKE_IOC_GET_CONFIG):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_GET_CONFIG))
			return -ENOTTY;
		return sf_ioctl_get_config(sf, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_SET_CONFIG):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_SET_CONFIG))
			return -ENOTTY;
		return sf_ioctl_set_config(sf, file, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_SET_IDS):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_SET_IDS))
			return -ENOTTY;
		return sf_ioctl_set_ids(sf, file, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_GET_STATS):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_GET_STATS))
			return -ENOTTY;
		return sf_ioctl_get_stats(sf, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_GET_FLOOR):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_GET_FLOOR))
			return -ENOTTY;
		return sf_ioctl_get_floor(sf, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_SET_FLOOR):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_SET_FLOOR))
			return -ENOTTY;
		return sf_ioctl_set_floor(sf, file, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_SET_FENCE):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_SET_FENCE))
			return -ENOTTY;
		return sf_ioctl_set_fence(sf, file, uptr, usize);
	case _IOC_NR(SNOWFLAKE_IOC_GET_FENCE):
		if (!sf_cmd_is(cmd, SNOWFLAKE_IOC_GET_FENCE))
			return -ENOTTY;
		return sf_ioctl_get_fence(sf, uptr, usize);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations sf_fops = {
	.owner		= THIS_MODULE,
	.open		= sf_open,
	.read_iter	= sf_read_iter,
	.poll		= sf_poll,
	.unlocked_ioctl	= sf_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

/* sysfs: /sys/class/misc/snowflake/, see docs/ABI/. */

static ssize_t worker_id_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	u32 v;

	spin_lock(&sf_dev.lock);
	v = sf_dev.core.cfg.worker_id;
	spin_unlock(&sf_dev.lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t datacenter_id_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	u32 v;

	spin_lock(&sf_dev.lock);
	v = sf_dev.core.cfg.datacenter_id;
	spin_unlock(&sf_dev.lock);
	return sysfs_emit(buf, "%u\n", v);
}

/* Set one of the two ids from a sysfs write, keeping the other. */
static ssize_t sf_store_id(const char *buf, size_t len, bool worker)
{
	struct snowflake_dev *sf = &sf_dev;
	u32 v, dc, wk;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (kstrtou32(buf, 10, &v))
		return -EINVAL;

	spin_lock(&sf->lock);
	dc = worker ? sf->core.cfg.datacenter_id : v;
	wk = worker ? v : sf->core.cfg.worker_id;
	ret = sf_core_set_ids(&sf->core, dc, wk, worker);
	spin_unlock(&sf->lock);

	if (ret)
		return ret;
	sf_wake_pollers(sf);
	return len;
}

static ssize_t worker_id_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t len)
{
	return sf_store_id(buf, len, true);
}

static ssize_t datacenter_id_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t len)
{
	return sf_store_id(buf, len, false);
}

static ssize_t floor_ms_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	u64 v;

	spin_lock(&sf_dev.lock);
	v = sf_dev.core.floor_ms;
	spin_unlock(&sf_dev.lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static ssize_t floor_ms_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t len)
{
	u64 v;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (kstrtou64(buf, 10, &v))
		return -EINVAL;
	ret = sf_set_floor(&sf_dev, v);
	return ret ? ret : len;
}

static ssize_t random_sequence_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	u32 flags;

	spin_lock(&sf_dev.lock);
	flags = sf_dev.core.cfg.flags;
	spin_unlock(&sf_dev.lock);
	return sysfs_emit(buf, "%u\n",
			  !!(flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE));
}

static ssize_t random_sequence_store(struct device *dev,
				     struct device_attribute *attr,
				     const char *buf, size_t len)
{
	unsigned int v;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (kstrtouint(buf, 10, &v) || v > 1)
		return -EINVAL;

	spin_lock(&sf_dev.lock);
	if (v)
		sf_dev.core.cfg.flags |= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	else
		sf_dev.core.cfg.flags &= ~SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
	spin_unlock(&sf_dev.lock);
	return len;
}

/*
 * instance_id: 32 hex digits that name this load of the module.  A reader
 * that saw the same value before knows that the generator it saw then is
 * the one it sees now, so nothing it remembers of it (its high-water mark)
 * can be ahead of it: one instance's clock never goes back.  Only a new
 * load starts from the wall clock again, and a new load draws a new id.
 * snowflake-floord(8) uses it to leave the floor alone on a restart of the
 * service.  Written once before misc_register(), so no lock.
 */
static ssize_t instance_id_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%16phN\n", sf_dev.instance_id);
}

static DEVICE_ATTR_RO(instance_id);

/*
 * Whether this kernel can tell the module of a VM fork (snowflake_compat.h:
 * Linux 5.18 with CONFIG_VMGENID).  Without it a clone keeps serving its
 * parent's worker id: snowflake-agent(8) warns, snowflake(4) says.
 */
static ssize_t vm_fork_notifier_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", SF_VMFORK_NOTIFIER);
}

static DEVICE_ATTR_RO(vm_fork_notifier);

static DEVICE_ATTR_RW(worker_id);
static DEVICE_ATTR_RW(datacenter_id);
static DEVICE_ATTR_RW(floor_ms);
static DEVICE_ATTR_RW(random_sequence);

/* Read-only values: one show function reads a field picked by the attribute. */
enum sf_value {
	SF_EPOCH_MS,
	SF_TIME_UNIT_MS,
	SF_TIMESTAMP_BITS,
	SF_DATACENTER_BITS,
	SF_WORKER_BITS,
	SF_SEQUENCE_BITS,
	SF_STRICT,
	SF_WORKER_SET,
	SF_REFUSING,
	SF_FENCED,
	SF_LAST_TIMESTAMP_MS,
	SF_CLOCK_MS,
	SF_CLOCK_OFFSET_MS,
	SF_IDS_ISSUED,
	SF_READS,
	SF_EXHAUSTED_WAITS,
	SF_EAGAIN,
	SF_CLOCK_CATCHUPS,
	SF_FLOOR_JUMPS,
	SF_REFUSED_READS,
	SF_FENCES,
	SF_CLOCK_CHECKS,
	SF_LEASE_DEADLINE_NS,
	SF_LEASE_EXPIRED,
	SF_LEASE_EXPIRIES,
	SF_LEASE_CEILING_MS,
	SF_LEASE_CEILING_REACHED,
	SF_LEASE_CEILING_HITS,
	SF_VM_FORKED,
	SF_VM_FORKS,
	SF_NR_VALUES
};

struct sf_value_attr {
	struct device_attribute attr;
	enum sf_value which;
};

static void sf_values(const struct sf_core *c,
		      const struct snowflake_stats *st, u64 *v)
{
	const struct snowflake_config *cfg = &c->cfg;

	v[SF_EPOCH_MS] = cfg->epoch_ms;
	v[SF_TIME_UNIT_MS] = cfg->time_unit_ms;
	v[SF_TIMESTAMP_BITS] = cfg->timestamp_bits;
	v[SF_DATACENTER_BITS] = cfg->datacenter_bits;
	v[SF_WORKER_BITS] = cfg->worker_bits;
	v[SF_SEQUENCE_BITS] = cfg->sequence_bits;
	v[SF_STRICT] = !!(st->state & SNOWFLAKE_STATE_STRICT);
	v[SF_WORKER_SET] = !!(st->state & SNOWFLAKE_STATE_WORKER_SET);
	v[SF_REFUSING] = !!(st->state & SNOWFLAKE_STATE_REFUSING);
	v[SF_FENCED] = !!(st->state & SNOWFLAKE_STATE_FENCED);
	v[SF_LAST_TIMESTAMP_MS] = st->last_timestamp_ms;
	v[SF_CLOCK_MS] = st->clock_ms;
	v[SF_CLOCK_OFFSET_MS] = st->clock_offset_ms;
	v[SF_IDS_ISSUED] = st->ids_issued;
	v[SF_READS] = st->reads;
	v[SF_EXHAUSTED_WAITS] = st->exhausted_waits;
	v[SF_EAGAIN] = st->eagain;
	v[SF_CLOCK_CATCHUPS] = st->clock_catchups;
	v[SF_FLOOR_JUMPS] = st->floor_jumps;
	v[SF_REFUSED_READS] = st->refused_reads;
	v[SF_FENCES] = c->fences;
	v[SF_CLOCK_CHECKS] = c->clock_checks;
	v[SF_LEASE_DEADLINE_NS] = c->deadline_ns;
	v[SF_LEASE_EXPIRED] = !!(st->state & SNOWFLAKE_STATE_EXPIRED);
	v[SF_LEASE_EXPIRIES] = c->lease_expiries;
	v[SF_LEASE_CEILING_MS] = c->ceiling_ms;
	v[SF_LEASE_CEILING_REACHED] = !!(st->state & SNOWFLAKE_STATE_CEILING);
	v[SF_LEASE_CEILING_HITS] = c->ceiling_hits;
	v[SF_VM_FORKED] = c->vm_forked;
	v[SF_VM_FORKS] = c->vm_forks;
}

static ssize_t sf_value_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct sf_value_attr *va = container_of(attr, struct sf_value_attr, attr);
	struct snowflake_stats st;
	struct sf_core c;
	u64 v[SF_NR_VALUES];
	u64 now = sf_now_ms(&sf_dev);

	spin_lock(&sf_dev.lock);
	sf_sync_vm_forks(&sf_dev);
	c = sf_dev.core;
	spin_unlock(&sf_dev.lock);

	sf_core_stats(&c, now, &st);
	sf_values(&c, &st, v);
	return sysfs_emit(buf, "%llu\n", v[va->which]);
}

#define SF_VALUE_ATTR(_name, _which)					\
	static struct sf_value_attr sf_attr_##_name = {			\
		.attr = __ATTR(_name, 0444, sf_value_show, NULL),	\
		.which = _which,					\
	}

SF_VALUE_ATTR(epoch_ms, SF_EPOCH_MS);
SF_VALUE_ATTR(time_unit_ms, SF_TIME_UNIT_MS);
SF_VALUE_ATTR(timestamp_bits, SF_TIMESTAMP_BITS);
SF_VALUE_ATTR(datacenter_bits, SF_DATACENTER_BITS);
SF_VALUE_ATTR(worker_bits, SF_WORKER_BITS);
SF_VALUE_ATTR(sequence_bits, SF_SEQUENCE_BITS);
SF_VALUE_ATTR(strict, SF_STRICT);
SF_VALUE_ATTR(worker_set, SF_WORKER_SET);
SF_VALUE_ATTR(refusing, SF_REFUSING);
SF_VALUE_ATTR(fenced, SF_FENCED);
SF_VALUE_ATTR(last_timestamp_ms, SF_LAST_TIMESTAMP_MS);
SF_VALUE_ATTR(clock_ms, SF_CLOCK_MS);
SF_VALUE_ATTR(clock_offset_ms, SF_CLOCK_OFFSET_MS);
SF_VALUE_ATTR(ids_issued, SF_IDS_ISSUED);
SF_VALUE_ATTR(reads, SF_READS);
SF_VALUE_ATTR(exhausted_waits, SF_EXHAUSTED_WAITS);
SF_VALUE_ATTR(eagain, SF_EAGAIN);
SF_VALUE_ATTR(clock_catchups, SF_CLOCK_CATCHUPS);
SF_VALUE_ATTR(floor_jumps, SF_FLOOR_JUMPS);
SF_VALUE_ATTR(refused_reads, SF_REFUSED_READS);
SF_VALUE_ATTR(fences, SF_FENCES);
SF_VALUE_ATTR(clock_checks, SF_CLOCK_CHECKS);
SF_VALUE_ATTR(lease_deadline_ns, SF_LEASE_DEADLINE_NS);
SF_VALUE_ATTR(lease_expired, SF_LEASE_EXPIRED);
SF_VALUE_ATTR(lease_expiries, SF_LEASE_EXPIRIES);
SF_VALUE_ATTR(lease_ceiling_ms, SF_LEASE_CEILING_MS);
SF_VALUE_ATTR(lease_ceiling_reached, SF_LEASE_CEILING_REACHED);
SF_VALUE_ATTR(lease_ceiling_hits, SF_LEASE_CEILING_HITS);
SF_VALUE_ATTR(vm_forked, SF_VM_FORKED);
SF_VALUE_ATTR(vm_forks, SF_VM_FORKS);

static struct attribute *sf_attrs[] = {
	&dev_attr_worker_id.attr,
	&dev_attr_datacenter_id.attr,
	&dev_attr_floor_ms.attr,
	&dev_attr_random_sequence.attr,
	&dev_attr_instance_id.attr,
	&sf_attr_epoch_ms.attr.attr,
	&sf_attr_time_unit_ms.attr.attr,
	&sf_attr_timestamp_bits.attr.attr,
	&sf_attr_datacenter_bits.attr.attr,
	&sf_attr_worker_bits.attr.attr,
	&sf_attr_sequence_bits.attr.attr,
	&sf_attr_strict.attr.attr,
	&sf_attr_worker_set.attr.attr,
	&sf_attr_refusing.attr.attr,
	&sf_attr_fenced.attr.attr,
	&sf_attr_last_timestamp_ms.attr.attr,
	&sf_attr_clock_ms.attr.attr,
	&sf_attr_clock_offset_ms.attr.attr,
	&sf_attr_lease_deadline_ns.attr.attr,
	&sf_attr_lease_expired.attr.attr,
	&sf_attr_lease_ceiling_ms.attr.attr,
	&sf_attr_lease_ceiling_reached.attr.attr,
	&sf_attr_vm_forked.attr.attr,
	&dev_attr_vm_fork_notifier.attr,
	NULL,
};

static const struct attribute_group sf_group = {
	.attrs = sf_attrs,
};

static struct attribute *sf_stat_attrs[] = {
	&sf_attr_ids_issued.attr.attr,
	&sf_attr_reads.attr.attr,
	&sf_attr_exhausted_waits.attr.attr,
	&sf_attr_eagain.attr.attr,
	&sf_attr_clock_catchups.attr.attr,
	&sf_attr_floor_jumps.attr.attr,
	&sf_attr_refused_reads.attr.attr,
	&sf_attr_fences.attr.attr,
	&sf_attr_clock_checks.attr.attr,
	&sf_attr_lease_expiries.attr.attr,
	&sf_attr_lease_ceiling_hits.attr.attr,
	&sf_attr_vm_forks.attr.attr,
	NULL,
};

static const struct attribute_group sf_stat_group = {
	.name = "statistics",
	.attrs = sf_stat_attrs,
};

static const struct attribute_group *sf_groups[] = {
	&sf_group,
	&sf_stat_group,
	NULL,
};

/* ---- Shared with /dev/uuidv7 (snowflake_uuid.c), see snowflake_dev.h ---- */

/**
 * sf_gen_lock() - the generator's spinlock
 *
 * Return: the lock that serialises the generator and /dev/uuidv7's state.
 */
spinlock_t *sf_gen_lock(void)
{
	return &sf_dev.lock;
}

/**
 * sf_gen_lock_clock() - take the generator's lock and read its clock
 *
 * The clock as /dev/snowflake uses it: the raw clock, read before the lock
 * (sf_lock_now(): never under it, and not more than two jiffies old once
 * the lock is held), plus the forward-only offset (catch-up, floor jumps),
 * never below the floor.  Release with sf_gen_unlock().
 *
 * Return: Unix ms.
 */
u64 sf_gen_lock_clock(void)
	__acquires(&sf_dev.lock)
{
	const struct sf_core *c = &sf_dev.core;
	u64 clock = sf_lock_now(&sf_dev) + c->offset_ms;

	return max(clock, c->floor_ms);
}

/**
 * sf_gen_unlock() - release what sf_gen_lock_clock() took
 */
void sf_gen_unlock(void)
	__releases(&sf_dev.lock)
{
	spin_unlock(&sf_dev.lock);
}

/* ---- End of what is shared with /dev/uuidv7 ---- */

/* Build the generator from the module parameters; says which one is wrong. */
static int __init sf_setup(struct snowflake_dev *sf)
{
	struct snowflake_config cfg = {
		.epoch_ms = param_epoch_ms,
		.time_unit_ms = param_time_unit_ms,
		.datacenter_id = param_datacenter_id,
		.worker_id = param_worker_id < 0 ? 0 : param_worker_id,
	};
	const char *why = NULL;
	u64 now;
	int ret;

	/* The widths are u8 in the configuration: refuse before narrowing. */
	if (param_timestamp_bits < 1 || param_timestamp_bits > SNOWFLAKE_ID_BITS) {
		pr_err("invalid timestamp_bits=%u: must be 1..63\n", param_timestamp_bits);
		return -EINVAL;
	}
	if (param_datacenter_bits > SNOWFLAKE_MAX_NODE_BITS) {
		pr_err("invalid datacenter_bits=%u: must be 0..31\n", param_datacenter_bits);
		return -EINVAL;
	}
	if (param_worker_bits > SNOWFLAKE_MAX_NODE_BITS) {
		pr_err("invalid worker_bits=%u: must be 0..31\n", param_worker_bits);
		return -EINVAL;
	}
	if (param_sequence_bits > SNOWFLAKE_MAX_SEQUENCE_BITS) {
		pr_err("invalid sequence_bits=%u: must be 0..31\n", param_sequence_bits);
		return -EINVAL;
	}
	if (param_worker_id < -1) {
		pr_err("invalid worker_id=%d\n", param_worker_id);
		return -EINVAL;
	}
	cfg.timestamp_bits = param_timestamp_bits;
	cfg.datacenter_bits = param_datacenter_bits;
	cfg.worker_bits = param_worker_bits;
	cfg.sequence_bits = param_sequence_bits;
	if (param_random_sequence)
		cfg.flags |= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;

	sf->anchor_ns = ktime_get_real_ns() - ktime_get_boottime_ns();
	sf->catchup_ms = param_catchup_threshold_ms;
	now = sf_now_ms(sf);

	ret = sf_core_init(&sf->core, &cfg, now, &why);
	if (ret) {
		pr_err("invalid parameters: %s (epoch_ms=%llu time_unit_ms=%u layout %u/%u/%u/%u datacenter_id=%u worker_id=%d)\n",
		       why, param_epoch_ms, param_time_unit_ms,
		       param_timestamp_bits, param_datacenter_bits,
		       param_worker_bits, param_sequence_bits,
		       param_datacenter_id, param_worker_id);
		return ret;
	}
	ret = sf_core_set_floor(&sf->core, param_floor_ms, now);
	if (ret) {
		pr_err("invalid floor_ms=%llu: above 2^63-1 ms or beyond what timestamp_bits can hold\n",
		       param_floor_ms);
		return ret;
	}
	sf_core_set_strict(&sf->core, param_strict, param_worker_id >= 0);
	return 0;
}

static int __init snowflake_init(void)
{
	struct snowflake_dev *sf = &sf_dev;
	int ret;

	BUILD_BUG_ON(sizeof(struct snowflake_config) != SNOWFLAKE_CONFIG_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct snowflake_ids) != SNOWFLAKE_IDS_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct snowflake_stats) != SNOWFLAKE_STATS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct snowflake_floor) != SNOWFLAKE_FLOOR_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct snowflake_fence) != SNOWFLAKE_FENCE_SIZE_VER0);
	BUILD_BUG_ON(SNOWFLAKE_DEFAULT_TIMESTAMP_BITS + SNOWFLAKE_DEFAULT_DATACENTER_BITS +
		     SNOWFLAKE_DEFAULT_WORKER_BITS + SNOWFLAKE_DEFAULT_SEQUENCE_BITS >
		     SNOWFLAKE_ID_BITS);
	BUILD_BUG_ON(SNOWFLAKE_MAX_IDS_PER_READ % SF_CHUNK);

	ret = sf_setup(sf);
	if (ret)
		return ret;

	spin_lock_init(&sf->lock);
	init_waitqueue_head(&sf->wq);
	hrtimer_setup(&sf->tick_timer, sf_tick_timer_fn, CLOCK_BOOTTIME,
		      HRTIMER_MODE_ABS);
	INIT_DEFERRABLE_WORK(&sf->catchup_work, sf_catchup_fn);
	INIT_WORK(&sf->vmfork_work, sf_vmfork_fn);
	atomic_set(&sf->vm_forks, 0);
	sf->vmfork_nb.notifier_call = sf_vmfork_notify;
	sf->rnd = get_random_u32();
	/*
	 * A reader takes a match as "the same generator" (instance_id_show()),
	 * so two loads must not share an id: 128 bits from the kernel's CRNG,
	 * which is seeded at boot (the CPU's RNG, the cycle counter, interrupt
	 * timing), drawn afresh by every load.  A VM clone copies them with
	 * the rest of memory: vm_forked covers that case.
	 */
	get_random_bytes(sf->instance_id, sizeof(sf->instance_id));

	sf->misc.minor = MISC_DYNAMIC_MINOR;
	sf->misc.name = SNOWFLAKE_DEVICE_NAME;
	sf->misc.fops = &sf_fops;
	sf->misc.groups = sf_groups;
	sf->misc.mode = 0444;

	/* Before the node exists: a fork from now on is seen by every read. */
	ret = register_random_vmfork_notifier(&sf->vmfork_nb);
	if (ret) {
		pr_err("cannot register for VM fork notifications: %d\n", ret);
		return ret;
	}
	if (!SF_VMFORK_NOTIFIER)
		pr_warn("this kernel does not report VM forks (Linux 5.18 with CONFIG_VMGENID does): a cloned or snapshot-restored VM keeps its worker id; see vm_fork_notifier\n");

	ret = misc_register(&sf->misc);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", SNOWFLAKE_DEVICE_NAME, ret);
		goto err_vmfork;
	}

	/* /dev/uuidv7: the same lock and clock (snowflake_uuid.c). */
	ret = sf_uuid_register();
	if (ret)
		goto err_deregister;

	if (sf->catchup_ms)
		queue_delayed_work(system_power_efficient_wq,
				   &sf->catchup_work, HZ);
	pr_info("ready: layout %u/%u/%u/%u, epoch %llu, unit %u ms, datacenter %u, worker %u%s\n",
		sf->core.cfg.timestamp_bits, sf->core.cfg.datacenter_bits,
		sf->core.cfg.worker_bits, sf->core.cfg.sequence_bits,
		sf->core.cfg.epoch_ms, sf->core.cfg.time_unit_ms,
		sf->core.cfg.datacenter_id, sf->core.cfg.worker_id,
		sf->core.refusing ? ", strict: reads refused until a worker id is set" : "");
	/*
	 * A host never given an identity serves the default ids, as every
	 * other such host does: said at load, so that it is in the journal
	 * of every boot (snowflake(1), "config --save").
	 */
	if (!sf->core.strict && !sf->core.worker_set)
		pr_notice("no worker id was given to this host: it issues IDs as datacenter %u, worker %u, as every host without one does; give it its own with: snowflake config --datacenter D --worker W --save\n",
			  sf->core.cfg.datacenter_id, sf->core.cfg.worker_id);
	return 0;

err_deregister:
	misc_deregister(&sf->misc);
err_vmfork:
	unregister_random_vmfork_notifier(&sf->vmfork_nb);
	cancel_work_sync(&sf->vmfork_work);
	return ret;
}

static void __exit snowflake_exit(void)
{
	struct snowflake_dev *sf = &sf_dev;

	cancel_delayed_work_sync(&sf->catchup_work);
	sf_uuid_deregister();
	misc_deregister(&sf->misc);
	unregister_random_vmfork_notifier(&sf->vmfork_nb);
	cancel_work_sync(&sf->vmfork_work);
	hrtimer_cancel(&sf->tick_timer);
}

module_init(snowflake_init);
module_exit(snowflake_exit);

MODULE_AUTHOR("snowflake developers");
MODULE_DESCRIPTION("/dev/snowflake: unique, time-ordered 64-bit IDs");
MODULE_LICENSE("GPL");
MODULE_VERSION(SNOWFLAKE_VERSION);
