// SPDX-License-Identifier: GPL-2.0
/*
 * The Snowflake generator core.  See snowflake_core.h: no kernel calls here,
 * time comes in as an argument and the caller serialises all calls.
 *
 * An ID is (tick << ts_shift) | node | sequence.  Within one tick the IDs
 * of consecutive sequence numbers are consecutive integers, so a block of
 * IDs is just its first ID and a count.
 *
 * Order: the tick used is max(clock tick, floor tick, last tick), and a tick
 * hands out each sequence number once, so every reservation returns IDs
 * above all earlier ones as long as the node bits do not shrink within a
 * tick; a change of ids therefore retires the current tick.
 *
 * The lease's window (sf_core_set_window()): that same tick, the one
 * actually used, is compared with the ceiling before it is used, so no ID
 * is stamped above the ceiling; the floor bounds it from below.
 */
#include "snowflake_core.h"

/*
 * The first tick whose start is above @ceiling_ms: 0 when even tick 0
 * (the epoch) is; U64_MAX for no ceiling (no tick reaches it: ticks are
 * below 2^63).
 */
static u64 sf_ceiling_end(const struct snowflake_config *cfg, u64 ceiling_ms)
{
	if (ceiling_ms == SNOWFLAKE_NO_CEILING)
		return U64_MAX;
	if (ceiling_ms < cfg->epoch_ms)
		return 0;
	return div_u64(ceiling_ms - cfg->epoch_ms, cfg->time_unit_ms) + 1;
}

/* Ticks since the epoch at @ms, rounded up. */
static u64 sf_tick_up(const struct snowflake_config *cfg, u64 ms)
{
	if (ms <= cfg->epoch_ms)
		return 0;
	return div_u64(ms - cfg->epoch_ms - 1, cfg->time_unit_ms) + 1;
}

static u64 sf_node(const struct snowflake_config *cfg)
{
	return ((u64)cfg->datacenter_id << (cfg->sequence_bits + cfg->worker_bits)) |
	       ((u64)cfg->worker_id << cfg->sequence_bits);
}

static bool sf_same_layout(const struct snowflake_config *a,
			   const struct snowflake_config *b)
{
	return a->epoch_ms == b->epoch_ms &&
	       a->time_unit_ms == b->time_unit_ms &&
	       a->timestamp_bits == b->timestamp_bits &&
	       a->datacenter_bits == b->datacenter_bits &&
	       a->worker_bits == b->worker_bits &&
	       a->sequence_bits == b->sequence_bits;
}

static void sf_update_refusing(struct sf_core *c)
{
	c->refusing = (c->strict && !c->worker_set) ? SF_REFUSE_NO_WORKER : 0;
	if (c->fenced)
		c->refusing |= SF_REFUSE_FENCED;
	if (c->vm_forked)
		c->refusing |= SF_REFUSE_VM_FORK;
}

/**
 * sf_core_check_config() - validate a configuration on its own
 * @cfg:	the configuration.
 * @why:	set to a message naming what is wrong, on error.
 *
 * Checks what does not depend on the time or the generator's state.
 *
 * Return: 0, or -EINVAL.
 */
