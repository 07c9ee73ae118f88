/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * /dev/snowflake: unique, time-ordered 64-bit IDs for the whole host.
 *
 * Every read(2) returns whole 8-byte IDs (__u64, host byte order).  An ID is
 *
 *   bit 63      : always 0 (IDs are positive as signed 64-bit integers)
 *   timestamp   : timestamp_bits, time units since epoch_ms
 *   datacenter  : datacenter_bits
 *   worker      : worker_bits
 *   sequence    : sequence_bits (least significant)
 *
 * Defaults: 41/5/5/12 bits, 1 ms unit, Twitter epoch 1288834974657.
 *
 * Extensible structures: the size of each structure is taken from the ioctl
 * command (_IOC_SIZE), like PIDFD_GET_INFO.  A size smaller than the
 * *_SIZE_VER0 is -EINVAL; a larger "set" structure is accepted when the bytes
 * the kernel does not know are zero (-E2BIG otherwise); a larger "get"
 * structure has its unknown tail zeroed.  Structures only grow at the end and
 * stay 64-bit aligned.  Reserved fields and unknown flag bits must be zero
 * (-EINVAL).
 */
#ifndef _UAPI_LINUX_SNOWFLAKE_H
#define _UAPI_LINUX_SNOWFLAKE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define SNOWFLAKE_DEVICE_NAME		"snowflake"

/* Default layout. */
#define SNOWFLAKE_TWITTER_EPOCH_MS	1288834974657ULL
#define SNOWFLAKE_DEFAULT_TIMESTAMP_BITS	41
#define SNOWFLAKE_DEFAULT_DATACENTER_BITS	5
#define SNOWFLAKE_DEFAULT_WORKER_BITS	5
#define SNOWFLAKE_DEFAULT_SEQUENCE_BITS	12
#define SNOWFLAKE_DEFAULT_TIME_UNIT_MS	1

/* Limits of a layout. */
#define SNOWFLAKE_ID_BITS		63	/* sum of the four widths, at most */
#define SNOWFLAKE_MAX_NODE_BITS		31	/* datacenter_bits, worker_bits */
#define SNOWFLAKE_MAX_SEQUENCE_BITS	31
#define SNOWFLAKE_MAX_TIME_UNIT_MS	3600000	/* one hour */

/* One read(2) returns at most this many IDs (32 KiB). */
#define SNOWFLAKE_MAX_IDS_PER_READ	4096

/* struct snowflake_config.flags */
#define SNOWFLAKE_CONFIG_RANDOM_SEQUENCE	0x1U
#define SNOWFLAKE_CONFIG_FLAGS_ALL	SNOWFLAKE_CONFIG_RANDOM_SEQUENCE

/**
 * struct snowflake_config - layout and identity of the generator
 * @epoch_ms:		Unix time in ms that timestamp 0 stands for.
 * @time_unit_ms:	length of one timestamp tick, 1..SNOWFLAKE_MAX_TIME_UNIT_MS.
 * @timestamp_bits:	width of the timestamp field, >= 1.
 * @datacenter_bits:	width of the datacenter field, 0..31.
 * @worker_bits:	width of the worker field, 0..31.
 * @sequence_bits:	width of the sequence field, 0..31.
 * @datacenter_id:	datacenter id, < 2^datacenter_bits.
 * @worker_id:		worker id, < 2^worker_bits.
 * @flags:		SNOWFLAKE_CONFIG_* bits.
 * @__reserved:		must be zero.
 *
 * The four widths sum to at most 63.  After the first ID has been issued,
 * SNOWFLAKE_IOC_SET_CONFIG refuses a change of epoch_ms, time_unit_ms or any
 * width with -EBUSY; the ids and flags may change at any time.
 */
struct snowflake_config {
	__u64 epoch_ms;
	__u32 time_unit_ms;
	__u8 timestamp_bits;
	__u8 datacenter_bits;
	__u8 worker_bits;
	__u8 sequence_bits;
	__u32 datacenter_id;
	__u32 worker_id;
	__u32 flags;
	__u32 __reserved;
};

#define SNOWFLAKE_CONFIG_SIZE_VER0	32

