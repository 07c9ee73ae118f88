// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the generator core (driver/snowflake_core.c) driven by
 * a sequence of operations decoded from the input, the way the module calls
 * it: init, set_config, set_ids, set_strict, set_floor, catch_up, the
 * lease's window (SET_IDS with SNOWFLAKE_IDS_WINDOW), reserve (any now, any
 * want), undeliver, peek, stats, and the raw clock moving forward.  After
 * every step the invariants of snowflake(4), "Guarantees" are checked:
 *
 * - every reserved ID is above every ID reserved before by this generator
 *   (so never a duplicate), whatever happened in between;
 * - an ID's timestamp is never below the floor nor below the generator's
 *   clock at the time of the reservation, never past timestamp_bits, and
 *   never above the lease's ceiling: there reads are refused (ENOTCONN),
 *   at once when the last tick below it is used up (never EAGAIN);
 * - its datacenter and worker fields are the configured ones, bit 63 is 0,
 *   and a block never carries into the next field;
 * - the clock never moves back; a failed call changes nothing; -EAGAIN names
 *   a retry time in the future at which a reservation succeeds; peek agrees
 *   with reserve; the state always holds a valid configuration.
 *
 * The raw clock ("now") only moves forward, as the module's does (wall clock
 * at load plus CLOCK_BOOTTIME), and stays below 2^62 ms (the kernel's is
 * below 2^43); floors and wall clocks are arbitrary.
 */
#include "fuzz_input.h"

#define NOW_MAX		(1ULL << 62)

struct run {
	struct fin in;
	struct sf_core c;
	bool live;		/* c holds an initialised generator */
	u64 now;		/* raw clock */
	u64 clock;		/* generator's clock at the last look */
	bool have_last;
	u64 last_id;		/* highest ID reserved by this generator */
	u32 last_count;		/* IDs of the last reservation, for undeliver */
};

static u64 clock_of(const struct sf_core *c, u64 now)
{
	struct snowflake_stats st;

	sf_core_stats(c, now, &st);
	return st.clock_ms;
}

/* Ticks since the epoch at @ms, rounded down / up (0 before the epoch). */
static u64 tick_down(const struct snowflake_config *cfg, u64 ms)
{
	return ms <= cfg->epoch_ms ? 0 : (ms - cfg->epoch_ms) / cfg->time_unit_ms;
}

static u64 tick_up(const struct snowflake_config *cfg, u64 ms)
{
	if (ms <= cfg->epoch_ms)
		return 0;
	return (ms - cfg->epoch_ms - 1) / cfg->time_unit_ms + 1;
}

/* The state is consistent with its configuration. */
static void check_state(const struct run *r)
{
	const struct sf_core *c = &r->c;
	const struct snowflake_config *cfg = &c->cfg;
	unsigned int shift = cfg->datacenter_bits + cfg->worker_bits +
			     cfg->sequence_bits;

	CHECK(fz_config_valid(cfg) == 0, "state holds an invalid configuration");
	CHECK(c->seq_max == fz_mask(cfg->sequence_bits), "seq_max");
	CHECK(c->ts_max == fz_mask(cfg->timestamp_bits), "ts_max");
	CHECK(c->ts_shift == shift, "ts_shift %u", c->ts_shift);
	CHECK(c->node == (((u64)cfg->datacenter_id << (cfg->worker_bits + cfg->sequence_bits)) |
			  ((u64)cfg->worker_id << cfg->sequence_bits)), "node");
	CHECK(c->floor_tick == tick_up(cfg, c->floor_ms), "floor_tick %llu for floor %llu",
	      (unsigned long long)c->floor_tick, (unsigned long long)c->floor_ms);
	CHECK(c->floor_tick <= c->ts_max, "floor_tick past ts_max");
	CHECK(c->last_tick <= c->ts_max, "last_tick past ts_max");
	CHECK(c->next_seq <= c->seq_max + 1, "next_seq %llu",
	      (unsigned long long)c->next_seq);
	CHECK(c->refusing == ((c->strict && !c->worker_set) ? SF_REFUSE_NO_WORKER : 0),
	      "refusing");
	/* The ceiling's end: the first tick that starts above the ceiling. */
	CHECK(c->ceiling_end == 0 ||
	      !fz_above_ceiling(cfg, c->ceiling_end - 1, c->ceiling_ms),
	      "ceiling_end %llu starts above the ceiling %llu",
	      (unsigned long long)c->ceiling_end, (unsigned long long)c->ceiling_ms);
	CHECK(c->ceiling_end == U64_MAX ||
	      fz_above_ceiling(cfg, c->ceiling_end, c->ceiling_ms),
	      "the tick at ceiling_end %llu starts at or below the ceiling %llu",
	      (unsigned long long)c->ceiling_end, (unsigned long long)c->ceiling_ms);
	CHECK(c->ceiling_hits >= c->ceiling_reached, "ceiling_hits");
	CHECK(c->stats.ids_issued >= c->stats.reads, "ids_issued < reads");
}