int sf_core_check_config(const struct snowflake_config *cfg, const char **why)
{
	unsigned int sum;

	if (cfg->__reserved) {
		*why = "reserved field is not zero";
		return -EINVAL;
	}
	if (cfg->flags & ~SNOWFLAKE_CONFIG_FLAGS_ALL) {
		*why = "unknown flags";
		return -EINVAL;
	}
	if (cfg->time_unit_ms < 1 ||
	    cfg->time_unit_ms > SNOWFLAKE_MAX_TIME_UNIT_MS) {
		*why = "time_unit_ms must be 1..3600000";
		return -EINVAL;
	}
	if (cfg->timestamp_bits < 1) {
		*why = "timestamp_bits must be at least 1";
		return -EINVAL;
	}
	if (cfg->datacenter_bits > SNOWFLAKE_MAX_NODE_BITS ||
	    cfg->worker_bits > SNOWFLAKE_MAX_NODE_BITS) {
		*why = "datacenter_bits and worker_bits must be 0..31";
		return -EINVAL;
	}
	if (cfg->sequence_bits > SNOWFLAKE_MAX_SEQUENCE_BITS) {
		*why = "sequence_bits must be 0..31";
		return -EINVAL;
	}
	sum = cfg->timestamp_bits + cfg->datacenter_bits + cfg->worker_bits +
	      cfg->sequence_bits;
	if (sum > SNOWFLAKE_ID_BITS) {
		*why = "the four widths must sum to 63 or less";
		return -EINVAL;
	}
	if (cfg->datacenter_id > sf_mask(cfg->datacenter_bits)) {
		*why = "datacenter_id does not fit datacenter_bits";
		return -EINVAL;
	}
	if (cfg->worker_id > sf_mask(cfg->worker_bits)) {
		*why = "worker_id does not fit worker_bits";
		return -EINVAL;
	}
	return 0;
}

/**
 * sf_core_check_ids() - validate a SNOWFLAKE_IOC_SET_IDS argument on its own
 * @ids:	the structure as copied in (zero past what the caller gave).
 * @size:	how many bytes the caller gave (_IOC_SIZE).
 *
 * Whether the ids fit their widths and the window fits the layout depends
 * on the generator: sf_core_set_ids_arg().
 *
 * Return: 0, or -EINVAL for an unknown flag, a nonzero @ids->__reserved,
 * SNOWFLAKE_IDS_DEADLINE without a @ids->deadline_ns (a structure shorter
 * than SNOWFLAKE_IDS_SIZE_VER1 has none) or a @ids->deadline_ns without it,
 * SNOWFLAKE_IDS_WINDOW in a structure shorter than SNOWFLAKE_IDS_SIZE_VER2
 * or with a floor above its ceiling, or a window without that flag.
 */
int sf_core_check_ids(const struct snowflake_ids *ids, size_t size)
{
	bool deadline = ids->flags & SNOWFLAKE_IDS_DEADLINE;

	if ((ids->flags & ~SNOWFLAKE_IDS_FLAGS_ALL) || ids->__reserved ||
	    ids->__reserved2)
		return -EINVAL;
	if (!(ids->flags & SNOWFLAKE_IDS_VM_FORKS) && ids->vm_forks)
		return -EINVAL;
	/* A deadline only with its flag, and never 0 (a VER0 structure). */
	if (deadline != !!ids->deadline_ns)
		return -EINVAL;
	/*
	 * A window only with its flag, and the flag only with the fields:
	 * a shorter structure's zeros would read as a ceiling at 0.
	 */
	if (!(ids->flags & SNOWFLAKE_IDS_WINDOW))
		return ids->floor_ms || ids->ceiling_ms ? -EINVAL : 0;
	if (size < SNOWFLAKE_IDS_SIZE_VER2)
		return -EINVAL;
	if (ids->floor_ms > ids->ceiling_ms)
		return -EINVAL;
	return 0;
}

/**
 * sf_core_check_floor() - validate a SNOWFLAKE_IOC_SET_FLOOR argument on its own
 * @fl:		the structure as copied in.
 *
 * Whether the floor fits the timestamp width: sf_core_set_floor().
 *
 * Return: 0, or -EINVAL when @fl->last_timestamp_ms (output only) is not zero.
 */
int sf_core_check_floor(const struct snowflake_floor *fl)
{
	return fl->last_timestamp_ms ? -EINVAL : 0;
}

/**
 * sf_core_check_fence() - validate a SNOWFLAKE_IOC_SET_FENCE argument
 * @fe:		the argument as copied from userspace.
 *
 * Return: 0, or -EINVAL for an unknown flag or a nonzero @__reserved or
 * @fences (an output field).
 */