/*
 * struct snowflake_ids.flags
 *
 * SNOWFLAKE_IDS_ASSIGN_WORKER: this call assigns the worker id.  Only such a
 * call (or a write of the worker_id sysfs file, or the worker_id module
 * parameter) ends strict mode's refusal; rewriting the ids without it (for
 * example the values just read, to change only the datacenter id) changes
 * the ids but never lets a strict device issue IDs.  SNOWFLAKE_IOC_SET_CONFIG
 * never ends the refusal either.
 *
 * SNOWFLAKE_IDS_DEADLINE: @deadline_ns is given (the structure is at least
 * SNOWFLAKE_IDS_SIZE_VER1 bytes, else -EINVAL; 0 is -EINVAL): the device
 * issues IDs only until that CLOCK_BOOTTIME time, the end of the lease that
 * gave this host its ids.  From then on reads fail with ENOTCONN, with no
 * action from userspace, until a later call sets a later deadline; the
 * lease_expired and statistics/lease_expiries sysfs files say why.  A lease
 * holder renews by setting the same ids with a later deadline, computed
 * from the time it sent the renewal (sent + TTL - margin), so that a holder
 * that stalls or dies can never extend its host's right to issue IDs.
 * ~0ULL: no deadline.  Without this flag the deadline stays as it is (none
 * at load): static ids behave as they always did.
 *
 * SNOWFLAKE_IDS_VM_FORKS: @vm_forks is the number of virtual machine forks
 * (the statistics/vm_forks sysfs file) the caller's identity was made
 * under; when the kernel has seen another number the call fails with
 * ESTALE and changes nothing.  When the kernel learns that the VM was
 * cloned or restored from a snapshot (the vmgenid notification), it refuses
 * reads (ENOTCONN, the vm_forked file) because the clone runs on with its
 * parent's ids: only a call with SNOWFLAKE_IDS_ASSIGN_WORKER and this flag,
 * made for the current count, ends that refusal: a new pair from a new
 * lease, or an administrator's deliberate re-arm.
 *
 * SNOWFLAKE_IDS_WINDOW: the lease's window of timestamps is given (the
 * structure is at least SNOWFLAKE_IDS_SIZE_VER2 bytes, else -EINVAL).  An
 * ID is (pair, timestamp, sequence): successive holders of one pair get
 * disjoint leases in real time, but their wall clocks may disagree, so the
 * lease also says which timestamps its holder may stamp.  @floor_ms raises
 * the floor exactly as SNOWFLAKE_IOC_SET_FLOOR does (it only rises; 0
 * leaves it): every ID of this lease is stamped at or above it (a lease
 * holder passes the pair's high-water mark plus 1).  @ceiling_ms is the
 * lease's ceiling, Unix ms: no ID is issued whose timestamp (the start of
 * its tick, as in last_timestamp_ms) is above it; SNOWFLAKE_NO_CEILING:
 * none.  At the ceiling reads fail with ENOTCONN, as at the deadline, with
 * no action from userspace, until a later call sets a higher ceiling (the
 * lease_ceiling_reached and statistics/lease_ceiling_hits sysfs files say
 * why).  Nothing moves an ID's timestamp past the ceiling: not a catch-up
 * to the wall clock, not a floor (SNOWFLAKE_IOC_SET_FLOOR above the ceiling
 * is accepted, and reads are refused), not time passing.  A lease holder
 * raises the pair's mark in its store to the ceiling *before* it gives the
 * ceiling to the device, so the next holder's floor is above every
 * timestamp this one may stamp, whatever the two wall clocks say.
 * -EINVAL: a window in which no tick starts, i.e. no epoch_ms + k *
 * time_unit_ms in [@floor_ms, @ceiling_ms] (an ID's timestamp is the start
 * of its tick, so such a window could never serve: a floor above the
 * ceiling, a ceiling below epoch_ms, or with a unit above 1 ms a window
 * between two tick starts, as [1001, 1009] with unit 10 and epoch 0);
 * -EOVERFLOW: a floor SNOWFLAKE_IOC_SET_FLOOR would refuse.  Without this
 * flag both fields must be zero and the ceiling stays as it is (none at
 * load): older binaries and static ids behave as they always did.
 *
 * The ids, the deadline, the window and the re-arm of one call take effect
 * together under the generator's lock, or none of them.
 */
#define SNOWFLAKE_IDS_ASSIGN_WORKER	0x1U
#define SNOWFLAKE_IDS_DEADLINE		0x2U
#define SNOWFLAKE_IDS_VM_FORKS		0x4U
#define SNOWFLAKE_IDS_WINDOW		0x8U
#define SNOWFLAKE_IDS_FLAGS_ALL		(SNOWFLAKE_IDS_ASSIGN_WORKER | \
					 SNOWFLAKE_IDS_DEADLINE | \
					 SNOWFLAKE_IDS_VM_FORKS | \
					 SNOWFLAKE_IDS_WINDOW)

