// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake(1): IDs, decoding, configuration and counters of /dev/snowflake,
 * through libsnowflake only.
 *
 * Exit codes: 0 done; 1 the device failed (cannot open it, EPERM, ENOTCONN,
 * ...); 2 bad command line, nothing done.  Messages go to stderr as
 * "snowflake: <what>: <reason>".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <snowflake.h>

#include "opts.h"

#define PROG	"snowflake"
#ifndef SNOWFLAKE_VERSION
#define SNOWFLAKE_VERSION	"unknown"
#endif

/* IDs asked from the device at once: one read's worth. */
#define CHUNK	SNOWFLAKE_MAX_IDS_PER_READ

static const char usage_main[] =
"Usage: snowflake [--device PATH] COMMAND [OPTIONS]\n"
"\n"
"Time-ordered 64-bit IDs from /dev/snowflake.\n"
"\n"
"Commands:\n"
"  next      print new IDs\n"
"  decode    split IDs into time, datacenter, worker and sequence; UUIDv7s\n"
"            into their time\n"
"  config    show the configuration, or set the ids, random sequence, floor\n"
"  stats     show the counters and clock (also in Prometheus format)\n"
"  uuid      print new UUIDv7s from /dev/uuidv7\n"
"  help [COMMAND]  show the help of a command\n"
"\n"
"Options:\n"
"  --device PATH   the device (default: $SNOWFLAKE_DEVICE, else /dev/snowflake)\n"
"  -h, --help      show this help\n"
"  --version       show the version\n"
"\n"
"Exit status: 0 success, 1 the device failed, 2 bad command line (nothing done).\n"
"Run 'snowflake COMMAND --help' for the options of a command; see snowflake(1).\n";

static const char usage_next[] =
"Usage: snowflake next [-n N] [--format dec|hex|json] [--device PATH]\n"
"\n"
"Print N new IDs (default 1), in increasing order, one per line.\n"
"\n"
"  -n, --count N      how many IDs, 1..4294967295 (default 1)\n"
"  -f, --format FMT   dec (default): decimal; hex: 0x-hexadecimal;\n"
"                     json: a JSON array of decimal strings\n"
"  --device PATH      the device\n"
"  -h, --help         show this help\n";

static const char usage_uuid[] =
"Usage: snowflake uuid [-n N] [--device PATH]\n"
"\n"
"Print N new UUIDv7s (default 1) from /dev/uuidv7, in increasing order, one\n"
"per line, in the canonical form (017f22e2-79b0-7cc3-98c4-dc0c0c07398f).\n"
"\n"
"  -n, --count N      how many UUIDs, 1..4294967295 (default 1)\n"
"  --device PATH      the node (default: $SNOWFLAKE_UUID_DEVICE, else /dev/uuidv7)\n"
"  -h, --help         show this help\n";

static const char usage_decode[] =
"Usage: snowflake decode [--json] [--layout-from-device] [--device PATH] [ID... | -]\n"
"       snowflake decode [--json] [--epoch MS] [--unit MS] [--bits T/D/W/S] [ID... | -]\n"
"\n"
"Split each ID (decimal or 0x-hex, optionally in double quotes) into its UTC\n"
"time, datacenter, worker and sequence; with no ID or '-', the IDs (words)\n"
"are read from standard input.  The layout is read from the device, unless\n"
"--epoch, --unit or --bits is given: then the default layout with those\n"
"values changed is used, and the device is not opened.  A UUIDv7 in the\n"
"canonical form (any case, optionally quoted) is decoded into its time (no\n"
"layout, no device).\n"
"\n"
"  --json                 one JSON object per line (the ID as a string)\n"
"  --layout-from-device   read the layout from the device, fail without one\n"
"                         (default: the device's, else the default layout\n"
"                         with a note on stderr)\n"
"  --epoch MS             epoch, Unix ms (default 1288834974657)\n"
"  --unit MS              length of a tick in ms, 1..3600000 (default 1)\n"
"  --bits T/D/W/S         timestamp/datacenter/worker/sequence widths\n"
"                         (default 41/5/5/12)\n"
"  --device PATH          the device\n"
"  -h, --help             show this help\n";

static const char usage_config[] =
"Usage: snowflake config [--json] [--device PATH]\n"
"       snowflake config [--worker N] [--datacenter N] [--random-sequence 0|1]\n"
"                        [--floor MS [--force]] [--fence 0|1] [--rearm]\n"
"                        [--device PATH]\n"
"       snowflake config --datacenter N --worker N --save\n"
"       snowflake config --strict --save\n"
"\n"
"Without options, show the configuration, one 'name value' per line (the\n"
"names of the sysfs files).  With options, change it (needs CAP_SYS_ADMIN or\n"
"the group snowflake-admin: the device is opened for writing then):\n"
"every value is checked first, and nothing is changed when one is wrong.\n"
"\n"
"  --worker N            worker id; assigns it (ends strict mode's refusal)\n"
"  --datacenter N        datacenter id (alone: a strict device keeps refusing)\n"
"  --random-sequence B   1: start each tick's sequence at a random number\n"
"  --json                show the configuration as one JSON object\n"
"  --floor MS            raise the floor: no ID gets a timestamp below MS (Unix ms)\n"
"  --force               a --floor more than a day ahead of now (else refused)\n"
"  --fence B             1: fence the device (reads fail with ENOTCONN until\n"
"                        lifted); 0: lift the fence (applied after the ids)\n"
"  --rearm               with --worker, after a VM clone or snapshot restore:\n"
"                        assign it for the VM forks seen (ends that refusal)\n"
"  --save                with --worker (and --datacenter): this host's\n"
"                        identity, applied now and recorded in\n"
"                        " SF_IDENTITY_CONF " for every\n"
"                        later load (needs root); refused on a strict device\n"
"  --strict              with --save: record strict=1 (the agent leases the\n"
"                        ids) for the module's next load\n"
"  --device PATH         the device\n"
"  -h, --help            show this help\n";

