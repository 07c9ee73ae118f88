// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the validation of the "set" ioctl arguments, which the
 * module does in the pure core after copy_struct_from_user():
 *
 *   SNOWFLAKE_IOC_SET_CONFIG  sf_core_check_config(), sf_core_set_config()
 *   SNOWFLAKE_IOC_SET_IDS     sf_core_check_ids(), sf_core_set_ids_arg()
 *   SNOWFLAKE_IOC_SET_FLOOR   sf_core_check_floor(), sf_core_set_floor()
 *   SNOWFLAKE_IOC_SET_FENCE   sf_core_check_fence(), sf_core_set_fence()
 *
 * The input is a generator (a configuration, maybe IDs already issued, a
 * floor) and then a sequence of argument structures as raw bytes.  Each is
 * handled the way sf_ioctl_set_*() do, and the result is compared with the
 * rules of uapi/linux/snowflake.h and README.md "ioctls", written again
 * here: the same errno, and a refused argument changes nothing.
 */
#include "fuzz_input.h"

/* The generator's raw clock for the whole input: 2026-11-21. */
#define NOW	1795219200000ULL

static u64 tick_up(const struct snowflake_config *cfg, u64 ms)
{
	if (ms <= cfg->epoch_ms)
		return 0;
	return (ms - cfg->epoch_ms - 1) / cfg->time_unit_ms + 1;
}

static u64 clock_of(const struct sf_core *c)
{
	struct snowflake_stats st;

	sf_core_stats(c, NOW, &st);
	return st.clock_ms;
}

static bool same_layout(const struct snowflake_config *a,
			const struct snowflake_config *b)
{
	return a->epoch_ms == b->epoch_ms && a->time_unit_ms == b->time_unit_ms &&
	       a->timestamp_bits == b->timestamp_bits &&
	       a->datacenter_bits == b->datacenter_bits &&
	       a->worker_bits == b->worker_bits &&
	       a->sequence_bits == b->sequence_bits;
}

/* Raw bytes, or (half the time) a structure that is valid but for a little. */
static void arg_config(struct fin *in, const struct sf_core *c,
		       struct snowflake_config *cfg)
{
	if (fin_bool(in)) {
		memset(cfg, 0, sizeof(*cfg));
		fz_raw_config(in, cfg, true);
	} else if (fin_bool(in)) {
		*cfg = c->cfg;
		cfg->datacenter_id = fin_u32(in) & (fz_mask(cfg->datacenter_bits) * 2 + 1);
		cfg->worker_id = fin_u32(in) & (fz_mask(cfg->worker_bits) * 2 + 1);
		cfg->flags = fin_u8(in) & 3;
		cfg->__reserved = fin_u8(in) == 0xff;
	} else {
		fz_config(in, cfg, clock_of(c));
	}
}

static void do_set_config(struct fin *in, struct sf_core *c)
{
	struct snowflake_config cfg;
	struct sf_core before = *c;
	const char *why = NULL;
	int ret, want;

	arg_config(in, c, &cfg);
	want = fz_config_valid(&cfg);
	ret = sf_core_check_config(&cfg, &why);
	CHECK(ret == want, "check_config %d, the rules say %d", ret, want);
	CHECK(!ret || why, "no reason given");

	why = NULL;
	ret = sf_core_set_config(c, &cfg, NOW, &why);
	if (!want && !same_layout(&cfg, &before.cfg)) {
		if (before.issued)
			want = -EBUSY;
		else if (cfg.epoch_ms > clock_of(&before))
			want = -EINVAL;
		else if ((clock_of(&before) - cfg.epoch_ms) / cfg.time_unit_ms >
			 fz_mask(cfg.timestamp_bits) ||
			 tick_up(&cfg, before.floor_ms) > fz_mask(cfg.timestamp_bits))
			want = -EOVERFLOW;
	}
	CHECK(ret == want, "SET_CONFIG %d, the rules say %d", ret, want);
	if (ret) {
		CHECK(why, "no reason given");
		CHECK(fz_core_eq(&before, c), "a refused SET_CONFIG changed the state");
	} else {
		CHECK(!memcmp(&c->cfg, &cfg, sizeof(cfg)), "SET_CONFIG stored another config");
	}
}

