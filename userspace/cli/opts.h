/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command-line parsing of the snowflake(1) CLI, kept apart from main.c so the
 * native unit tests can link it: no device access here, only the library's
 * offline helpers (snowflake_parse, snowflake_check_layout, ...).
 */
#ifndef SNOWFLAKE_CLI_OPTS_H
#define SNOWFLAKE_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <snowflake.h>

/* Exit codes of the CLI (documented in snowflake(1) and the README). */
#define SF_EXIT_OK	0	/* done */
#define SF_EXIT_RUNTIME	1	/* the device failed (open, read, ioctl) */
#define SF_EXIT_USAGE	2	/* bad command line: nothing was done */

enum sf_cmd {
	SF_CMD_NONE,
	SF_CMD_NEXT,
	SF_CMD_DECODE,
	SF_CMD_CONFIG,
	SF_CMD_STATS,
	SF_CMD_UUID,		/* /dev/uuidv7 */
};

/* Largest -n of `snowflake next`. */
#define SF_CLI_MAX_COUNT	4294967295ULL

struct sf_cli {
	enum sf_cmd cmd;
	bool help;			/* --help: print the help of cmd, exit 0 */
	bool version;			/* --version: print the version, exit 0 */
	const char *device;		/* --device, NULL when not given */

	/* next */
	uint64_t count;			/* -n, default 1 */
	enum snowflake_format format;	/* --format, default dec */

	/* decode */
	bool json;			/* --json */
	bool from_device;		/* layout read from the device */
	bool layout_required;		/* --layout-from-device: no default-layout fallback */
	struct snowflake_config layout;	/* offline layout (from_device false) */
	size_t nids;
	uint64_t *ids;			/* nids IDs, allocated; sf_cli_free() */
	/* decode: UUIDv7s among the arguments (ids[i] is then 0), allocated */
	bool *is_uuid;
	uint8_t (*uuids)[SNOWFLAKE_UUID_SIZE];
	size_t nsnowflakes;		/* arguments that are Snowflake IDs */
	size_t cap;			/* room in ids, is_uuid, uuids */
	bool ids_stdin;			/* no ID, or "-": read them from standard input */
	bool ids_stdin_implicit;	/* ... because no ID was given */

	/* config */
	bool set_worker, set_datacenter, set_random, set_floor, set_fence;
	uint32_t worker, datacenter;
	bool random_sequence;
	bool fence;			/* --fence 1: fence, 0: lift */
	bool rearm;			/* --rearm: end a VM fork's refusal */
	uint64_t floor_ms;
	bool force;			/* --force: a --floor far ahead of now */
	bool save;			/* --save: record the ids (or strict) for the next load */
	bool strict;			/* --strict: with --save, strict=1 at the next load */

	/* stats */
	bool prometheus;
	/* config and stats also take --json (the field of decode) */
};

/*
 * Where `config --save` records the identity: a modprobe.d file read at
 * every load of the module (its name sorts after the package's
 * snowflake.conf, so its options come last and win).  The environment
 * variable SNOWFLAKE_MODPROBE_CONF names another (tests).
 */
#define SF_IDENTITY_CONF	"/etc/modprobe.d/snowflake.identity.conf"

/*
 * In @text (a modprobe.d file's contents, @n bytes), the first parameter of
 * an "options snowflake" line whose name is one of @names (NULL-ended), as
 * kmod reads the file: '#' lines are comments, a line ending in '\' goes
 * on on the next, the module name's '-' is '_'.  Its line number, with
 * "NAME=VALUE" (or "NAME") in @found; 0 when there is none.
 */
unsigned int sf_modprobe_find(const char *text, size_t n, const char *const *names, char *found,
			      size_t len);

/* `config --floor` further ahead of now than this needs --force: a typo
 * (years ahead) would otherwise be kept by snowflake-floord across reboots. */
#define SF_FLOOR_AHEAD_MAX_MS	(24ULL * 3600 * 1000)

/*
 * A usage error when @floor_ms is more than SF_FLOOR_AHEAD_MAX_MS ahead of
 * @now_ms and @force is false: 0, or SF_EXIT_USAGE with a message in @err.
 */
int sf_check_floor_ahead(uint64_t floor_ms, uint64_t now_ms, bool force, char *err,
			 size_t errlen);

/*
 * Parse argv into @cli.  Returns SF_EXIT_OK, or SF_EXIT_USAGE with a message
 * (without "snowflake: " and without a newline) in @err.  With cli->help set,
 * the rest of the command line was not checked.
 */
int sf_cli_parse(struct sf_cli *cli, int argc, char **argv, char *err, size_t errlen);
void sf_cli_free(struct sf_cli *cli);

/*
 * One ID of decode, as text: a decimal or 0x-hex ID (optionally in double
 * quotes) or a UUIDv7 (canonical form, any case, optionally quoted),
 * appended to cli->ids; checked against the offline layout unless the
 * layout comes from the device.  @where prefixes the messages ("" for an
 * argument, "standard input line N: ").  SF_EXIT_OK or SF_EXIT_USAGE with
 * a message in @err.
 */
int sf_cli_add_id(struct sf_cli *cli, const char *text, const char *where, char *err,
		  size_t errlen);
/*
 * Does @id (written @text) fit @layout, whose kind @which names ("",
 * "default ", "device's ")?  SF_EXIT_OK, or SF_EXIT_USAGE with the reason
 * in @err: a bit set above the widths, or a time past 64-bit Unix ms.
 */
int sf_check_id(const struct snowflake_config *layout, uint64_t id, const char *text,
		const char *which, char *err, size_t errlen);

/* The device: --device, else $SNOWFLAKE_DEVICE (when not empty), else /dev/snowflake. */
const char *sf_cli_device(const struct sf_cli *cli);

/* Name of a command ("next", ...), "snowflake" for SF_CMD_NONE. */
const char *sf_cmd_name(enum sf_cmd cmd);

/*
 * Strict unsigned decimal: digits only (no sign, space, or 0x), at most @max.
 * 0, or -EINVAL (not a number) / -ERANGE (above @max).
 */
int sf_parse_uint(const char *s, uint64_t max, uint64_t *val);
/* "dec", "hex" or "json": 0 or -EINVAL. */
int sf_parse_format(const char *s, enum snowflake_format *fmt);
/*
 * "T/D/W/S" widths (e.g. 41/5/5/12) into @layout's timestamp, datacenter,
 * worker and sequence bits.  Each 0..63 (the layout is checked as a whole
 * elsewhere): 0 or -EINVAL.
 */
int sf_parse_bits(const char *s, struct snowflake_config *layout);

/* UTC ISO-8601 with milliseconds, "2026-11-21T20:48:48.476Z": length or -EOVERFLOW. */
int sf_format_time(uint64_t unix_ms, char *buf, size_t len);

#endif /* SNOWFLAKE_CLI_OPTS_H */