static const char usage_stats[] =
"Usage: snowflake stats [--json | --prometheus] [--device PATH]\n"
"\n"
"Show the counters and the clock, one 'name value' per line (the names of\n"
"the sysfs files).\n"
"\n"
"  --json         one JSON object, the same names\n"
"  --prometheus   Prometheus text format, e.g. for node_exporter's textfile\n"
"                 collector\n"
"  --device PATH  the device\n"
"  -h, --help     show this help\n";

static const char *usage_of(enum sf_cmd cmd)
{
	switch (cmd) {
	case SF_CMD_NEXT:
		return usage_next;
	case SF_CMD_DECODE:
		return usage_decode;
	case SF_CMD_CONFIG:
		return usage_config;
	case SF_CMD_STATS:
		return usage_stats;
	case SF_CMD_UUID:
		return usage_uuid;
	default:
		return usage_main;
	}
}

static void __attribute__((format(printf, 1, 2))) msg(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A device error: the message, a hint for the common ones, exit code 1. */
static int dev_err(const char *what, int err)
{
	msg("%s: %s", what, snowflake_strerror(err));
	if (err == -EPERM)
		msg("hint: changing the configuration needs CAP_SYS_ADMIN (root) or membership in the group snowflake-admin, which may open the device for writing (see snowflake(4))");
	else if (err == -ENOTCONN)
		msg("hint: strict mode and no worker id set yet (snowflake config --worker N), or fenced: see 'snowflake config' and snowflake-agent(8)");
	return SF_EXIT_RUNTIME;
}

/* @flags: 0, or SNOWFLAKE_CONFIGURE to change the configuration. */
static int open_dev(const struct sf_cli *cli, struct snowflake **sf, int flags)
{
	const char *path = sf_cli_device(cli);
	char what[512];
	int ret;

	ret = snowflake_open(sf, path, flags);
	if (ret) {
		snprintf(what, sizeof(what), "cannot open %s", path);
		return dev_err(what, ret);
	}
	return 0;
}

/* The errno of the first failed write to stdout (0: none yet). */
static int out_errno;

/*
 * Has writing stdout failed?  Asked right after a printf, when errno is
 * still the write's own (EPIPE, ENOSPC), which is kept for the message.
 */
static bool output_error(void)
{
	if (!ferror(stdout))
		return false;
	if (!out_errno)
		out_errno = errno ? errno : EIO;
	return true;
}

/*
 * After a chunk of output: true when writing failed, so that no more is
 * taken from the device (or decoded) for nothing.
 */
static bool output_failed(void)
{
	errno = 0;
	if (fflush(stdout) && !out_errno)
		out_errno = errno ? errno : EIO;
	return output_error();
}

/*
 * Flush stdout: a full disk is a runtime error (exit 1, with a message); a
 * closed pipe too, silently (SIGPIPE is ignored, see main(): the reader
 * went away on purpose, `snowflake next -n 100 | head -1`).
 */
static int finish_output(void)
{
	if (output_failed()) {
		if (out_errno != EPIPE)
			msg("writing the output: %s", strerror(out_errno));
		return SF_EXIT_RUNTIME;
	}
	return SF_EXIT_OK;
}

static int cmd_next(const struct sf_cli *cli)
{
	static uint64_t ids[CHUNK];
	char buf[SNOWFLAKE_FORMAT_MAX];
	struct snowflake *sf;
	uint64_t left = cli->count;
	bool first = true;
	int ret;

	ret = open_dev(cli, &sf, 0);
	if (ret)
		return ret;
	if (cli->format == SNOWFLAKE_FORMAT_JSON)
		fputs("[\n", stdout);
	while (left) {
		size_t want = left < CHUNK ? (size_t)left : CHUNK;
		long n = snowflake_next_n(sf, ids, want);
		long i;

		if (n < 0) {
			fflush(stdout);
			snowflake_close(sf);
			return dev_err("next: reading IDs", (int)n);
		}
		for (i = 0; i < n; i++) {
			snowflake_format(ids[i], cli->format, buf, sizeof(buf));
			if (cli->format == SNOWFLAKE_FORMAT_JSON)
				printf("%s  %s", first ? "" : ",\n", buf);
			else
				printf("%s\n", buf);
			first = false;
		}
		left -= (uint64_t)n;
		/* Stop at the first write error: no more IDs taken for nothing. */
		if (left && output_failed()) {
			snowflake_close(sf);
			return finish_output();
		}
	}
	if (cli->format == SNOWFLAKE_FORMAT_JSON)
		fputs("\n]\n", stdout);
	snowflake_close(sf);
	return finish_output();
}

/*
 * The device's layout into @layout; without a device (a laptop reading IDs
 * from logs) and without --layout-from-device, the default one, with a note.
 */
static int decode_layout(const struct sf_cli *cli, struct snowflake_config *layout,
			 bool *fallback)
{
	const char *path = sf_cli_device(cli);
	struct snowflake *sf;
	char what[512];
	int ret;

	*fallback = false;
	ret = snowflake_open(&sf, path, 0);
	if ((ret == -ENOENT || ret == -ENODEV || ret == -ENXIO) && !cli->layout_required) {
		msg("note: no device %s: decoding with the default layout %u/%u/%u/%u, epoch_ms %llu, time_unit_ms %u (--bits, --epoch, --unit for another; --layout-from-device to require the device)",
		    path, layout->timestamp_bits, layout->datacenter_bits, layout->worker_bits,
		    layout->sequence_bits, (unsigned long long)layout->epoch_ms,
		    layout->time_unit_ms);
		*fallback = true;
		return 0;
	}
	if (ret) {
		snprintf(what, sizeof(what), "cannot open %s", path);
		return dev_err(what, ret);
	}
	ret = snowflake_get_config(sf, layout);
	snowflake_close(sf);
	if (ret)
		return dev_err("decode: reading the layout", ret);
	return 0;
}

static int cmd_uuid(const struct sf_cli *cli)
{
	static uint8_t uuids[SNOWFLAKE_UUID_MAX_PER_READ][SNOWFLAKE_UUID_SIZE];
	const char *path = cli->device, *env = secure_getenv(SNOWFLAKE_UUID_PATH_ENV);
	char buf[SNOWFLAKE_UUID_STR_MAX], what[512];
	uint64_t left = cli->count;
	struct snowflake *sf;
	int ret;

	/* --device, else $SNOWFLAKE_UUID_DEVICE, else /dev/uuidv7. */
	if (!path)
		path = env && *env ? env : SNOWFLAKE_UUID_DEFAULT_PATH;
	ret = snowflake_uuid_open(&sf, path, 0);
	if (ret) {
		snprintf(what, sizeof(what), "cannot open %s", path);
		return dev_err(what, ret);
	}
	while (left) {
		size_t want = left < SNOWFLAKE_UUID_MAX_PER_READ ? (size_t)left :
			      SNOWFLAKE_UUID_MAX_PER_READ;
		long n = snowflake_uuid_next_n(sf, uuids, want);
		long i;

		if (n < 0) {
			fflush(stdout);
			snowflake_close(sf);
			return dev_err("uuid: reading UUIDs", (int)n);
		}
		for (i = 0; i < n; i++) {
			snowflake_uuid_format(uuids[i], buf, sizeof(buf));
			printf("%s\n", buf);
		}
		left -= (uint64_t)n;
		/* Stop at the first write error, as next does. */
		if (left && output_failed()) {
			snowflake_close(sf);
			return finish_output();
		}
	}
	snowflake_close(sf);
	return finish_output();
}

/* One UUIDv7 argument of decode: its time. */
static void decode_uuid(const struct sf_cli *cli, const uint8_t *u)
{
	char text[SNOWFLAKE_UUID_STR_MAX], when[40];
	uint64_t ms = 0;
	bool has_time;

	snowflake_uuid_format(u, text, sizeof(text));
	snowflake_uuid_time(u, &ms);
	has_time = sf_format_time(ms, when, sizeof(when)) > 0;
	if (cli->json)
		printf("{\"uuid\":\"%s\",\"version\":7,\"time\":%s%s%s,\"unix_ms\":%llu}\n",
		       text, has_time ? "\"" : "", has_time ? when : "null",
		       has_time ? "\"" : "", (unsigned long long)ms);
	else
		printf("uuid=%s version=7 time=%s unix_ms=%llu\n", text,
		       has_time ? when : "-", (unsigned long long)ms);
}


/*
 * decode's IDs from standard input: words separated by blanks or newlines,
 * each checked as an argument would be (nothing is printed before all are
 * read and checked).
 */
static int read_ids(struct sf_cli *cli)
{
	char *line = NULL, *tok, *save, where[64], err[512];
	unsigned long lineno = 0;
	size_t cap = 0;
	int ret = SF_EXIT_OK;

	if (cli->ids_stdin_implicit && isatty(STDIN_FILENO)) {
		msg("decode: no ID given (as arguments, or on standard input: '-')");
		return SF_EXIT_USAGE;
	}
	while (getline(&line, &cap, stdin) > 0) {
		lineno++;
		for (tok = strtok_r(line, " \t\r\n", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n", &save)) {
			snprintf(where, sizeof(where), "standard input line %lu: ", lineno);
			ret = sf_cli_add_id(cli, tok, where, err, sizeof(err));
			if (ret) {
				msg("%s", err);
				goto out;
			}
		}
	}
	if (ferror(stdin)) {
		msg("decode: reading standard input: %s", strerror(errno));
		ret = SF_EXIT_RUNTIME;
	} else if (!cli->nids) {
		msg("decode: no ID on standard input");
		ret = SF_EXIT_USAGE;
	}
out:
	free(line);
	return ret;
}

static int cmd_decode(struct sf_cli *cli)
{
	struct snowflake_config layout = cli->layout;
	char when[40], err[512], text[48];
	bool fallback;
	size_t i;
	int ret;

	if (cli->ids_stdin) {
		ret = read_ids(cli);
		if (ret)
			return ret;
	}
	if (cli->from_device && cli->nsnowflakes) {
		ret = decode_layout(cli, &layout, &fallback);
		if (ret)
			return ret;
		/* Every ID is checked before anything is printed. */
		for (i = 0; i < cli->nids; i++) {
			if (cli->is_uuid[i])
				continue;
			snprintf(text, sizeof(text), "%llu (0x%llx)",
				 (unsigned long long)cli->ids[i],
				 (unsigned long long)cli->ids[i]);
			if (sf_check_id(&layout, cli->ids[i], text,
					fallback ? "default " : "device's ", err, sizeof(err))) {
				msg("%s", err);
				return SF_EXIT_USAGE;
			}
		}
	}

	for (i = 0; i < cli->nids && !output_error(); i++) {
		struct snowflake_parts p;
		bool has_time;

		if (cli->is_uuid[i]) {
			decode_uuid(cli, cli->uuids[i]);
			continue;
		}
		snowflake_decode(&layout, cli->ids[i], &p);
		has_time = sf_format_time(p.unix_ms, when, sizeof(when)) > 0;
		if (cli->json)
			printf("{\"id\":\"%llu\",\"time\":%s%s%s,\"unix_ms\":%llu,\"timestamp\":%llu,"
			       "\"datacenter\":%u,\"worker\":%u,\"sequence\":%u}\n",
			       (unsigned long long)cli->ids[i], has_time ? "\"" : "",
			       has_time ? when : "null", has_time ? "\"" : "",
			       (unsigned long long)p.unix_ms,
			       (unsigned long long)p.timestamp, p.datacenter, p.worker,
			       p.sequence);
		else
			printf("id=%llu time=%s unix_ms=%llu timestamp=%llu datacenter=%u worker=%u sequence=%u\n",
			       (unsigned long long)cli->ids[i], has_time ? when : "-",
			       (unsigned long long)p.unix_ms,
			       (unsigned long long)p.timestamp, p.datacenter, p.worker,
			       p.sequence);
	}
	return finish_output();
}

/*
 * One "name value" line, or with --json one member of a single-line object
 * (numbers as JSON numbers: none of these is an ID, and every one fits the
 * 2^53 of a JavaScript number).  @i: the member's index (0 opens the object).
 */
static void put_value(bool json, size_t i, const char *name, unsigned long long v)
{
	if (json)
		printf("%s\"%s\":%llu", i ? "," : "{", name, v);
	else
		printf("%s %llu\n", name, v);
}

static void put_end(bool json)
{
	if (json)
		puts("}");
}

/*
 * A host never given a worker id serves the default ids, as every other
 * such host does: fine alone, a duplicate ID across hosts.  Said on stderr.
 */
static void no_identity_note(const struct snowflake_config *c, uint32_t state)
{
	if (state & (SNOWFLAKE_STATE_STRICT | SNOWFLAKE_STATE_WORKER_SET))
		return;
	msg("note: no worker id was given to this host: it issues IDs as datacenter %u, worker %u, as every host without one does (fine on a single host); give it its own with 'snowflake config --datacenter D --worker W --save'",
	    c->datacenter_id, c->worker_id);
}

static int show_config(struct snowflake *sf, bool json)
{
	struct snowflake_config c;
	struct snowflake_stats st;
	size_t i = 0;
	int ret;

	ret = snowflake_get_config(sf, &c);
	if (ret)
		return dev_err("config: reading the configuration", ret);
	ret = snowflake_get_stats(sf, &st);
	if (ret)
		return dev_err("config: reading the state", ret);
	put_value(json, i++, "epoch_ms", c.epoch_ms);
	put_value(json, i++, "time_unit_ms", c.time_unit_ms);
	put_value(json, i++, "timestamp_bits", c.timestamp_bits);
	put_value(json, i++, "datacenter_bits", c.datacenter_bits);
	put_value(json, i++, "worker_bits", c.worker_bits);
	put_value(json, i++, "sequence_bits", c.sequence_bits);
	put_value(json, i++, "datacenter_id", c.datacenter_id);
	put_value(json, i++, "worker_id", c.worker_id);
	put_value(json, i++, "random_sequence", !!(c.flags & SNOWFLAKE_CONFIG_RANDOM_SEQUENCE));
	put_value(json, i++, "strict", !!(st.state & SNOWFLAKE_STATE_STRICT));
	put_value(json, i++, "worker_set", !!(st.state & SNOWFLAKE_STATE_WORKER_SET));
	put_value(json, i++, "refusing", !!(st.state & SNOWFLAKE_STATE_REFUSING));
	put_value(json, i++, "fenced", !!(st.state & SNOWFLAKE_STATE_FENCED));
	put_value(json, i++, "floor_ms", st.floor_ms);
	put_value(json, i++, "last_timestamp_ms", st.last_timestamp_ms);
	put_end(json);
	no_identity_note(&c, st.state);
	return finish_output();
}

static uint64_t mask(unsigned int bits)
{
	return bits >= 64 ? UINT64_MAX : (1ULL << bits) - 1;
}

/* Offline checks against the current layout: a usage error changes nothing. */
static int check_settings(const struct sf_cli *cli, const struct snowflake_config *c)
{
	if (cli->set_worker && cli->worker > mask(c->worker_bits)) {
		msg("config: --worker %u does not fit worker_bits %u (0..%llu)", cli->worker,
		    c->worker_bits, (unsigned long long)mask(c->worker_bits));
		return SF_EXIT_USAGE;
	}
	if (cli->set_datacenter && cli->datacenter > mask(c->datacenter_bits)) {
		msg("config: --datacenter %u does not fit datacenter_bits %u (0..%llu)",
		    cli->datacenter, c->datacenter_bits,
		    (unsigned long long)mask(c->datacenter_bits));
		return SF_EXIT_USAGE;
	}
	if (cli->set_floor && cli->floor_ms > c->epoch_ms) {
		uint64_t d = cli->floor_ms - c->epoch_ms;
		uint64_t tick = d / c->time_unit_ms + !!(d % c->time_unit_ms);

		if (tick > mask(c->timestamp_bits)) {
			msg("config: --floor %llu does not fit timestamp_bits %u from epoch_ms %llu",
			    (unsigned long long)cli->floor_ms, c->timestamp_bits,
			    (unsigned long long)c->epoch_ms);
			return SF_EXIT_USAGE;
		}
	}
	return 0;
}

/*
 * --rearm: assign the ids for the VM forks the device has seen, which ends
 * the refusal after a VM clone or snapshot restore (-ESTALE when another
 * fork came in between: nothing changed).
 */
static int rearm(struct snowflake *sf, uint32_t dc, uint32_t worker)
{
	uint32_t forks;
	int ret;

	ret = snowflake_get_vm_forks(sf, &forks);
	if (ret)
		return ret;
	return snowflake_rearm_ids(sf, dc, worker, forks);
}

static int set_config(struct snowflake *sf, const struct sf_cli *cli)
{
	struct snowflake_config c;
	int ret;

	ret = snowflake_get_config(sf, &c);
	if (ret)
		return dev_err("config: reading the configuration", ret);
	ret = check_settings(cli, &c);
	if (ret)
		return ret;

	/* Fence first, lift the fence last: never serve with half the settings. */
	if (cli->set_fence && cli->fence) {
		ret = snowflake_set_fence(sf, 1);
		if (ret)
			return dev_err("config: fencing", ret);
	}

	if (cli->set_worker || cli->set_datacenter) {
		uint32_t dc = cli->set_datacenter ? cli->datacenter : c.datacenter_id;

		/*
		 * Only --worker assigns the worker id (ends a strict device's
		 * refusal); --datacenter alone rewrites the worker id it read.
		 */
		if (cli->rearm)
			ret = rearm(sf, dc, cli->worker);
		else if (cli->set_worker)
			ret = snowflake_assign_ids(sf, dc, cli->worker);
		else
			ret = snowflake_set_ids(sf, dc, c.worker_id);
		if (ret)
			return dev_err("config: setting the ids", ret);
	}
	if (cli->set_random) {
		/* The current configuration with the flag changed: ids set above stay. */
		ret = snowflake_get_config(sf, &c);
		if (ret)
			return dev_err("config: reading the configuration", ret);
		if (cli->random_sequence)
			c.flags |= SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
		else
			c.flags &= ~SNOWFLAKE_CONFIG_RANDOM_SEQUENCE;
		ret = snowflake_set_config(sf, &c);
		if (ret)
			return dev_err("config: setting random_sequence", ret);
	}
	if (cli->set_floor) {
		ret = snowflake_set_floor(sf, cli->floor_ms);
		if (ret)
			return dev_err("config: setting the floor", ret);
	}
	if (cli->set_fence && !cli->fence) {
		ret = snowflake_set_fence(sf, 0);
		if (ret)
			return dev_err("config: lifting the fence", ret);
	}
	return SF_EXIT_OK;
}

/* Where --save writes: $SNOWFLAKE_MODPROBE_CONF when set, else SF_IDENTITY_CONF. */
static const char *identity_conf(void)
{
	const char *p = getenv("SNOWFLAKE_MODPROBE_CONF");

	return p && *p ? p : SF_IDENTITY_CONF;
}

/*
 * --save, first half: the temporary file beside @path, created before the
 * device is changed (no right to write there: nothing changed).  Its
 * descriptor, or -1 with the message said.
 */
static int save_open(const char *path, char *tmp, size_t len)
{
	int fd;

	snprintf(tmp, len, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		msg("config: --save: cannot write %s: %s%s; nothing changed", tmp, strerror(errno),
		    errno == EACCES || errno == EPERM || errno == EROFS ? " (it needs root)" : "");
	return fd;
}

/* --save, second half: @options into the file, synced, renamed over @path. */
static int save_finish(int fd, const char *tmp, const char *path, const char *options)
{
	char buf[1024];
	size_t len;
	FILE *f;
	int ret;

	len = (size_t)snprintf(buf, sizeof(buf),
		"# %s: this host's identity, written by 'snowflake config --save'\n"
		"# (snowflake(1)) and applied by modprobe at every load of the module\n"
		"# (at boot, by snowflake-floor.service).  Its name sorts after\n"
		"# snowflake.conf: these options win over that file's.  Change it with\n"
		"# the same command, which also applies the ids to the running device.\n"
		"options snowflake %s\n", path, options);
	f = fdopen(fd, "w");
	if (!f) {
		ret = errno;
		close(fd);
	} else {
		ret = fwrite(buf, 1, len, f) == len && fflush(f) == 0 && fsync(fd) == 0 ? 0 : errno;
		if (fclose(f) && !ret)
			ret = errno;
	}
	if (!ret && rename(tmp, path))
		ret = errno;
	if (ret) {
		unlink(tmp);
		msg("config: --save: writing %s: %s; the next load will not apply it",
		    path, strerror(ret));
		return SF_EXIT_RUNTIME;
	}
	printf("saved in %s: options snowflake %s\n", path, options);
	return finish_output();
}

/* kmod's directories of modprobe.d files, in its order (a name in an earlier one hides a later's). */
static const char *const modprobe_dirs[] = {
	"/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d",
	"/usr/lib/modprobe.d", NULL,
};

/*
 * config --save's check of what else sets the ids at a load: a
 * datacenter_id or worker_id given to snowflake by another modprobe.d file
 * (with --strict: any; else one whose name sorts after @path's, whose
 * options modprobe applies after @path's), or on the kernel command line
 * (applied after every file).  Such a line undoes what is saved: with
 * strict=1 a worker id at load ends strict mode's refusal, and the host
 * serves that id beside the pairs snowflake-agent leases, another host's
 * among them (the duplicate-ID trap of a copied or forgotten line); without,
 * the later id wins.  Said with the file and line; 0 when there is none,
 * else SF_EXIT_RUNTIME, before anything is changed.  With
 * $SNOWFLAKE_MODPROBE_CONF (tests) only that file's directory is read.
 */
static int other_identity(const char *path, bool strict)
{
	static const char *const ids[] = { "datacenter_id", "worker_id", NULL };
	const char *test = getenv("SNOWFLAKE_MODPROBE_CONF");
	const char *dirs[2] = { NULL, NULL }, *const *d, *base = strrchr(path, '/');
	char dir[4096], file[4096 + 256], found[128], buf[65536];
	unsigned int line;
	struct dirent *e;
	ssize_t n;
	DIR *dh;
	int fd;

	base = base ? base + 1 : path;
	if (test && *test) {
		snprintf(dir, sizeof(dir), "%.*s", base > path ? (int)(base - path - 1) : 1,
			 base > path ? path : ".");
		dirs[0] = dir;
		d = dirs;
	} else {
		d = modprobe_dirs;
	}
	for (; *d; d++) {
		dh = opendir(*d);
		if (!dh)
			continue;
		while ((e = readdir(dh))) {
			size_t l = strlen(e->d_name);

			if (l < 6 || strcmp(e->d_name + l - 5, ".conf") != 0 ||
			    strcmp(e->d_name, base) == 0 ||
			    (!strict && strcmp(e->d_name, base) < 0))
				continue;
			snprintf(file, sizeof(file), "%s/%s", *d, e->d_name);
			fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			line = sf_modprobe_find(buf, (size_t)n, ids, found, sizeof(found));
			if (!line)
				continue;
			closedir(dh);
			msg("config: --save%s: %s line %u gives snowflake %s at every load, %s; remove it and run this command again; nothing changed",
			    strict ? " --strict" : "", file, line, found,
			    strict ? "which ends strict mode's refusal: the host would serve that id beside the pairs snowflake-agent leases, another host's among them" :
			    "after this file's, so it would win over the ids saved here");
			return SF_EXIT_RUNTIME;
		}
		closedir(dh);
	}
	if (test && *test)
		return 0;
	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		char *w, *save = NULL;

		buf[n] = '\0';
		for (w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
			size_t k = strcspn(w, "=");

			if (!(k == 23 && strncmp(w, "snowflake.datacenter_id", k) == 0) &&
			    !(k == 19 && strncmp(w, "snowflake.worker_id", k) == 0))
				continue;
			msg("config: --save%s: the kernel command line gives %s at every load, after every modprobe.d file; remove it from the boot loader's configuration; nothing changed",
			    strict ? " --strict" : "", w);
			return SF_EXIT_RUNTIME;
		}
	}
	return 0;
}

/*
 * config --save: the ids applied to the running device and recorded for
 * every later load; or, with --strict, strict=1 recorded for the next load
 * (a loaded module cannot turn strict mode on).
 */
static int save_config(struct snowflake *sf, const struct sf_cli *cli)
{
	const char *path = identity_conf();
	struct snowflake_config c;
	struct snowflake_stats st;
	char tmp[4096], options[128];
	int fd, ret;

	ret = snowflake_get_config(sf, &c);
	if (!ret)
		ret = snowflake_get_stats(sf, &st);
	if (ret)
		return dev_err("config: reading the configuration", ret);
	if (!cli->strict && (st.state & SNOWFLAKE_STATE_STRICT)) {
		msg("config: --save: this device is strict (strict=1): its ids are leased by snowflake-agent, and a saved worker id would end strict mode's refusal at every load; nothing changed");
		msg("hint: to give this host a fixed identity instead, stop and disable snowflake-agent, take strict=1 out of /etc/modprobe.d/, and run this command again after the next load");
		return SF_EXIT_RUNTIME;
	}
	ret = check_settings(cli, &c);
	if (ret)
		return ret;
	ret = other_identity(path, cli->strict);
	if (ret)
		return ret;
	fd = save_open(path, tmp, sizeof(tmp));
	if (fd < 0)
		return SF_EXIT_RUNTIME;
	if (cli->strict) {
		if (!(st.state & SNOWFLAKE_STATE_STRICT))
			msg("note: strict=1 is recorded for the module's next load (the next boot): a loaded module cannot turn strict mode on; until then the device serves as datacenter %u, worker %u",
			    c.datacenter_id, c.worker_id);
		return save_finish(fd, tmp, path, "strict=1");
	}
	ret = set_config(sf, cli);
	if (!ret)
		ret = snowflake_get_config(sf, &c) ? SF_EXIT_RUNTIME : 0;
	if (ret) {
		close(fd);
		unlink(tmp);
		msg("config: --save: the device was not changed as asked: nothing saved");
		return ret;
	}
	snprintf(options, sizeof(options), "datacenter_id=%u worker_id=%u", c.datacenter_id,
		 c.worker_id);
	return save_finish(fd, tmp, path, options);
}

static int cmd_config(const struct sf_cli *cli)
{
	bool set = cli->set_worker || cli->set_datacenter || cli->set_random ||
		   cli->set_floor || cli->set_fence || cli->save;
	struct snowflake *sf;
	int ret;

	/* A change: open for writing, the kernel's right to configure. */
	ret = open_dev(cli, &sf, set ? SNOWFLAKE_CONFIGURE : 0);
	if (ret)
		return ret;
	if (cli->save)
		ret = save_config(sf, cli);
	else if (set)
		ret = set_config(sf, cli);
	else
		ret = show_config(sf, cli->json);
	snowflake_close(sf);
	return ret;
}

/*
 * How a value is exposed to Prometheus: counters as snowflake_<name>_total;
 * times in milliseconds as snowflake_<name without _ms>_seconds (base
 * units); the ids as labels of snowflake_info; the rest as gauges.
 */
enum metric_kind { M_COUNTER, M_GAUGE, M_MS, M_LABEL };

struct metric {
	const char *name;	/* sysfs name (statistics/<name> when stat) */
	enum metric_kind kind;
	bool stat;		/* in sysfs's statistics/ group */
	const char *help;
};

static const struct metric metrics[] = {
	{ "ids_issued", M_COUNTER, true, "IDs handed out since the module was loaded." },
	{ "reads", M_COUNTER, true, "Reads of the device that returned IDs." },
	{ "exhausted_waits", M_COUNTER, true, "Times a blocking read slept until the next tick." },
	{ "eagain", M_COUNTER, true, "Non-blocking reads refused with EAGAIN." },
	{ "clock_catchups", M_COUNTER, true, "Times the generator's clock caught up with the wall clock." },
	{ "floor_jumps", M_COUNTER, true, "Times the generator's clock moved forward to the floor." },
	{ "refused_reads", M_COUNTER, true, "Reads refused with ENOTCONN or EOVERFLOW." },
	{ "clock_ms", M_MS, false, "The generator's clock, Unix time in seconds." },
	{ "clock_offset_ms", M_MS, false, "How far catch-ups and floors moved the clock forward, in seconds." },
	{ "last_timestamp_ms", M_MS, false, "Timestamp of the last ID issued, Unix time in seconds (0: none yet)." },
	{ "floor_ms", M_MS, false, "No ID gets a timestamp below this, Unix time in seconds." },
	{ "strict", M_GAUGE, false, "1 when the module was loaded with strict=1." },
	{ "refusing", M_GAUGE, false, "1 while reads fail with ENOTCONN (strict mode without a "
	  "worker id, fenced, a VM fork, past the lease's deadline or ceiling)." },
	{ "datacenter_id", M_LABEL, false, NULL },
	{ "worker_id", M_LABEL, false, NULL },
	{ "fenced", M_GAUGE, false, "1 while the device is fenced (reads fail with ENOTCONN)." },
	{ "fences", M_COUNTER, true, "Times the device was fenced." },
	/* Last: absent from the sysfs of a module older than this CLI (ABSENT). */
	{ "worker_set", M_GAUGE, false, "1 once this host was given a worker id; 0: it serves "
	  "the default ids, as every host never given one does (a duplicate across hosts)." },
};

#define NMETRICS	(sizeof(metrics) / sizeof(metrics[0]))
#define M_WORKER_SET	(NMETRICS - 1)
/* A value the module does not have (worker_set of an older module's sysfs). */
#define ABSENT		UINT64_MAX
#define SYSFS_DIR	"/sys/class/misc/snowflake"

/* The values from the device (one ioctl each: a consistent snapshot). */
static int stats_from_device(struct snowflake *sf, uint64_t *v)
{
	struct snowflake_config c;
	struct snowflake_stats st;
	uint64_t fences = 0;
	int fenced = 0;
	int ret;

	ret = snowflake_get_stats(sf, &st);
	if (!ret)
		ret = snowflake_get_config(sf, &c);
	if (!ret)
		ret = snowflake_get_fence(sf, &fenced, &fences);
	if (ret)
		return ret;
	v[0] = st.ids_issued;
	v[1] = st.reads;
	v[2] = st.exhausted_waits;
	v[3] = st.eagain;
	v[4] = st.clock_catchups;
	v[5] = st.floor_jumps;
	v[6] = st.refused_reads;
	v[7] = st.clock_ms;
	v[8] = st.clock_offset_ms;
	v[9] = st.last_timestamp_ms;
	v[10] = st.floor_ms;
	v[11] = !!(st.state & SNOWFLAKE_STATE_STRICT);
	v[12] = !!(st.state & SNOWFLAKE_STATE_REFUSING);
	v[13] = c.datacenter_id;
	v[14] = c.worker_id;
	v[15] = (uint64_t)fenced;
	v[16] = fences;
	v[M_WORKER_SET] = !!(st.state & SNOWFLAKE_STATE_WORKER_SET);
	return 0;
}

/*
 * The same values from sysfs, which any user may read: for a user who may
 * not open the device (mode 0440, group snowflake), e.g. the metrics timer.
 */
static int stats_from_sysfs(uint64_t *v)
{
	char path[128], buf[32];
	size_t i;

	for (i = 0; i < NMETRICS; i++) {
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), SYSFS_DIR "/%s%s", metrics[i].stat ? "statistics/" : "",
			 metrics[i].name);
		f = fopen(path, "re");
		if (!f && errno == ENOENT && i == M_WORKER_SET && !access(SYSFS_DIR, F_OK)) {
			/* A module loaded before this CLI was installed. */
			v[i] = ABSENT;
			continue;
		}
		if (!f)
			return -errno;
		ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		if (ok) {
			buf[strcspn(buf, "\n")] = '\0';
			ok = !sf_parse_uint(buf, UINT64_MAX, &v[i]);
		}
		if (!ok)
			return -EINVAL;
	}
	return 0;
}