int sf_core_check_fence(const struct snowflake_fence *fe)
{
	if ((fe->flags & ~SNOWFLAKE_FENCE_FLAGS_ALL) || fe->__reserved ||
	    fe->fences)
		return -EINVAL;
	return 0;
}

/* Derived fields of a new layout; the tick state starts over. */
static void sf_apply_layout(struct sf_core *c, const struct snowflake_config *cfg)
{
	c->seq_max = sf_mask(cfg->sequence_bits);
	c->ts_max = sf_mask(cfg->timestamp_bits);
	c->ts_shift = cfg->datacenter_bits + cfg->worker_bits +
		      cfg->sequence_bits;
	c->floor_tick = sf_tick_up(cfg, c->floor_ms);
	c->ceiling_end = sf_ceiling_end(cfg, c->ceiling_ms);
	c->ceiling_reached = false;
	c->last_tick = 0;
	c->next_seq = 0;
}

static int sf_check_layout(const struct sf_core *c,
			   const struct snowflake_config *cfg, u64 now_ms,
			   const char **why)
{
	u64 clock = sf_clock(c, now_ms);
	u64 ts_max = sf_mask(cfg->timestamp_bits);

	if (cfg->epoch_ms > clock) {
		*why = "epoch_ms is in the future";
		return -EINVAL;
	}
	if (sf_tick(cfg, clock) > ts_max || sf_tick_up(cfg, c->floor_ms) > ts_max) {
		*why = "timestamp does not fit timestamp_bits from epoch_ms";
		return -EOVERFLOW;
	}
	return 0;
}

/*
 * Strict mode ends only when @assign: a call that means to assign the
 * worker id (SET_IDS with SNOWFLAKE_IDS_ASSIGN_WORKER, a write of the
 * worker_id sysfs file, the worker_id parameter).  Rewriting the ids with
 * the values just read (the CLI changing only the datacenter id, a GET/SET
 * round trip of the configuration) must never let a strict host that is
 * still waiting for its lease issue IDs as worker 0.
 */
static void sf_apply_ids(struct sf_core *c, u32 datacenter_id, u32 worker_id,
			 bool assign)
{
	if (datacenter_id != c->cfg.datacenter_id ||
	    worker_id != c->cfg.worker_id)
		c->next_seq = c->seq_max + 1;

	c->cfg.datacenter_id = datacenter_id;
	c->cfg.worker_id = worker_id;
	c->node = sf_node(&c->cfg);
	if (assign)
		c->worker_set = true;
	sf_update_refusing(c);
}

/**
 * sf_core_init() - start a generator
 * @c:		the state to fill.
 * @cfg:	the configuration.
 * @now_ms:	raw time now.
 * @why:	set to a message naming what is wrong, on error.
 *
 * The worker id counts as set explicitly; see sf_core_set_strict().
 *
 * Return: 0, -EINVAL (see sf_core_set_config()) or -EOVERFLOW.
 */
int sf_core_init(struct sf_core *c, const struct snowflake_config *cfg,
		 u64 now_ms, const char **why)
{
	int ret;

	*c = (struct sf_core){ .raw_seen_ms = now_ms };
	ret = sf_core_check_config(cfg, why);
	if (!ret)
		ret = sf_check_layout(c, cfg, now_ms, why);
	if (ret)
		return ret;

	c->cfg = *cfg;
	c->deadline_ms = U64_MAX;
	c->deadline_ns = SNOWFLAKE_NO_DEADLINE;
	c->ceiling_ms = SNOWFLAKE_NO_CEILING;
	sf_apply_layout(c, cfg);
	sf_apply_ids(c, cfg->datacenter_id, cfg->worker_id, true);
	return 0;
}

