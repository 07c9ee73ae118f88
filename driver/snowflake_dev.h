/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What snowflake_main.c (the generator, /dev/snowflake) shares with
 * snowflake_uuid.c (/dev/uuidv7): the generator's lock and its clock.
 */
#ifndef _SNOWFLAKE_DEV_H
#define _SNOWFLAKE_DEV_H

#include <linux/spinlock.h>
#include <linux/types.h>

/* snowflake_main.c */
spinlock_t *sf_gen_lock(void);
/* Takes the lock (sparse: __acquires), release with sf_gen_unlock(). */
u64 sf_gen_lock_clock(void);
void sf_gen_unlock(void);

/* snowflake_uuid.c */
int sf_uuid_register(void);
void sf_uuid_deregister(void);

#endif /* _SNOWFLAKE_DEV_H */