static void put_prometheus(const uint64_t *v)
{
	char name[64];
	size_t i;

	for (i = 0; i < NMETRICS; i++) {
		const struct metric *m = &metrics[i];
		size_t len = strlen(m->name);

		if (v[i] == ABSENT && i == M_WORKER_SET)
			continue;
		switch (m->kind) {
		case M_LABEL:
			continue;
		case M_COUNTER:
			snprintf(name, sizeof(name), "snowflake_%s_total", m->name);
			break;
		case M_MS:
			snprintf(name, sizeof(name), "snowflake_%.*s_seconds", (int)(len - 3), m->name);
			break;
		case M_GAUGE:
			snprintf(name, sizeof(name), "snowflake_%s", m->name);
			break;
		}
		printf("# HELP %s %s\n", name, m->help);
		printf("# TYPE %s %s\n", name, m->kind == M_COUNTER ? "counter" : "gauge");
		if (m->kind == M_MS)
			printf("%s %llu.%03llu\n", name, (unsigned long long)(v[i] / 1000),
			       (unsigned long long)(v[i] % 1000));
		else
			printf("%s %llu\n", name, (unsigned long long)v[i]);
	}
	puts("# HELP snowflake_info The generator's identity: the ids in its IDs, as labels.");
	puts("# TYPE snowflake_info gauge");
	printf("snowflake_info{datacenter_id=\"%llu\",worker_id=\"%llu\"} 1\n",
	       (unsigned long long)v[13], (unsigned long long)v[14]);
}