/**
 * sf_core_set_config() - change the configuration, all or nothing
 * @c:		the generator.
 * @cfg:	the new configuration.
 * @now_ms:	raw time now.
 * @why:	set to a message naming what is wrong, on error.
 *
 * Epoch, time unit and widths may change only until the first ID; the ids
 * and flags at any time.  It never assigns the worker id in the sense of
 * strict mode (see sf_apply_ids()): a GET_CONFIG/SET_CONFIG round trip
 * carries the ids it read.
 *
 * Return: 0; -EINVAL for a bad configuration or an epoch in the future;
 * -EBUSY for a layout change after the first ID; -EOVERFLOW when the clock
 * or the floor does not fit the timestamp width.
 */
int sf_core_set_config(struct sf_core *c, const struct snowflake_config *cfg,
		       u64 now_ms, const char **why)
{
	int ret;

	ret = sf_core_check_config(cfg, why);
	if (ret)
		return ret;

	if (!sf_same_layout(cfg, &c->cfg)) {
		if (c->issued) {
			*why = "epoch, time unit and widths are fixed once an ID was issued";
			return -EBUSY;
		}
		ret = sf_check_layout(c, cfg, now_ms, why);
		if (ret)
			return ret;
		sf_apply_layout(c, cfg);
	}

	c->cfg.epoch_ms = cfg->epoch_ms;
	c->cfg.time_unit_ms = cfg->time_unit_ms;
	c->cfg.timestamp_bits = cfg->timestamp_bits;
	c->cfg.datacenter_bits = cfg->datacenter_bits;
	c->cfg.worker_bits = cfg->worker_bits;
	c->cfg.sequence_bits = cfg->sequence_bits;
	c->cfg.flags = cfg->flags;
	sf_apply_ids(c, cfg->datacenter_id, cfg->worker_id, false);
	return 0;
}

/**
 * sf_core_set_ids() - change the datacenter and worker id
 * @c:			the generator.
 * @datacenter_id:	new datacenter id.
 * @worker_id:		new worker id.
 * @assign:		this call means to assign the worker id, which ends
 *			strict mode's refusal; false for a rewrite of the ids
 *			(see sf_apply_ids()).
 *
 * Allowed at any time.  The IDs that follow come from a later tick than any
 * issued, so they stay above them whatever the new ids are.
 *
 * Return: 0, or -EINVAL when an id does not fit its width.
 */
int sf_core_set_ids(struct sf_core *c, u32 datacenter_id, u32 worker_id,
		    bool assign)
{
	if (datacenter_id > sf_mask(c->cfg.datacenter_bits) ||
	    worker_id > sf_mask(c->cfg.worker_bits))
		return -EINVAL;

	sf_apply_ids(c, datacenter_id, worker_id, assign);
	return 0;
}

/**
 * sf_core_set_strict() - strict mode: refuse reads until a worker id is set
 * @c:		the generator.
 * @strict:	strict mode on or off.
 * @worker_set:	whether the worker id counts as set explicitly.
 */
void sf_core_set_strict(struct sf_core *c, bool strict, bool worker_set)
{
	c->strict = strict;
	c->worker_set = worker_set;
	sf_update_refusing(c);
}

/**
 * sf_core_set_fence() - fence the generator, or lift the fence
 * @c:		the generator.
 * @on:		true: refuse reads (-ENOTCONN) until the fence is lifted.
 *
 * Independent of strict mode: reads are served only when neither refuses.
 * Fencing a fenced generator, or lifting a fence that is not there, changes
 * nothing.  The IDs issued after the fence is lifted stay above all earlier
 * ones: fencing does not touch the clock or the tick state.
 *
 * Return: true when the state changed.
 */
bool sf_core_set_fence(struct sf_core *c, bool on)
{
	if (c->fenced == on)
		return false;
	c->fenced = on;
	if (on)
		c->fences++;
	sf_update_refusing(c);
	return true;
}

/* Would sf_core_set_floor() take @floor_ms?  0 or -EOVERFLOW. */
static int sf_check_floor(const struct sf_core *c, u64 floor_ms)
{
	if (floor_ms <= c->floor_ms)
		return 0;
	if (floor_ms > SF_MAX_FLOOR_MS ||
	    sf_tick_up(&c->cfg, floor_ms) > c->ts_max)
		return -EOVERFLOW;
	return 0;
}