/* The clock never moves back while now moves forward. */
static void check_clock(struct run *r)
{
	u64 clock = clock_of(&r->c, r->now);

	CHECK(clock >= r->clock, "clock moved back: %llu -> %llu",
	      (unsigned long long)r->clock, (unsigned long long)clock);
	CHECK(clock >= r->now, "clock %llu below the raw clock %llu",
	      (unsigned long long)clock, (unsigned long long)r->now);
	r->clock = clock;
}

static void op_init(struct run *r)
{
	struct snowflake_config cfg;
	const char *why = NULL;
	int want, ret;

	fz_config(&r->in, &cfg, r->now);
	want = fz_config_valid(&cfg);
	ret = sf_core_init(&r->c, &cfg, r->now, &why);
	if (want) {
		CHECK(ret == want, "init accepted an invalid config: %d", ret);
	} else if (cfg.epoch_ms > r->now) {
		CHECK(ret == -EINVAL, "init with a future epoch: %d", ret);
	} else if (tick_down(&cfg, r->now) > fz_mask(cfg.timestamp_bits)) {
		CHECK(ret == -EOVERFLOW, "init past timestamp_bits: %d", ret);
	} else {
		CHECK(ret == 0, "init refused a valid config: %d (%s)", ret, why);
	}
	if (ret) {
		CHECK(why != NULL, "no reason given");
		r->live = false;
		return;
	}
	CHECK(!memcmp(&r->c.cfg, &cfg, sizeof(cfg)), "init stored another config");
	r->live = true;
	r->have_last = false;
	r->last_count = 0;
	r->clock = 0;
	if (fin_bool(&r->in))
		sf_core_set_strict(&r->c, fin_bool(&r->in), fin_bool(&r->in));
}