static int cmd_stats(const struct sf_cli *cli)
{
	const char *path = sf_cli_device(cli);
	uint64_t v[NMETRICS] = { 0 };
	struct snowflake *sf;
	char what[512];
	size_t i;
	int ret;

	ret = snowflake_open(&sf, path, 0);
	if (!ret) {
		ret = stats_from_device(sf, v);
		snowflake_close(sf);
		if (ret)
			return dev_err("stats: reading the counters", ret);
	} else if ((ret == -EACCES || ret == -EPERM || ret == -ENOENT) && !cli->device &&
		   !stats_from_sysfs(v)) {
		/* The same values from sysfs (a user outside the group, or no node). */
	} else {
		snprintf(what, sizeof(what), "cannot open %s", path);
		return dev_err(what, ret);
	}

	if (cli->prometheus) {
		put_prometheus(v);
		return finish_output();
	}
	for (i = 0; i < NMETRICS; i++)
		if (!(v[i] == ABSENT && i == M_WORKER_SET))
			put_value(cli->json, i, metrics[i].name, (unsigned long long)v[i]);
	put_end(cli->json);
	if (!v[M_WORKER_SET] && !v[11]) {
		struct snowflake_config c = { .datacenter_id = (uint32_t)v[13],
					      .worker_id = (uint32_t)v[14] };

		no_identity_note(&c, 0);
	}
	return finish_output();
}