/*
 * Raise the floor to @floor_ms, which sf_check_floor() accepted.
 *
 * A floor above the generator's clock moves the clock to the start of the
 * floor's tick, measured from the raw time @now_ms.  A reading that is S ms
 * stale when it is used moves the clock S ms too far: the host then stamps
 * S ms ahead of the floor from the start and reaches a lease's ceiling S ms
 * early (never a wrong ID: the floor only bounds from below, and the ceiling
 * check is with the tick actually used).  S is bounded twice.  The caller
 * bounds it as for reads (the driver: sf_lock_now(), two jiffies plus the ms
 * rounding).  And the jump is measured from the latest raw time any call
 * passed in (@c->raw_seen_ms, kept under the same lock), not from an older
 * @now_ms: every reading was taken before it was passed in, so the latest is
 * never later than real time, and the clock never ends up behind the start
 * of the floor's tick (sf_core_tick() keeps IDs at or above the floor's
 * tick in any case).
 */
static void sf_raise_floor(struct sf_core *c, u64 floor_ms, u64 now_ms)
{
	u64 tick, target, clock;

	if (now_ms > c->raw_seen_ms)
		c->raw_seen_ms = now_ms;
	if (floor_ms <= c->floor_ms)
		return;

	tick = sf_tick_up(&c->cfg, floor_ms);
	c->floor_ms = floor_ms;
	c->floor_tick = tick;

	target = floor_ms;
	if (floor_ms > c->cfg.epoch_ms)
		target = c->cfg.epoch_ms + tick * c->cfg.time_unit_ms;
	clock = sf_clock(c, c->raw_seen_ms);
	if (clock < target) {
		c->offset_ms += target - clock;
		c->stats.floor_jumps++;
	}
}

/**
 * sf_core_set_floor() - raise the floor
 * @c:		the generator.
 * @floor_ms:	no ID may get a timestamp below this (Unix ms).
 * @now_ms:	raw time now; the caller bounds how stale it may be (see
 *		sf_raise_floor()).
 *
 * A floor at or below the current one changes nothing.  A floor above the
 * generator's clock moves the clock forward to the start of the floor's tick.
 * A floor above the lease's ceiling is taken too: reads are then refused
 * (sf_core_past_ceiling()), never stamped above the ceiling.
 *
 * Return: 0, or -EOVERFLOW when the floor does not fit the timestamp width
 * or is above SF_MAX_FLOOR_MS.
 */
int sf_core_set_floor(struct sf_core *c, u64 floor_ms, u64 now_ms)
{
	int ret = sf_check_floor(c, floor_ms);

	if (!ret)
		sf_raise_floor(c, floor_ms, now_ms);
	return ret;
}

/**
 * sf_core_catch_up() - move the clock forward to a wall clock that is ahead
 * @c:			the generator.
 * @ahead_ms:		how far the wall clock is ahead of the raw clock, in
 *			whole ms rounded down from the difference of the two
 *			clocks in ns (0 when it is behind).
 * @threshold_ms:	catch up only when the wall clock is more than this
 *			ahead of the generator's clock; 0 never catches up.
 *
 * The offset becomes @ahead_ms itself.  Because the caller rounds the ns
 * difference down (and reads the wall clock before the raw clock), the
 * generator's clock, raw ms + offset, is then never later than the wall
 * clock in ms: floor(raw) + floor(wall - raw) <= floor(wall).  An offset
 * made of two clocks already truncated to ms could be 1 ms too large.
 * The clock never moves back: a smaller @ahead_ms changes nothing.
 *
 * Return: true when the clock moved.
 */
bool sf_core_catch_up(struct sf_core *c, u64 ahead_ms, u64 threshold_ms)
{
	c->clock_checks++;
	if (!threshold_ms || ahead_ms <= c->offset_ms ||
	    ahead_ms - c->offset_ms <= threshold_ms)
		return false;

	c->offset_ms = ahead_ms;
	c->stats.clock_catchups++;
	return true;
}