static void op_set_config(struct run *r)
{
	struct snowflake_config cfg;
	struct sf_core before = r->c;
	const char *why = NULL;
	bool same;
	int ret;

	if (fin_bool(&r->in)) {
		/* The current one with the ids, the flags or one width changed. */
		cfg = r->c.cfg;
		switch (fin_u8(&r->in) % 4) {
		case 0:
			cfg.datacenter_id = fin_range(&r->in, fz_mask(cfg.datacenter_bits));
			cfg.worker_id = fin_range(&r->in, fz_mask(cfg.worker_bits));
			break;
		case 1:
			cfg.flags ^= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
			break;
		case 2:
			cfg.sequence_bits = fin_u8(&r->in) % 32;
			break;
		default:
			cfg.epoch_ms -= fin_range(&r->in, 100000);
			break;
		}
	} else {
		fz_config(&r->in, &cfg, clock_of(&r->c, r->now));
	}
	same = cfg.epoch_ms == before.cfg.epoch_ms &&
	       cfg.time_unit_ms == before.cfg.time_unit_ms &&
	       cfg.timestamp_bits == before.cfg.timestamp_bits &&
	       cfg.datacenter_bits == before.cfg.datacenter_bits &&
	       cfg.worker_bits == before.cfg.worker_bits &&
	       cfg.sequence_bits == before.cfg.sequence_bits;

	ret = sf_core_set_config(&r->c, &cfg, r->now, &why);
	if (fz_config_valid(&cfg)) {
		CHECK(ret == -EINVAL, "set_config accepted an invalid config: %d", ret);
	} else if (!same && before.issued) {
		CHECK(ret == -EBUSY, "layout change after the first ID: %d", ret);
	} else if (!same) {
		CHECK(ret == 0 || ret == -EINVAL || ret == -EOVERFLOW,
		      "set_config: %d", ret);
		if (ret == -EINVAL)
			CHECK(cfg.epoch_ms > r->clock, "EINVAL for a past epoch");
	} else {
		CHECK(ret == 0, "set_config of the same layout refused: %d (%s)", ret, why);
	}
	if (ret) {
		CHECK(why != NULL, "no reason given");
		CHECK(fz_core_eq(&before, &r->c), "a refused set_config changed the state");
		return;
	}
	CHECK(!memcmp(&r->c.cfg, &cfg, sizeof(cfg)), "set_config stored another config");
	CHECK(r->c.worker_set == before.worker_set,
	      "set_config changed whether the worker id is assigned");
	if (!same)
		r->have_last = false;	/* no ID was issued */
}

static void op_set_ids(struct run *r)
{
	struct sf_core before = r->c;
	u32 dc, wk;
	bool fits, expl = fin_bool(&r->in);
	int ret;

	if (fin_u8(&r->in) & 3) {
		dc = fin_range(&r->in, fz_mask(r->c.cfg.datacenter_bits));
		wk = fin_range(&r->in, fz_mask(r->c.cfg.worker_bits));
	} else {
		dc = fin_u32(&r->in);
		wk = fin_u32(&r->in);
	}
	fits = dc <= fz_mask(r->c.cfg.datacenter_bits) &&
	       wk <= fz_mask(r->c.cfg.worker_bits);
	ret = sf_core_set_ids(&r->c, dc, wk, expl);
	if (!fits) {
		CHECK(ret == -EINVAL, "set_ids accepted ids that do not fit: %d", ret);
		CHECK(fz_core_eq(&before, &r->c), "a refused set_ids changed the state");
		return;
	}
	CHECK(ret == 0, "set_ids refused ids that fit: %d", ret);
	CHECK(r->c.cfg.datacenter_id == dc && r->c.cfg.worker_id == wk, "ids not stored");
	CHECK(r->c.worker_set == (before.worker_set || expl), "worker_set");
}