/* A window's floor or ceiling: near the clock, an edge, or raw. */
static u64 window_ms(struct fin *in, const struct sf_core *c)
{
	switch (fin_u8(in) % 6) {
	case 0:
		return 0;
	case 1:
		return SNOWFLAKE_NO_CEILING;
	case 2:
		return clock_of(c) + fin_range(in, 200000) - 100000;
	case 3:
		return c->cfg.epoch_ms + fin_range(in, 4) - 2;
	case 4:
		return (1ULL << 63) + fin_range(in, 1ULL << 16) - (1ULL << 15);
	default:
		return fin_u64(in);
	}
}

static void do_set_ids(struct fin *in, struct sf_core *c)
{
	static const size_t sizes[] = {
		SNOWFLAKE_IDS_SIZE_VER0, SNOWFLAKE_IDS_SIZE_VER1,
		SNOWFLAKE_IDS_SIZE_VER2, SNOWFLAKE_IDS_SIZE_VER2,
	};
	struct snowflake_ids ids;
	struct sf_core before = *c;
	bool window;
	size_t size;
	int ret, want = 0;

	ids.datacenter_id = fin_u32(in);
	ids.worker_id = fin_u32(in);
	if (fin_bool(in)) {
		ids.datacenter_id &= fz_mask(c->cfg.datacenter_bits) * 2 + 1;
		ids.worker_id &= fz_mask(c->cfg.worker_bits) * 2 + 1;
	}
	ids.flags = fin_bool(in) ? fin_u32(in) : 0;
	if (fin_bool(in))
		ids.flags = (ids.flags & SNOWFLAKE_IDS_ASSIGN_WORKER) |
			    SNOWFLAKE_IDS_WINDOW;
	ids.__reserved = fin_bool(in) ? fin_u32(in) : 0;
	ids.floor_ms = fin_bool(in) ? window_ms(in, c) : 0;
	ids.ceiling_ms = fin_bool(in) ? window_ms(in, c) : 0;
	/* A window narrower than two ticks: it may hold no tick start. */
	if (fin_bool(in) && ids.floor_ms < (1ULL << 63))
		ids.ceiling_ms = ids.floor_ms + fin_range(in, 2 * c->cfg.time_unit_ms);
	/* The size the caller gives: the kernel reads zeros past it. */
	size = sizes[fin_u8(in) % 4];
	if (size < SNOWFLAKE_IDS_SIZE_VER2)
		ids.floor_ms = ids.ceiling_ms = 0;
	window = ids.flags & SNOWFLAKE_IDS_WINDOW;

	/*
	 * The input has no deadline and no VM fork count: SNOWFLAKE_IDS_DEADLINE
	 * alone is EINVAL, SNOWFLAKE_IDS_VM_FORKS with 0 matches a generator
	 * that saw no fork.
	 */
	ids.deadline_ns = 0;
	ids.vm_forks = 0;
	ids.__reserved2 = 0;
	if ((ids.flags & ~SNOWFLAKE_IDS_FLAGS_ALL) || ids.__reserved ||
	    (ids.flags & SNOWFLAKE_IDS_DEADLINE) ||
	    ids.datacenter_id > fz_mask(c->cfg.datacenter_bits) ||
	    ids.worker_id > fz_mask(c->cfg.worker_bits))
		want = -EINVAL;
	/* The window: its flag, a VER2 structure, floor <= ceiling >= epoch. */
	if (!window && (ids.floor_ms || ids.ceiling_ms))
		want = -EINVAL;
	if (window && (size < SNOWFLAKE_IDS_SIZE_VER2 ||
		       ids.floor_ms > ids.ceiling_ms ||
		       ids.ceiling_ms < before.cfg.epoch_ms))
		want = -EINVAL;
	/* Its floor as SET_FLOOR takes one. */
	if (!want && window && ids.floor_ms > before.floor_ms &&
	    (ids.floor_ms > (1ULL << 63) - 1 ||
	     tick_up(&before.cfg, ids.floor_ms) > before.ts_max))
		want = -EOVERFLOW;
	/* And a tick must start within it. */
	if (!want && window &&
	    !fz_window_has_tick(&before.cfg, ids.floor_ms, ids.ceiling_ms))
		want = -EINVAL;

	/* As sf_ioctl_set_ids(). */
	ret = sf_core_check_ids(&ids, size);
	CHECK(ret == 0 || ret == -EINVAL, "check_ids %d", ret);
	if (!ret)
		ret = sf_core_set_ids_arg(c, &ids, 0, NOW);
	CHECK(ret == want, "SET_IDS %d, the rules say %d", ret, want);
	if (ret) {
		CHECK(fz_core_eq(&before, c), "a refused SET_IDS changed the state");
		return;
	}
	CHECK(c->cfg.datacenter_id == ids.datacenter_id &&
	      c->cfg.worker_id == ids.worker_id, "ids not stored");
	/* Only SNOWFLAKE_IDS_ASSIGN_WORKER assigns (strict mode). */
	CHECK(c->worker_set == (before.worker_set ||
				(ids.flags & SNOWFLAKE_IDS_ASSIGN_WORKER)),
	      "worker_set %d after SET_IDS flags %#x", c->worker_set, ids.flags);
	if (!window) {
		/* Without the flag the window stays as it was. */
		CHECK(c->ceiling_ms == before.ceiling_ms &&
		      c->ceiling_end == before.ceiling_end &&
		      c->floor_ms == before.floor_ms, "the window moved without its flag");
		return;
	}
	CHECK(c->ceiling_ms == ids.ceiling_ms, "ceiling not stored");
	CHECK(c->floor_ms == (ids.floor_ms > before.floor_ms ? ids.floor_ms :
			      before.floor_ms), "floor %llu after a window's %llu",
	      (unsigned long long)c->floor_ms, (unsigned long long)ids.floor_ms);
	CHECK(clock_of(c) >= clock_of(&before), "the clock moved back");
	/* The ceiling's end: the first tick that starts above it. */
	CHECK(c->ceiling_end == 0 ||
	      !fz_above_ceiling(&c->cfg, c->ceiling_end - 1, c->ceiling_ms),
	      "ceiling_end %llu starts above the ceiling",
	      (unsigned long long)c->ceiling_end);
	CHECK(c->ceiling_end == U64_MAX ||
	      fz_above_ceiling(&c->cfg, c->ceiling_end, c->ceiling_ms),
	      "the tick at ceiling_end %llu is below the ceiling",
	      (unsigned long long)c->ceiling_end);
	CHECK(c->ceiling_reached == (before.ceiling_reached &&
				     before.ceiling_ms == ids.ceiling_ms),
	      "ceiling_reached after a window");
}