/**
 * sf_core_set_deadline() - the lease's deadline: refuse reads from then on
 * @c:			the generator.
 * @deadline_ns:	the deadline as given (CLOCK_BOOTTIME ns; kept for
 *			sysfs), SNOWFLAKE_NO_DEADLINE for none.
 * @deadline_ms:	the same time on the raw clock, rounded down to ms
 *			(U64_MAX for none): reserve and peek refuse from the
 *			raw ms in which the deadline falls, so never after it.
 *
 * The deadline is compared with the raw time the caller read for the
 * reservation; the caller bounds how stale that reading may be (the
 * driver: two jiffies, see sf_lock_now()).  Every ID reserved under a
 * deadline therefore comes from a clock reading before it.  Moving the
 * deadline (later: a renewal; earlier) starts a new lease: a later expiry
 * counts again.
 */
void sf_core_set_deadline(struct sf_core *c, u64 deadline_ns, u64 deadline_ms)
{
	c->deadline_ns = deadline_ns;
	c->deadline_ms = deadline_ms;
	c->expired = false;
}

/**
 * sf_core_vm_fork() - the virtual machine was cloned or restored
 * @c:		the generator.
 * @vm_forks:	the number of VM forks the kernel has reported since load.
 *
 * A VM restored from a snapshot, or a clone, runs on with its parent's ids
 * and its parent's clock: it would issue the very IDs its parent issues
 * after the snapshot.  From the first reservation after the caller learns
 * of the fork, reads are refused until sf_core_rearm().  A count already
 * seen changes nothing.
 */
void sf_core_vm_fork(struct sf_core *c, u32 vm_forks)
{
	if (vm_forks == c->vm_forks)
		return;
	c->vm_forks = vm_forks;
	c->vm_forked = true;
	sf_update_refusing(c);
}

/**
 * sf_core_check_vm_forks() - is a SET_IDS made for the current VM forks?
 * @c:		the generator.
 * @ids:	the argument, already checked by sf_core_check_ids().
 *
 * Return: 0, or -ESTALE when @ids carries SNOWFLAKE_IDS_VM_FORKS and a
 * count other than the one the generator has seen: the caller's identity
 * (its lease, its owner id) was made before a fork it does not know of.
 */
int sf_core_check_vm_forks(const struct sf_core *c,
			   const struct snowflake_ids *ids)
{
	if ((ids->flags & SNOWFLAKE_IDS_VM_FORKS) && ids->vm_forks != c->vm_forks)
		return -ESTALE;
	return 0;
}

/**
 * sf_core_rearm() - end a VM fork's refusal, after a SET_IDS that took effect
 * @c:		the generator.
 * @ids:	the argument (sf_core_check_vm_forks() passed).
 *
 * Only a call that assigns the worker id for the current count of forks
 * re-arms: a new pair from a new lease, or an administrator's deliberate
 * re-arm of static ids.
 */
void sf_core_rearm(struct sf_core *c, const struct snowflake_ids *ids)
{
	u32 both = SNOWFLAKE_IDS_ASSIGN_WORKER | SNOWFLAKE_IDS_VM_FORKS;

	if ((ids->flags & both) != both || !c->vm_forked)
		return;
	c->vm_forked = false;
	sf_update_refusing(c);
}