static void op_set_floor(struct run *r)
{
	struct sf_core before = r->c;
	u64 floor, now, seen;
	int ret;

	switch (fin_u8(&r->in) % 4) {
	case 0:
		floor = fin_u64(&r->in);
		break;
	case 1:
		floor = r->clock + fin_range(&r->in, 100000);
		break;
	case 2:
		floor = r->clock - fin_range(&r->in, 100000);
		break;
	default:
		floor = UINT64_MAX - fin_range(&r->in, 1U << 24);
		break;
	}
	/*
	 * A reading read before the lock may be stale when used: a floor
	 * jump is measured from the latest reading given, not from it.
	 */
	now = r->now - (fin_bool(&r->in) ? 0 : fin_range(&r->in, r->now < 5000 ? r->now : 5000));
	seen = now > before.raw_seen_ms ? now : before.raw_seen_ms;
	ret = sf_core_set_floor(&r->c, floor, now);
	if (floor <= before.floor_ms) {
		CHECK(ret == 0, "a lower floor refused: %d", ret);
		CHECK(fz_core_eq(&before, &r->c), "a lower floor changed the state");
		return;
	}
	if (ret) {
		CHECK(ret == -EOVERFLOW, "set_floor: %d", ret);
		CHECK(fz_core_eq(&before, &r->c), "a refused floor changed the state");
		return;
	}
	CHECK(tick_up(&r->c.cfg, floor) <= r->c.ts_max, "a floor past timestamp_bits accepted");
	CHECK(r->c.floor_ms == floor, "floor not stored");
	/* The clock is at the floor's tick now, or was already past it. */
	if (floor > r->c.cfg.epoch_ms) {
		u64 start = r->c.cfg.epoch_ms + r->c.floor_tick * r->c.cfg.time_unit_ms;

		CHECK(clock_of(&r->c, r->now) >= start,
		      "clock %llu below the floor's tick start %llu",
		      (unsigned long long)clock_of(&r->c, r->now),
		      (unsigned long long)start);
		/* A jump lands on the start, not past it by the staleness. */
		if (r->c.stats.floor_jumps != before.stats.floor_jumps)
			CHECK(clock_of(&r->c, seen) == start,
			      "floor jump to %llu, the tick starts at %llu",
			      (unsigned long long)clock_of(&r->c, seen),
			      (unsigned long long)start);
	}
}

/* A window's floor or ceiling: near the clock, an edge, or raw. */
static u64 window_ms(struct run *r)
{
	switch (fin_u8(&r->in) % 6) {
	case 0:
		return 0;
	case 1:
		return SNOWFLAKE_NO_CEILING;
	case 2:
	case 3:
		return r->clock + fin_range(&r->in, 20000) - 1000;
	case 4:
		return r->c.cfg.epoch_ms + fin_range(&r->in, 4) - 2;
	default:
		return fin_u64(&r->in);
	}
}

/* The lease's window, as SNOWFLAKE_IOC_SET_IDS sets it with the same ids. */
static void op_window(struct run *r)
{
	struct sf_core before = r->c;
	struct snowflake_ids ids = {
		.datacenter_id = r->c.cfg.datacenter_id,
		.worker_id = r->c.cfg.worker_id,
		.flags = SNOWFLAKE_IDS_WINDOW,
	};
	int ret, want = 0;

	ids.floor_ms = window_ms(r);
	ids.ceiling_ms = window_ms(r);
	/* A window narrower than two ticks: it may hold no tick start. */
	if (fin_bool(&r->in) && ids.floor_ms < (1ULL << 63))
		ids.ceiling_ms = ids.floor_ms + fin_range(&r->in, 2 * r->c.cfg.time_unit_ms);
	if (ids.floor_ms > ids.ceiling_ms || ids.ceiling_ms < before.cfg.epoch_ms)
		want = -EINVAL;
	else if (ids.floor_ms > before.floor_ms &&
		 (ids.floor_ms > (1ULL << 63) - 1 ||
		  tick_up(&before.cfg, ids.floor_ms) > before.ts_max))
		want = -EOVERFLOW;
	else if (!fz_window_has_tick(&before.cfg, ids.floor_ms, ids.ceiling_ms))
		want = -EINVAL;

	ret = sf_core_check_ids(&ids, sizeof(ids));
	if (!ret)
		ret = sf_core_set_ids_arg(&r->c, &ids, 0, r->now);
	CHECK(ret == want, "window [%llu, %llu]: %d, the rules say %d",
	      (unsigned long long)ids.floor_ms, (unsigned long long)ids.ceiling_ms,
	      ret, want);
	if (ret) {
		CHECK(fz_core_eq(&before, &r->c), "a refused window changed the state");
		return;
	}
	CHECK(r->c.ceiling_ms == ids.ceiling_ms, "ceiling not stored");
	CHECK(r->c.floor_ms == (ids.floor_ms > before.floor_ms ? ids.floor_ms :
				before.floor_ms), "floor after a window");
}