/* struct snowflake_ids.deadline_ns: no deadline. */
#define SNOWFLAKE_NO_DEADLINE		(~0ULL)
/* struct snowflake_ids.ceiling_ms: no ceiling. */
#define SNOWFLAKE_NO_CEILING		(~0ULL)

/**
 * struct snowflake_ids - identity of this host in the cluster
 * @datacenter_id:	datacenter id, < 2^datacenter_bits.
 * @worker_id:		worker id, < 2^worker_bits.
 * @flags:		SNOWFLAKE_IDS_* bits; unknown bits are -EINVAL.
 * @__reserved:		must be zero.
 * @deadline_ns:	since VER1, with SNOWFLAKE_IDS_DEADLINE: CLOCK_BOOTTIME
 *			ns from which reads are refused; else must be zero.
 * @vm_forks:		since VER1, with SNOWFLAKE_IDS_VM_FORKS: the VM forks
 *			the caller knows of; else must be zero.
 * @__reserved2:	must be zero.
 * @floor_ms:		since VER2, with SNOWFLAKE_IDS_WINDOW: Unix ms; no ID
 *			of this lease is stamped below it (0: the floor as
 *			it is); else must be zero.
 * @ceiling_ms:		since VER2, with SNOWFLAKE_IDS_WINDOW: Unix ms; no ID
 *			of this lease is stamped above it
 *			(SNOWFLAKE_NO_CEILING: none); else must be zero.
 */
struct snowflake_ids {
	__u32 datacenter_id;
	__u32 worker_id;
	__u32 flags;
	__u32 __reserved;
	__u64 deadline_ns;
	__u32 vm_forks;
	__u32 __reserved2;
	__u64 floor_ms;
	__u64 ceiling_ms;
};

#define SNOWFLAKE_IDS_SIZE_VER0		16
#define SNOWFLAKE_IDS_SIZE_VER1		32
#define SNOWFLAKE_IDS_SIZE_VER2		48

/* struct snowflake_stats.state */
#define SNOWFLAKE_STATE_STRICT		0x1U /* strict mode is on */
#define SNOWFLAKE_STATE_WORKER_SET	0x2U /* worker id set explicitly */
#define SNOWFLAKE_STATE_REFUSING	0x4U /* reads fail with ENOTCONN */
#define SNOWFLAKE_STATE_LOCKED		0x8U /* an ID was issued: layout fixed */
#define SNOWFLAKE_STATE_FENCED		0x10U /* fenced: SNOWFLAKE_IOC_SET_FENCE */
#define SNOWFLAKE_STATE_EXPIRED		0x20U /* past the lease deadline */
#define SNOWFLAKE_STATE_VM_FORKED	0x40U /* a VM fork refuses reads */
#define SNOWFLAKE_STATE_CEILING		0x80U /* the lease's ceiling refuses reads */

/**
 * struct snowflake_stats - counters and clock state
 * @ids_issued:		IDs handed out.
 * @reads:		read calls that returned IDs.
 * @exhausted_waits:	times a blocking read slept until the next tick.
 * @eagain:		non-blocking reads refused with EAGAIN.
 * @clock_catchups:	times the anchor moved forward to the wall clock.
 * @floor_jumps:	times the anchor moved forward to a floor.
 * @refused_reads:	reads refused with ENOTCONN or EOVERFLOW.
 * @clock_ms:		the generator's clock now, Unix ms.
 * @clock_offset_ms:	total forward moves of the anchor, ms.
 * @last_timestamp_ms:	timestamp of the last ID issued, Unix ms (0: none).
 * @floor_ms:		no ID is issued with a timestamp below this, Unix ms.
 * @state:		SNOWFLAKE_STATE_* bits.
 * @__reserved:		zero.
 */
struct snowflake_stats {
	__u64 ids_issued;
	__u64 reads;
	__u64 exhausted_waits;
	__u64 eagain;
	__u64 clock_catchups;
	__u64 floor_jumps;
	__u64 refused_reads;
	__u64 clock_ms;
	__u64 clock_offset_ms;
	__u64 last_timestamp_ms;
	__u64 floor_ms;
	__u32 state;
	__u32 __reserved;
};

#define SNOWFLAKE_STATS_SIZE_VER0	96