/**
 * sf_core_check_window() - would sf_core_set_window() take this window?
 * @c:		the generator.
 * @floor_ms:	the window's floor (0: leave the floor as it is).
 * @ceiling_ms:	the window's ceiling (SNOWFLAKE_NO_CEILING: none).
 *
 * An ID's timestamp is the start of its tick (epoch + tick * unit), so a
 * window can serve only if the start of some tick lies in [@floor_ms,
 * @ceiling_ms]: the first tick at or above the floor (sf_tick_up(), the
 * floor's tick that sf_core_tick() never goes below) must be below the
 * ceiling's end (sf_ceiling_end(), the first tick that
 * sf_core_past_ceiling() refuses).  With a unit above 1 ms a window of
 * several ms may hold none (unit 10, epoch 0: [1001, 1009]); every read
 * would fail with -ENOTCONN, so it is refused here, before anything
 * changes.  This covers a ceiling below the epoch (its end is tick 0) and
 * a floor above the ceiling (sf_core_check_ids() refuses that without a
 * generator).  The window is judged on its own: the device's floor, if
 * higher, may still refuse reads (a ceiling below it is taken and
 * refuses, as a SET_FLOOR above the ceiling).
 *
 * Return: 0; -EINVAL for a ceiling below the epoch (before the floor is
 * looked at, as ever) or when no tick starts within the window;
 * -EOVERFLOW for a floor that sf_core_set_floor() would refuse.
 */
int sf_core_check_window(const struct sf_core *c, u64 floor_ms, u64 ceiling_ms)
{
	int ret;

	/* A ceiling below the epoch is refused whatever the floor. */
	if (ceiling_ms < c->cfg.epoch_ms)
		return -EINVAL;
	ret = sf_check_floor(c, floor_ms);
	if (ret)
		return ret;
	if (sf_tick_up(&c->cfg, floor_ms) >= sf_ceiling_end(&c->cfg, ceiling_ms))
		return -EINVAL;
	return 0;
}

/**
 * sf_core_set_window() - the lease's window of timestamps
 * @c:		the generator.
 * @floor_ms:	raise the floor to this, as sf_core_set_floor() (0: leave
 *		it).
 * @ceiling_ms:	no ID is stamped with a timestamp (its tick's start, Unix
 *		ms) above this; SNOWFLAKE_NO_CEILING: none.
 * @now_ms:	raw time now.
 *
 * The window was checked by sf_core_check_window().
 *
 * Why no ID is ever stamped above the ceiling: every reservation and peek
 * compares the tick it would actually stamp (sf_core_next_tick(): the
 * largest of the clock's tick, the floor's tick and the last tick, or the
 * one after a used-up last tick) with @c->ceiling_end, in the same call
 * that then uses that tick, under the caller's lock (the driver's
 * sf->lock), which every change of the clock's offset (catch-up, floor),
 * of the floor, of the last tick and of the ceiling itself also holds: no
 * interleaving separates the comparison from the use.  The raw time
 * passed in may be stale; that only makes the clock's tick older, and the
 * comparison is with the tick used, whatever the time.  So a catch-up, a
 * floor above the ceiling or time passing can move the generator's clock
 * past the ceiling, but then reads are refused (-ENOTCONN, counted in
 * @c->ceiling_hits once per ceiling set) until a call sets a higher one.
 *
 * Setting a ceiling other than the current one ends @c->ceiling_reached
 * (a renewal with a higher one serves again; a lower one counts again
 * when it is reached); the same ceiling again changes nothing.
 */
void sf_core_set_window(struct sf_core *c, u64 floor_ms, u64 ceiling_ms,
			u64 now_ms)
{
	sf_raise_floor(c, floor_ms, now_ms);
	if (ceiling_ms == c->ceiling_ms)
		return;
	c->ceiling_ms = ceiling_ms;
	c->ceiling_end = sf_ceiling_end(&c->cfg, ceiling_ms);
	c->ceiling_reached = false;
}

/**
 * sf_core_set_ids_arg() - SNOWFLAKE_IOC_SET_IDS, all or nothing
 * @c:			the generator.
 * @ids:		the argument, checked by sf_core_check_ids().
 * @deadline_ms:	with SNOWFLAKE_IDS_DEADLINE: @ids->deadline_ns on the
 *			raw clock (see sf_core_set_deadline()).
 * @now_ms:		raw time now (for a floor the window raises).
 *
 * Everything that can fail is checked before anything changes: the VM
 * fork count, the ids against their widths, the window against the layout.
 * Then the ids, the deadline, the window and the re-arm take effect
 * together (the caller holds its lock across the call).
 *
 * Return: 0; -ESTALE (sf_core_check_vm_forks()); -EINVAL for an id that
 * does not fit its width or a window in which no tick starts
 * (sf_core_check_window()); -EOVERFLOW for a window's floor that does not
 * fit.  On error nothing changed.
 */