static void op_catch_up(struct run *r)
{
	u64 wall, thr, clock = clock_of(&r->c, r->now);
	bool moved;

	/* A wall clock of the kernel: 0..2^62 like now. */
	if (fin_bool(&r->in))
		wall = clock + fin_range(&r->in, 10000) - 5000;
	else
		wall = fin_range(&r->in, NOW_MAX);
	if (wall > NOW_MAX)
		wall = fin_bool(&r->in) ? 0 : NOW_MAX;
	thr = fin_bool(&r->in) ? 1000 : fin_range(&r->in, 100000);
	/* The kernel passes how far the wall clock is ahead of the raw one. */
	moved = sf_core_catch_up(&r->c, wall > r->now ? wall - r->now : 0, thr);
	CHECK(moved == (thr && wall > clock && wall - clock > thr), "catch_up moved=%d", moved);
	if (moved)
		CHECK(clock_of(&r->c, r->now) == wall, "caught up to another time");
	else
		CHECK(clock_of(&r->c, r->now) == clock, "clock moved without a catch-up");
}

/* Reserve at @now and check the block. */
static int reserve_checked(struct run *r, u64 now, u32 want, u32 rnd)
{
	const struct snowflake_config *cfg = &r->c.cfg;
	struct sf_core before = r->c;
	struct sf_block b = { 0 };
	u64 clock_tick, last, ts, seq, node_mask, used;
	int ret, peek;
	u64 retry = 0;

	clock_tick = tick_down(cfg, clock_of(&r->c, now));
	peek = sf_core_peek(&r->c, now, &retry);
	CHECK(fz_core_eq(&before, &r->c), "peek changed the state");

	ret = sf_core_reserve(&r->c, now, want, rnd, &b);
	if (!want) {
		CHECK(ret == -EINVAL, "want 0: %d", ret);
		CHECK(fz_core_eq(&before, &r->c), "want 0 changed the state");
		return ret;
	}
	if (before.refusing) {
		CHECK(ret == -ENOTCONN && peek == -ENOTCONN, "refusing: %d/%d", ret, peek);
		CHECK(r->c.stats.refused_reads == before.stats.refused_reads + 1, "refused_reads");
		return ret;
	}
	/*
	 * The tick this reservation would stamp: the clock's or the floor's
	 * if later than the last; else the last while it has room; else the
	 * next.  Above the ceiling: refused, at once, counted once.
	 */
	used = clock_tick > before.floor_tick ? clock_tick : before.floor_tick;
	if (used <= before.last_tick)
		used = before.next_seq <= before.seq_max ? before.last_tick :
		       before.last_tick + 1;
	if (fz_above_ceiling(cfg, used, before.ceiling_ms)) {
		CHECK(ret == -ENOTCONN && peek == -ENOTCONN,
		      "tick %llu above the ceiling %llu: %d/%d",
		      (unsigned long long)used, (unsigned long long)before.ceiling_ms,
		      ret, peek);
		CHECK(r->c.stats.refused_reads == before.stats.refused_reads + 1, "refused_reads");
		CHECK(r->c.ceiling_reached, "ceiling_reached not set");
		CHECK(r->c.ceiling_hits == before.ceiling_hits + !before.ceiling_reached,
		      "ceiling_hits");
		before.stats.refused_reads++;
		before.ceiling_reached = true;
		before.ceiling_hits = r->c.ceiling_hits;
		CHECK(fz_core_eq(&before, &r->c), "a refusal at the ceiling changed the state");
		return ret;
	}
	CHECK(ret != -ENOTCONN, "ENOTCONN below the ceiling");
	if (ret == -EOVERFLOW) {
		CHECK(peek == -EOVERFLOW, "peek %d, reserve EOVERFLOW", peek);
		CHECK(clock_tick > r->c.ts_max || r->c.floor_tick > r->c.ts_max,
		      "EOVERFLOW while the clock's tick fits");
		return ret;
	}
	if (ret == -EAGAIN) {
		u64 r2 = 0;

		CHECK(peek == 0, "peek %d, reserve EAGAIN", peek);
		CHECK(b.retry_ms == retry, "peek and reserve name other retry times");
		CHECK(b.retry_ms > now, "retry time %llu not after now %llu",
		      (unsigned long long)b.retry_ms, (unsigned long long)now);
		CHECK(fz_core_eq(&before, &r->c), "EAGAIN changed the state");
		/* At the retry time the next tick has started. */
		CHECK(sf_core_peek(&r->c, b.retry_ms, &r2) != 0,
		      "still used up at the retry time %llu",
		      (unsigned long long)b.retry_ms);
		return ret;
	}
	CHECK(ret > 0 && (u32)ret <= want && ret <= SNOWFLAKE_MAX_IDS_PER_READ,
	      "reserve returned %d for %u", ret, want);
	CHECK(peek == 1, "peek %d, reserve succeeded", peek);
	CHECK(b.count == (u32)ret, "count %u, returned %d", b.count, ret);

	last = b.first + b.count - 1;
	CHECK(last >= b.first, "block wraps");
	CHECK(!(last >> 63), "bit 63 set: %llx", (unsigned long long)last);
	if (r->have_last)
		CHECK(b.first > r->last_id, "ID %llx not above the last %llx",
		      (unsigned long long)b.first, (unsigned long long)r->last_id);
	r->have_last = true;
	r->last_id = last;
	r->last_count = b.count;

	node_mask = fz_mask(r->c.ts_shift) & ~fz_mask(cfg->sequence_bits);
	CHECK((b.first & node_mask) == r->c.node && (last & node_mask) == r->c.node,
	      "datacenter/worker fields of %llx", (unsigned long long)b.first);
	seq = b.first & fz_mask(cfg->sequence_bits);
	CHECK(seq + b.count - 1 <= r->c.seq_max, "block carries out of the sequence field");
	ts = b.first >> r->c.ts_shift;
	CHECK(ts == (last >> r->c.ts_shift), "block spans two ticks");
	CHECK(ts <= r->c.ts_max, "timestamp past timestamp_bits");
	CHECK(ts >= r->c.floor_tick, "timestamp %llu below the floor's tick %llu",
	      (unsigned long long)ts, (unsigned long long)r->c.floor_tick);
	CHECK(ts >= clock_tick, "timestamp %llu below the clock's tick %llu",
	      (unsigned long long)ts, (unsigned long long)clock_tick);
	CHECK(ts == used, "timestamp %llu, not the tick %llu it would use",
	      (unsigned long long)ts, (unsigned long long)used);
	CHECK(!fz_above_ceiling(cfg, ts, r->c.ceiling_ms),
	      "timestamp %llu above the ceiling %llu",
	      (unsigned long long)ts, (unsigned long long)r->c.ceiling_ms);
	/* In ms: the ID's tick starts at or after the floor. */
	CHECK((unsigned __int128)cfg->epoch_ms + (unsigned __int128)ts * cfg->time_unit_ms >=
	      r->c.floor_ms || r->c.floor_ms <= cfg->epoch_ms, "below floor_ms");
	CHECK(sf_core_last_timestamp(&r->c) == cfg->epoch_ms + ts * cfg->time_unit_ms,
	      "last_timestamp");
	CHECK(r->c.issued, "not marked issued");
	CHECK(r->c.stats.ids_issued == before.stats.ids_issued + b.count, "ids_issued");
	CHECK(r->c.stats.reads == before.stats.reads + 1, "reads");
	if (!(cfg->flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE) && ts > before.last_tick)
		CHECK(seq == 0, "a new tick starts at sequence %llu", (unsigned long long)seq);
	return ret;
}

