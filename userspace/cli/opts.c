// SPDX-License-Identifier: GPL-2.0
/*
 * Command-line parsing of snowflake(1).  Everything a command line can get
 * wrong is found here, before the device is touched: a usage error (exit 2)
 * never changes anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opts.h"

static const char * const cmd_names[] = {
	[SF_CMD_NONE] = "snowflake",
	[SF_CMD_NEXT] = "next",
	[SF_CMD_DECODE] = "decode",
	[SF_CMD_CONFIG] = "config",
	[SF_CMD_STATS] = "stats",
	[SF_CMD_UUID] = "uuid",
};

const char *sf_cmd_name(enum sf_cmd cmd)
{
	if ((size_t)cmd >= sizeof(cmd_names) / sizeof(cmd_names[0]))
		return "snowflake";
	return cmd_names[cmd];
}

static enum sf_cmd cmd_of(const char *s)
{
	size_t i;

	for (i = SF_CMD_NEXT; i < sizeof(cmd_names) / sizeof(cmd_names[0]); i++)
		if (!strcmp(s, cmd_names[i]))
			return (enum sf_cmd)i;
	return SF_CMD_NONE;
}

int sf_parse_uint(const char *s, uint64_t max, uint64_t *val)
{
	bool overflow = false;
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (unsigned int)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			overflow = true;	/* keep checking the syntax */
		else
			v = v * 10 + d;
	}
	if (overflow || v > max)
		return -ERANGE;
	*val = v;
	return 0;
}

int sf_parse_format(const char *s, enum snowflake_format *fmt)
{
	if (!strcmp(s, "dec"))
		*fmt = SNOWFLAKE_FORMAT_DEC;
	else if (!strcmp(s, "hex"))
		*fmt = SNOWFLAKE_FORMAT_HEX;
	else if (!strcmp(s, "json"))
		*fmt = SNOWFLAKE_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

int sf_parse_bits(const char *s, struct snowflake_config *layout)
{
	uint64_t w[4];
	char buf[64];
	char *p, *save = NULL, *tok;
	size_t n = 0;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	/* Four fields, no empty one: "41/5//12" and "41/5/5/12/" are wrong. */
	for (p = buf; *p; p++)
		if (*p == '/' && (p == buf || p[1] == '/' || p[1] == '\0'))
			return -EINVAL;
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (n == 4 || sf_parse_uint(tok, SNOWFLAKE_ID_BITS, &w[n]))
			return -EINVAL;
		n++;
	}
	if (n != 4)
		return -EINVAL;
	layout->timestamp_bits = (uint8_t)w[0];
	layout->datacenter_bits = (uint8_t)w[1];
	layout->worker_bits = (uint8_t)w[2];
	layout->sequence_bits = (uint8_t)w[3];
	return 0;
}

int sf_format_time(uint64_t unix_ms, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_ms / 1000);
	struct tm tm;
	size_t n;
	int m;

	/* Four-digit years only: ISO-8601 without an expanded year. */
	if (unix_ms / 1000 > 253402300799ULL || !gmtime_r(&secs, &tm))
		return -EOVERFLOW;
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n)
		return -ENOSPC;
	m = snprintf(buf + n, len - n, ".%03uZ", (unsigned int)(unix_ms % 1000));
	if (m < 0 || (size_t)m >= len - n)
		return -ENOSPC;
	return (int)n + m;
}

const char *sf_cli_device(const struct sf_cli *cli)
{
	const char *env;

	if (cli->device)
		return cli->device;
	env = secure_getenv(SNOWFLAKE_PATH_ENV);
	if (env && *env)
		return env;
	return SNOWFLAKE_DEFAULT_PATH;
}

void sf_cli_free(struct sf_cli *cli)
{
	free(cli->ids);
	free(cli->is_uuid);
	free(cli->uuids);
	cli->ids = NULL;
	cli->is_uuid = NULL;
	cli->uuids = NULL;
	cli->nids = 0;
	cli->cap = 0;
}

static int __attribute__((format(printf, 3, 4)))
usage_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return SF_EXIT_USAGE;
}