int sf_core_set_ids_arg(struct sf_core *c, const struct snowflake_ids *ids,
			u64 deadline_ms, u64 now_ms)
{
	bool window = ids->flags & SNOWFLAKE_IDS_WINDOW;
	int ret;

	ret = sf_core_check_vm_forks(c, ids);
	if (ret)
		return ret;
	if (ids->datacenter_id > sf_mask(c->cfg.datacenter_bits) ||
	    ids->worker_id > sf_mask(c->cfg.worker_bits))
		return -EINVAL;
	if (window) {
		ret = sf_core_check_window(c, ids->floor_ms, ids->ceiling_ms);
		if (ret)
			return ret;
	}

	sf_apply_ids(c, ids->datacenter_id, ids->worker_id,
		     ids->flags & SNOWFLAKE_IDS_ASSIGN_WORKER);
	if (ids->flags & SNOWFLAKE_IDS_DEADLINE)
		sf_core_set_deadline(c, ids->deadline_ns, deadline_ms);
	if (window)
		sf_core_set_window(c, ids->floor_ms, ids->ceiling_ms, now_ms);
	sf_core_rearm(c, ids);
	return 0;
}

/**
 * sf_core_undeliver() - count IDs that were reserved but never delivered
 * @c:		the generator.
 * @count:	how many IDs of the last reservation the caller could not
 *		deliver (a bad user buffer).
 * @none:	the caller delivered none of them.
 *
 * The IDs stay used: they are skipped, never issued again.  Only the
 * counters change, so that they count what callers received.
 */
void sf_core_undeliver(struct sf_core *c, u32 count, bool none)
{
	c->stats.ids_issued -= count;
	if (none)
		c->stats.reads--;
}

/**
 * sf_core_last_timestamp() - timestamp of the last ID issued
 * @c:		the generator.
 *
 * Return: Unix ms of the last ID's tick, or 0 when no ID was issued.
 */
u64 sf_core_last_timestamp(const struct sf_core *c)
{
	if (!c->issued)
		return 0;
	return c->cfg.epoch_ms + c->last_tick * c->cfg.time_unit_ms;
}

/**
 * sf_core_stats() - counters and clock state
 * @c:		the generator.
 * @now_ms:	raw time now.
 * @s:		filled in whole.
 */
void sf_core_stats(const struct sf_core *c, u64 now_ms,
		   struct snowflake_stats *s)
{
	*s = c->stats;
	s->clock_ms = sf_clock(c, now_ms);
	s->clock_offset_ms = c->offset_ms;
	s->last_timestamp_ms = sf_core_last_timestamp(c);
	s->floor_ms = c->floor_ms;
	s->state = 0;
	if (c->strict)
		s->state |= SNOWFLAKE_STATE_STRICT;
	if (c->worker_set)
		s->state |= SNOWFLAKE_STATE_WORKER_SET;
	if (c->refusing)
		s->state |= SNOWFLAKE_STATE_REFUSING;
	if (now_ms >= c->deadline_ms)
		s->state |= SNOWFLAKE_STATE_EXPIRED | SNOWFLAKE_STATE_REFUSING;
	if (sf_core_past_ceiling(c, sf_core_tick(c, now_ms)))
		s->state |= SNOWFLAKE_STATE_CEILING | SNOWFLAKE_STATE_REFUSING;
	if (c->issued)
		s->state |= SNOWFLAKE_STATE_LOCKED;
	if (c->fenced)
		s->state |= SNOWFLAKE_STATE_FENCED;
	if (c->vm_forked)
		s->state |= SNOWFLAKE_STATE_VM_FORKED;
	s->__reserved = 0;
}