static void op_reserve(struct run *r)
{
	u8 mode = fin_u8(&r->in);
	u32 want, rnd = fin_u32(&r->in);
	unsigned int i, n = 1;

	switch (mode & 3) {
	case 0:
		want = 1;
		break;
	case 1:
		want = fin_range(&r->in, SNOWFLAKE_MAX_IDS_PER_READ);
		break;
	case 2:
		want = fin_u32(&r->in);
		break;
	default:
		/* A burst at the same now: exhausts small sequences. */
		want = 1 + fin_range(&r->in, 63);
		n = 1 + fin_range(&r->in, 63);
		break;
	}
	for (i = 0; i < n; i++)
		if (reserve_checked(r, r->now, want, rnd + i) < 0)
			break;
}

static void op_undeliver(struct run *r)
{
	struct sf_core before = r->c;
	u32 count;
	bool none;

	if (!r->last_count)
		return;
	none = fin_bool(&r->in);
	count = none ? r->last_count : fin_range(&r->in, r->last_count - 1);
	sf_core_undeliver(&r->c, count, none);
	CHECK(r->c.stats.ids_issued == before.stats.ids_issued - count, "ids_issued");
	CHECK(r->c.stats.reads == before.stats.reads - none, "reads");
	before.stats = r->c.stats;
	CHECK(fz_core_eq(&before, &r->c), "undeliver changed more than counters");
	r->last_count = 0;
}