/* Long-only options have values above any character. */
enum {
	OPT_DEVICE = 256,
	OPT_JSON,
	OPT_FROM_DEVICE,
	OPT_EPOCH,
	OPT_UNIT,
	OPT_BITS,
	OPT_WORKER,
	OPT_DATACENTER,
	OPT_RANDOM,
	OPT_FLOOR,
	OPT_FENCE,
	OPT_REARM,
	OPT_PROMETHEUS,
	OPT_VERSION,
	OPT_FORCE,
	OPT_SAVE,
	OPT_STRICT,
};

static const struct option global_opts[] = {
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const struct option next_opts[] = {
	{ "count", required_argument, NULL, 'n' },
	{ "format", required_argument, NULL, 'f' },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option decode_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "layout-from-device", no_argument, NULL, OPT_FROM_DEVICE },
	{ "epoch", required_argument, NULL, OPT_EPOCH },
	{ "unit", required_argument, NULL, OPT_UNIT },
	{ "bits", required_argument, NULL, OPT_BITS },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option config_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "worker", required_argument, NULL, OPT_WORKER },
	{ "datacenter", required_argument, NULL, OPT_DATACENTER },
	{ "random-sequence", required_argument, NULL, OPT_RANDOM },
	{ "floor", required_argument, NULL, OPT_FLOOR },
	{ "fence", required_argument, NULL, OPT_FENCE },
	{ "rearm", no_argument, NULL, OPT_REARM },
	{ "save", no_argument, NULL, OPT_SAVE },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option uuid_opts[] = {
	{ "count", required_argument, NULL, 'n' },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const struct option stats_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The option getopt_long() just complained about, as the user wrote it
 * (without "=value").
 */
static const char *bad_option(char **argv, int argc, char *buf, size_t len)
{
	const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : NULL;

	if (a && a[0] == '-' && a[1] == '-') {
		snprintf(buf, len, "%.*s", (int)strcspn(a, "="), a);
		return buf;
	}
	if (optopt > 0 && optopt < 256) {
		snprintf(buf, len, "-%c", optopt);
		return buf;
	}
	return a ? a : "?";
}

/* A number option: 0, or a usage error naming the option. */
static int num_opt(const char *opt, const char *arg, uint64_t min, uint64_t max,
		   uint64_t *val, char *err, size_t errlen)
{
	int ret = sf_parse_uint(arg, max, val);

	if (ret == -EINVAL)
		return usage_err(err, errlen, "%s: '%s' is not an unsigned decimal number",
				 opt, arg);
	if (ret || *val < min)
		return usage_err(err, errlen, "%s: %s is out of range (%llu..%llu)",
				 opt, arg, (unsigned long long)min,
				 (unsigned long long)max);
	return 0;
}

/* Room for one more ID of decode. */
static int grow_ids(struct sf_cli *cli)
{
	size_t cap = cli->cap ? cli->cap * 2 : 16;
	uint64_t *ids;
	bool *is_uuid;
	uint8_t (*uuids)[SNOWFLAKE_UUID_SIZE];

	if (cli->nids < cli->cap)
		return 0;
	ids = realloc(cli->ids, cap * sizeof(*ids));
	if (ids)
		cli->ids = ids;
	is_uuid = realloc(cli->is_uuid, cap * sizeof(*is_uuid));
	if (is_uuid)
		cli->is_uuid = is_uuid;
	uuids = realloc(cli->uuids, cap * sizeof(*uuids));
	if (uuids)
		cli->uuids = uuids;
	if (!ids || !is_uuid || !uuids)
		return -ENOMEM;
	cli->cap = cap;
	return 0;
}

int sf_check_id(const struct snowflake_config *layout, uint64_t id, const char *text,
		const char *which, char *err, size_t errlen)
{
	struct snowflake_parts parts;
	int ret = snowflake_decode(layout, id, &parts);

	if (ret == -EOVERFLOW)
		return usage_err(err, errlen,
				 "decode: %s: its time does not fit 64-bit Unix ms: timestamp %llu ticks of %u ms from epoch_ms %llu (the %s%u/%u/%u/%u layout)",
				 text, (unsigned long long)(id >> (layout->datacenter_bits +
								   layout->worker_bits +
								   layout->sequence_bits)),
				 layout->time_unit_ms, (unsigned long long)layout->epoch_ms,
				 which, layout->timestamp_bits, layout->datacenter_bits,
				 layout->worker_bits, layout->sequence_bits);
	if (ret)
		return usage_err(err, errlen,
				 "decode: %s has bits set above the %s%u/%u/%u/%u layout",
				 text, which, layout->timestamp_bits, layout->datacenter_bits,
				 layout->worker_bits, layout->sequence_bits);
	return 0;
}

int sf_cli_add_id(struct sf_cli *cli, const char *text, const char *where, char *err,
		  size_t errlen)
{
	size_t i = cli->nids;
	uint64_t ms;
	int ret;

	if (grow_ids(cli))
		return usage_err(err, errlen, "decode: out of memory");
	cli->ids[i] = 0;
	cli->is_uuid[i] = false;
	/* A UUID in the canonical form: only a UUIDv7 has a time. */
	if (!snowflake_uuid_parse(text, cli->uuids[i])) {
		if (snowflake_uuid_time(cli->uuids[i], &ms))
			return usage_err(err, errlen,
					 "decode: %s'%s' is not a UUIDv7 (version 7, RFC 9562 variant)",
					 where, text);
		cli->is_uuid[i] = true;
		cli->nids++;
		return 0;
	}
	ret = snowflake_parse(text, &cli->ids[i]);
	if (ret == -ERANGE)
		return usage_err(err, errlen, "decode: %s'%s' does not fit 64 bits", where, text);
	if (ret)
		return usage_err(err, errlen,
				 "decode: %s'%s' is not an ID (decimal or 0x-hex)",
				 where, text);
	if (!cli->from_device) {
		char what[160];

		snprintf(what, sizeof(what), "%s%s", where, text);
		ret = sf_check_id(&cli->layout, cli->ids[i], what, "", err, errlen);
		if (ret)
			return ret;
	}
	cli->nsnowflakes++;
	cli->nids++;
	return 0;
}

static int parse_ids(struct sf_cli *cli, int argc, char **argv, int first,
		     char *err, size_t errlen)
{
	int i, ret;

	/* No ID, or "-" alone: the IDs are read from standard input. */
	if (first >= argc || (argc - first == 1 && !strcmp(argv[first], "-"))) {
		cli->ids_stdin = true;
		cli->ids_stdin_implicit = first >= argc;
		return 0;
	}
	for (i = first; i < argc; i++) {
		if (!strcmp(argv[i], "-"))
			return usage_err(err, errlen,
					 "decode: '-' (standard input) goes alone, without IDs as arguments");
		ret = sf_cli_add_id(cli, argv[i], "", err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* Does the option word @w (NAME or NAME=VALUE) name one of @names? */
static bool names_param(const char *w, size_t wl, const char *const *names)
{
	const char *eq = memchr(w, '=', wl);
	size_t nl = eq ? (size_t)(eq - w) : wl;

	for (; *names; names++)
		if (strlen(*names) == nl && memcmp(*names, w, nl) == 0)
			return true;
	return false;
}

/* The words of one logical line @l (@ll bytes): is it "options snowflake ..." naming one? */
static bool options_line(const char *l, size_t ll, const char *const *names, char *found,
			 size_t len)
{
	static const char mod[] = "snowflake";
	const char *end = l + ll, *w;
	unsigned int i = 0;
	size_t wl, k;

	while (l < end) {
		while (l < end && (*l == ' ' || *l == '\t' || *l == '\\'))
			l++;
		w = l;
		while (l < end && *l != ' ' && *l != '\t' && *l != '\\')
			l++;
		wl = (size_t)(l - w);
		if (!wl)
			break;
		if (i == 0 && (wl != 7 || memcmp(w, "options", 7) != 0))
			return false;
		if (i == 1) {
			if (wl != sizeof(mod) - 1)
				return false;
			for (k = 0; k < wl; k++)
				if ((w[k] == '-' ? '_' : w[k]) != mod[k])
					return false;
		}
		if (i >= 2 && names_param(w, wl, names)) {
			snprintf(found, len, "%.*s", (int)wl, w);
			return true;
		}
		i++;
	}
	return false;
}

unsigned int sf_modprobe_find(const char *text, size_t n, const char *const *names, char *found,
			      size_t len)
{
	const char *p = text, *end = text + n, *nl, *q;
	unsigned int lineno = 0, first;
	char *joined;
	size_t jl;

	while (p < end) {
		/* One logical line: physical lines joined while one ends in '\'. */
		first = lineno + 1;
		joined = NULL;
		jl = 0;
		do {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				nl = end;
			lineno++;
			q = p;
			while (q < nl && (*q == ' ' || *q == '\t'))
				q++;
			if (!jl && q < nl && *q == '#') {
				p = nl + (nl < end);
				break;
			}
			{
				char *g = realloc(joined, jl + (size_t)(nl - p) + 1);

				if (!g) {
					free(joined);
					return 0;
				}
				joined = g;
			}
			memcpy(joined + jl, p, (size_t)(nl - p));
			jl += (size_t)(nl - p);
			p = nl + (nl < end);
		} while (jl && joined[jl - 1] == '\\' && p < end);
		if (joined && options_line(joined, jl, names, found, len)) {
			free(joined);
			return first;
		}
		free(joined);
	}
	return 0;
}

int sf_check_floor_ahead(uint64_t floor_ms, uint64_t now_ms, bool force, char *err,
			 size_t errlen)
{
	if (force || floor_ms <= now_ms || floor_ms - now_ms <= SF_FLOOR_AHEAD_MAX_MS)
		return 0;
	return usage_err(err, errlen,
			 "config: --floor %llu is %.1f days ahead of now (%llu): a typo? "
			 "snowflake-floord would keep it across reboots; add --force if it is meant",
			 (unsigned long long)floor_ms, (double)(floor_ms - now_ms) / 86400000.0,
			 (unsigned long long)now_ms);
}

/* Checks across the options of config and stats, after parsing. */
static int check_cmd(struct sf_cli *cli, char *err, size_t errlen)
{
	struct timespec ts;

	if (cli->cmd == SF_CMD_STATS && cli->json && cli->prometheus)
		return usage_err(err, errlen, "stats: --json and --prometheus exclude each other");
	if (cli->cmd != SF_CMD_CONFIG)
		return SF_EXIT_OK;
	if (cli->json && (cli->set_worker || cli->set_datacenter || cli->set_random ||
			  cli->set_floor || cli->set_fence || cli->save || cli->strict))
		return usage_err(err, errlen, "config: --json shows the configuration; it takes no change");
	if (cli->strict && !cli->save)
		return usage_err(err, errlen,
				 "config: --strict needs --save: a loaded module cannot turn strict mode on; it is recorded for the module's next load");
	if (cli->strict && (cli->set_worker || cli->set_datacenter))
		return usage_err(err, errlen,
				 "config: --strict leaves the ids to snowflake-agent: not with --worker or --datacenter (a saved worker id would end strict mode's refusal at every load)");
	if (cli->save && !cli->strict && !cli->set_worker)
		return usage_err(err, errlen,
				 "config: --save records the identity given now: it needs --worker N (with --datacenter N), or --strict");
	if (cli->save && (cli->set_random || cli->set_floor || cli->set_fence))
		return usage_err(err, errlen,
				 "config: --save records the ids or strict mode only: not with --random-sequence, --floor or --fence");
	if (cli->force && !cli->set_floor)
		return usage_err(err, errlen, "config: --force goes with --floor");
	if (!cli->set_floor)
		return SF_EXIT_OK;
	clock_gettime(CLOCK_REALTIME, &ts);
	return sf_check_floor_ahead(cli->floor_ms,
				    (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
				    cli->force, err, errlen);
}

static int parse_cmd(struct sf_cli *cli, int argc, char **argv, char *err, size_t errlen)
{
	static const char * const shortopts[] = {
		[SF_CMD_NEXT] = ":n:f:h",
		[SF_CMD_DECODE] = ":h",
		[SF_CMD_CONFIG] = ":h",
		[SF_CMD_STATS] = ":h",
		[SF_CMD_UUID] = ":n:h",
	};
	static const struct option * const longopts[] = {
		[SF_CMD_NEXT] = next_opts,
		[SF_CMD_DECODE] = decode_opts,
		[SF_CMD_CONFIG] = config_opts,
		[SF_CMD_STATS] = stats_opts,
		[SF_CMD_UUID] = uuid_opts,
	};
	const char *name = sf_cmd_name(cli->cmd);
	bool offline = false;
	char obuf[64], nbuf[64];
	int c, ret, li = -1;
	uint64_t v = 0;

	optind = 0;	/* glibc: a full reset, for a second parse in one process */
	opterr = 0;
	/* @li: the long option's index, -1 for a short one (-n or --count). */
	while ((c = getopt_long(argc, argv, shortopts[cli->cmd], longopts[cli->cmd],
				&li)) != -1) {
		switch (c) {
		case 'h':
			cli->help = true;
			return SF_EXIT_OK;
		case OPT_DEVICE:
			if (!*optarg)
				return usage_err(err, errlen, "%s: --device: empty path", name);
			cli->device = optarg;
			break;
		case 'n':
			/* Named as it was given: -n or --count. */
			snprintf(nbuf, sizeof(nbuf), "%s: %s", name, li >= 0 ? "--count" : "-n");
			ret = num_opt(nbuf, optarg, 1, SF_CLI_MAX_COUNT, &cli->count,
				      err, errlen);
			if (ret)
				return ret;
			break;
		case 'f':
			if (sf_parse_format(optarg, &cli->format))
				return usage_err(err, errlen,
						 "next: --format: '%s' is not dec, hex or json",
						 optarg);
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		case OPT_FROM_DEVICE:
			cli->from_device = true;
			cli->layout_required = true;
			break;
		case OPT_EPOCH:
			ret = num_opt("decode: --epoch", optarg, 0, INT64_MAX, &v,
				      err, errlen);
			if (ret)
				return ret;
			cli->layout.epoch_ms = v;
			offline = true;
			break;
		case OPT_UNIT:
			ret = num_opt("decode: --unit", optarg, 1, SNOWFLAKE_MAX_TIME_UNIT_MS,
				      &v, err, errlen);
			if (ret)
				return ret;
			cli->layout.time_unit_ms = (uint32_t)v;
			offline = true;
			break;
		case OPT_BITS:
			if (sf_parse_bits(optarg, &cli->layout))
				return usage_err(err, errlen,
						 "decode: --bits: '%s' is not TIMESTAMP/DATACENTER/WORKER/SEQUENCE widths (e.g. 41/5/5/12)",
						 optarg);
			offline = true;
			break;
		case OPT_WORKER:
			ret = num_opt("config: --worker", optarg, 0, UINT32_MAX, &v,
				      err, errlen);
			if (ret)
				return ret;
			cli->worker = (uint32_t)v;
			cli->set_worker = true;
			break;
		case OPT_DATACENTER:
			ret = num_opt("config: --datacenter", optarg, 0, UINT32_MAX, &v,
				      err, errlen);
			if (ret)
				return ret;
			cli->datacenter = (uint32_t)v;
			cli->set_datacenter = true;
			break;
		case OPT_RANDOM:
			ret = num_opt("config: --random-sequence", optarg, 0, 1, &v,
				      err, errlen);
			if (ret)
				return ret;
			cli->random_sequence = v;
			cli->set_random = true;
			break;
		case OPT_FLOOR:
			ret = num_opt("config: --floor", optarg, 0, INT64_MAX,
				      &cli->floor_ms, err, errlen);
			if (ret)
				return ret;
			cli->set_floor = true;
			break;
		case OPT_FENCE:
			ret = num_opt("config: --fence", optarg, 0, 1, &v, err, errlen);
			if (ret)
				return ret;
			cli->fence = v;
			cli->set_fence = true;
			break;
		case OPT_REARM:
			cli->rearm = true;
			break;
		case OPT_SAVE:
			cli->save = true;
			break;
		case OPT_STRICT:
			cli->strict = true;
			break;
		case OPT_PROMETHEUS:
			cli->prometheus = true;
			break;
		case OPT_FORCE:
			cli->force = true;
			break;
		case ':':
			return usage_err(err, errlen, "%s: option %s needs a value", name,
					 bad_option(argv, argc, obuf, sizeof(obuf)));
		default:
			return usage_err(err, errlen, "%s: unknown option %s", name,
					 bad_option(argv, argc, obuf, sizeof(obuf)));
		}
		li = -1;
	}

	if (cli->rearm && !cli->set_worker)
		return usage_err(err, errlen,
				 "config: --rearm needs --worker: a VM fork is ended by assigning a worker id");
	if (cli->cmd != SF_CMD_DECODE) {
		if (optind < argc)
			return usage_err(err, errlen, "%s: unexpected argument '%s'", name,
					 argv[optind]);
		return check_cmd(cli, err, errlen);
	}

	if (offline && cli->from_device)
		return usage_err(err, errlen,
				 "decode: --layout-from-device and --epoch/--unit/--bits exclude each other");
	cli->from_device = !offline;
	if (offline && snowflake_check_layout(&cli->layout))
		return usage_err(err, errlen,
				 "decode: the layout %u/%u/%u/%u (unit %u ms) is not valid: widths 1+/0..31/0..31/0..31 summing to at most 63",
				 cli->layout.timestamp_bits, cli->layout.datacenter_bits,
				 cli->layout.worker_bits, cli->layout.sequence_bits,
				 cli->layout.time_unit_ms);
	return parse_ids(cli, argc, argv, optind, err, errlen);
}

int sf_cli_parse(struct sf_cli *cli, int argc, char **argv, char *err, size_t errlen)
{
	char obuf[64];
	int c;

	memset(cli, 0, sizeof(*cli));
	cli->count = 1;
	cli->format = SNOWFLAKE_FORMAT_DEC;
	snowflake_default_layout(&cli->layout);
	if (errlen)
		err[0] = '\0';

	/* Global options, up to the command ("+": stop at the first word). */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", global_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cli->help = true;
			return SF_EXIT_OK;
		case OPT_VERSION:
			cli->version = true;
			return SF_EXIT_OK;
		case OPT_DEVICE:
			if (!*optarg)
				return usage_err(err, errlen, "--device: empty path");
			cli->device = optarg;
			break;
		case ':':
			return usage_err(err, errlen, "option %s needs a value",
					 bad_option(argv, argc, obuf, sizeof(obuf)));
		default:
			return usage_err(err, errlen, "unknown option %s",
					 bad_option(argv, argc, obuf, sizeof(obuf)));
		}
	}
	if (optind >= argc)
		return usage_err(err, errlen, "no command given");

	/* `snowflake help [COMMAND]` is `snowflake [COMMAND] --help`. */
	if (!strcmp(argv[optind], "help")) {
		cli->help = true;
		if (optind + 1 < argc) {
			cli->cmd = cmd_of(argv[optind + 1]);
			if (cli->cmd == SF_CMD_NONE) {
				cli->help = false;
				return usage_err(err, errlen, "help: unknown command '%s'",
						 argv[optind + 1]);
			}
		}
		/* help takes one word: anything after it is a mistake, not ignored. */
		if (optind + 2 < argc) {
			cli->help = false;
			return usage_err(err, errlen, "help: unexpected argument '%s'",
					 argv[optind + 2]);
		}
		return SF_EXIT_OK;
	}

	cli->cmd = cmd_of(argv[optind]);
	if (cli->cmd == SF_CMD_NONE)
		return usage_err(err, errlen, "unknown command '%s'", argv[optind]);
	return parse_cmd(cli, argc - optind, argv + optind, err, errlen);
}