int main(int argc, char **argv)
{
	struct sf_cli cli;
	char err[512];
	int ret;

	/*
	 * A closed pipe is a write error (EPIPE, exit 1, silently), not a
	 * death by SIGPIPE (141): one exit status whatever disposition the
	 * caller left us (Python's subprocess, a service manager may ignore it).
	 */
	signal(SIGPIPE, SIG_IGN);
	ret = sf_cli_parse(&cli, argc, argv, err, sizeof(err));
	if (ret) {
		msg("%s", err);
		if (cli.cmd != SF_CMD_NONE)
			msg("try 'snowflake %s --help'", sf_cmd_name(cli.cmd));
		else
			msg("try 'snowflake --help'");
		sf_cli_free(&cli);
		return SF_EXIT_USAGE;
	}
	if (cli.help) {
		fputs(usage_of(cli.cmd), stdout);
		return finish_output();
	}
	if (cli.version) {
		puts(PROG " " SNOWFLAKE_VERSION);
		return finish_output();
	}

	switch (cli.cmd) {
	case SF_CMD_NEXT:
		ret = cmd_next(&cli);
		break;
	case SF_CMD_DECODE:
		ret = cmd_decode(&cli);
		break;
	case SF_CMD_CONFIG:
		ret = cmd_config(&cli);
		break;
	case SF_CMD_STATS:
		ret = cmd_stats(&cli);
		break;
	case SF_CMD_UUID:
		ret = cmd_uuid(&cli);
		break;
	default:
		ret = SF_EXIT_USAGE;
		break;
	}
	sf_cli_free(&cli);
	return ret;
}