static void do_set_floor(struct fin *in, struct sf_core *c)
{
	struct snowflake_floor fl;
	struct sf_core before = *c;
	int ret, want = 0;

	switch (fin_u8(in) % 3) {
	case 0:
		fl.floor_ms = fin_u64(in);
		break;
	case 1:
		fl.floor_ms = NOW + fin_range(in, 1ULL << 40) - (1ULL << 39);
		break;
	default:
		fl.floor_ms = (1ULL << 63) + fin_range(in, 1ULL << 16) - (1ULL << 15);
		break;
	}
	fl.last_timestamp_ms = fin_bool(in) ? fin_u64(in) : 0;

	if (fl.last_timestamp_ms)
		want = -EINVAL;
	else if (fl.floor_ms <= before.floor_ms)
		want = 0;
	else if (fl.floor_ms > (1ULL << 63) - 1 ||
		 tick_up(&before.cfg, fl.floor_ms) > before.ts_max)
		want = -EOVERFLOW;

	/* As sf_ioctl_set_floor(). */
	ret = sf_core_check_floor(&fl);
	if (!ret)
		ret = sf_core_set_floor(c, fl.floor_ms, NOW);
	CHECK(ret == want, "SET_FLOOR %d, the rules say %d", ret, want);
	if (ret || fl.floor_ms <= before.floor_ms) {
		CHECK(fz_core_eq(&before, c), "SET_FLOOR changed the state");
	} else {
		CHECK(c->floor_ms == fl.floor_ms, "floor not stored");
		CHECK(clock_of(c) >= clock_of(&before), "the clock moved back");
	}
}