/**
 * struct snowflake_floor - lower bound for timestamps
 * @floor_ms:		Unix ms; no ID gets a timestamp below it.  The floor
 *			only rises: setting a lower value changes nothing.
 * @last_timestamp_ms:	GET: timestamp of the last ID issued (0: none).
 *			SET: must be zero.
 */
struct snowflake_floor {
	__u64 floor_ms;
	__u64 last_timestamp_ms;
};

#define SNOWFLAKE_FLOOR_SIZE_VER0	16

/* struct snowflake_fence.flags */
#define SNOWFLAKE_FENCE_ON		0x1U
#define SNOWFLAKE_FENCE_FLAGS_ALL	SNOWFLAKE_FENCE_ON

/**
 * struct snowflake_fence - the fence: refuse reads while a lease is lost
 * @flags:	SNOWFLAKE_FENCE_* bits.  SET: SNOWFLAKE_FENCE_ON fences the
 *		device, 0 lifts the fence.  GET: the current state.
 * @__reserved:	must be zero.
 * @fences:	GET: times the device went from unfenced to fenced since
 *		the module was loaded.  SET: must be zero.
 *
 * A cluster agent that holds the worker id through a lease (see
 * snowflake-agent(8)) fences the device when it cannot renew the lease
 * before it could expire, so that two hosts never issue IDs with the same
 * worker id.  While fenced, reads fail with ENOTCONN, poll(2) shows nothing
 * and SNOWFLAKE_STATE_FENCED and SNOWFLAKE_STATE_REFUSING are set; lifting
 * the fence wakes pollers.  The fence is independent of strict mode: reads
 * are served only when neither refuses.  IDs issued after the fence is
 * lifted stay above every earlier ID.  Fencing a fenced device (or
 * unfencing an unfenced one) changes nothing and does not count.
 * SET needs CAP_SYS_ADMIN (-EPERM); unknown flags or a nonzero
 * @__reserved or @fences are -EINVAL and change nothing.
 */
struct snowflake_fence {
	__u32 flags;
	__u32 __reserved;
	__u64 fences;
};

#define SNOWFLAKE_FENCE_SIZE_VER0	16

/* Magic 0xB9 is unassigned in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define SNOWFLAKE_IOC_MAGIC		0xB9

#define SNOWFLAKE_IOC_GET_CONFIG	_IOR(SNOWFLAKE_IOC_MAGIC, 0x00, struct snowflake_config)
#define SNOWFLAKE_IOC_SET_CONFIG	_IOW(SNOWFLAKE_IOC_MAGIC, 0x01, struct snowflake_config)
#define SNOWFLAKE_IOC_SET_IDS		_IOW(SNOWFLAKE_IOC_MAGIC, 0x02, struct snowflake_ids)
#define SNOWFLAKE_IOC_GET_STATS		_IOR(SNOWFLAKE_IOC_MAGIC, 0x03, struct snowflake_stats)
#define SNOWFLAKE_IOC_GET_FLOOR		_IOR(SNOWFLAKE_IOC_MAGIC, 0x04, struct snowflake_floor)
#define SNOWFLAKE_IOC_SET_FLOOR		_IOW(SNOWFLAKE_IOC_MAGIC, 0x05, struct snowflake_floor)
#define SNOWFLAKE_IOC_SET_FENCE		_IOW(SNOWFLAKE_IOC_MAGIC, 0x06, struct snowflake_fence)
#define SNOWFLAKE_IOC_GET_FENCE		_IOR(SNOWFLAKE_IOC_MAGIC, 0x07, struct snowflake_fence)

/*
 * /dev/uuidv7, from the same module and clock: every read(2) returns whole
 * 16-byte RFC 9562 UUIDv7s in binary form (big-endian), strictly increasing
 * as bytes (memcmp) across the host.  Bits: 48 unix_ts_ms, version 7, a
 * 42-bit counter (rand_a and the top 30 bits of rand_b) seeded at random
 * below 2^41 each millisecond, variant 0b10, 32 fresh random bits.
 */
#define SNOWFLAKE_UUID_DEVICE_NAME	"uuidv7"
#define SNOWFLAKE_UUID_SIZE		16
/* One read(2) of /dev/uuidv7 returns at most this many UUIDs (64 KiB). */
#define SNOWFLAKE_UUID_MAX_PER_READ	4096

#endif /* _UAPI_LINUX_SNOWFLAKE_H */