static void op_advance(struct run *r)
{
	u64 step;

	switch (fin_u8(&r->in) % 4) {
	case 0:
		step = fin_range(&r->in, 3);
		break;
	case 1:
		step = fin_range(&r->in, 5000);
		break;
	case 2:
		step = fin_range(&r->in, 1ULL << 32);
		break;
	default:
		step = fin_range(&r->in, 1ULL << 45);
		break;
	}
	r->now = r->now + step < NOW_MAX ? r->now + step : NOW_MAX;
}

/* Wait for the next tick the way a blocking read does, then reserve. */
static void op_wait_reserve(struct run *r)
{
	u64 retry = 0;

	if (sf_core_peek(&r->c, r->now, &retry) == 0 && retry < NOW_MAX) {
		CHECK(retry > r->now, "retry time not in the future");
		r->now = retry;
	}
	reserve_checked(r, r->now, 1 + fin_range(&r->in, 7), fin_u32(&r->in));
}

static void op_strict(struct run *r)
{
	bool strict = fin_bool(&r->in), set = fin_bool(&r->in);

	sf_core_set_strict(&r->c, strict, set);
	CHECK(r->c.strict == strict && r->c.worker_set == set, "strict");
	CHECK(!!r->c.refusing == (strict && !set), "refusing");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r;

	memset(&r, 0, sizeof(r));
	r.in.p = data;
	r.in.left = size;
	switch (fin_u8(&r.in) % 4) {
	case 0:
		r.now = 1795219200000ULL;	/* 2026-11-21 */
		break;
	case 1:
		r.now = fin_range(&r.in, 1ULL << 43);
		break;
	default:
		r.now = fin_range(&r.in, NOW_MAX);
		break;
	}

	while (r.in.left) {
		u8 op = fin_u8(&r.in);

		if (!r.live || op % 16 == 0) {
			op_init(&r);
			if (r.live) {
				check_state(&r);
				check_clock(&r);
			}
			continue;
		}
		switch (op % 16) {
		case 1: op_set_config(&r); break;
		case 2: op_set_ids(&r); break;
		case 3: op_strict(&r); break;
		case 4: case 5: op_set_floor(&r); break;
		case 6: op_catch_up(&r); break;
		case 7: op_undeliver(&r); break;
		case 8: case 9: op_advance(&r); break;
		case 10: op_wait_reserve(&r); break;
		case 12: op_window(&r); break;
		default: op_reserve(&r); break;
		}
		check_state(&r);
		check_clock(&r);
	}
	return 0;
}