static void do_set_fence(struct fin *in, struct sf_core *c)
{
	struct snowflake_fence fe;
	struct sf_core before = *c;
	bool on;
	int ret, want = 0;

	memset(&fe, 0, sizeof(fe));
	if (fin_bool(in)) {
		fe.flags = fin_u32(in);
		fe.__reserved = fin_bool(in) ? fin_u32(in) : 0;
		fe.fences = fin_bool(in) ? fin_u64(in) : 0;
	} else {
		fe.flags = fin_bool(in) ? SNOWFLAKE_FENCE_ON : 0;
	}

	if ((fe.flags & ~SNOWFLAKE_FENCE_ON) || fe.__reserved || fe.fences)
		want = -EINVAL;

	/* As sf_ioctl_set_fence(). */
	on = fe.flags & SNOWFLAKE_FENCE_ON;
	ret = sf_core_check_fence(&fe);
	if (!ret)
		sf_core_set_fence(c, on);
	CHECK(ret == want, "SET_FENCE %d, the rules say %d", ret, want);
	if (ret || before.fenced == on) {
		CHECK(fz_core_eq(&before, c), "SET_FENCE changed the state");
	} else {
		CHECK(c->fenced == on, "fence not stored");
		CHECK(c->fences == before.fences + on, "fences counted wrong");
		CHECK(!!(c->refusing & SF_REFUSE_FENCED) == on, "refusing bit wrong");
		CHECK(c->last_tick == before.last_tick && c->next_seq == before.next_seq,
		      "the fence moved the tick state");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fin in = { .p = data, .left = size };
	struct snowflake_config cfg;
	struct sf_core c;
	struct sf_block b;
	const char *why;

	/* A generator to apply the arguments to: the defaults or another. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.epoch_ms = SNOWFLAKE_TWITTER_EPOCH_MS;
	cfg.time_unit_ms = 1;
	cfg.timestamp_bits = 41;
	cfg.datacenter_bits = 5;
	cfg.worker_bits = 5;
	cfg.sequence_bits = 12;
	if (fin_bool(&in)) {
		struct snowflake_config other;

		fz_config(&in, &other, NOW);
		if (fz_config_valid(&other) == 0 && other.epoch_ms <= NOW &&
		    (NOW - other.epoch_ms) / other.time_unit_ms <= fz_mask(other.timestamp_bits))
			cfg = other;
	}
	CHECK(sf_core_init(&c, &cfg, NOW, &why) == 0, "init: %s", why);
	if (fin_bool(&in))
		CHECK(sf_core_reserve(&c, NOW, 1, 0, &b) == 1, "first ID");

	while (in.left) {
		switch (fin_u8(&in) % 4) {
		case 0:
			do_set_config(&in, &c);
			break;
		case 1:
			do_set_ids(&in, &c);
			break;
		case 2:
			do_set_floor(&in, &c);
			break;
		default:
			do_set_fence(&in, &c);
			break;
		}
	}
	return 0;
}
