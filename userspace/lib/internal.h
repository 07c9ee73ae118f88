/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libsnowflake internals: not installed. */
#ifndef SNOWFLAKE_INTERNAL_H
#define SNOWFLAKE_INTERNAL_H

#include "snowflake.h"

/* The library is built with -fvisibility=hidden: only these are exported. */
#define SF_EXPORT __attribute__((visibility("default")))

struct snowflake {
	int fd;
};

/* device.c: open @path (else $@env, else @def), the misc device called @name. */
int sf_open(struct snowflake **sf, const char *path, int flags, const char *env,
	    const char *def, const char *name);
/* device.c: the reading loop of snowflake_next_n() and snowflake_uuid_next_n(). */
long sf_read_records(struct snowflake *sf, void *buf, size_t n, size_t size, size_t max);

#ifdef SF_TESTING
#include <stdbool.h>
/* tests/lib_test.c: accept any file in snowflake_open() (FIFOs stand in). */
extern bool sf_testing_any_file;
/* ... and the sysfs root of the identity check (default "/sys"). */
extern const char *sf_testing_sysfs;
#endif

#endif /* SNOWFLAKE_INTERNAL_H */
