// SPDX-License-Identifier: GPL-2.0
/*
 * uuid_bench: the native half of P8.  Runs what a batch read of /dev/uuidv7
 * does per UUID, with the pure UUIDv7 core (driver/uuid_core.c), so that
 * `valgrind --tool=callgrind --toggle-collect=bench_uuid_read` counts the
 * instructions of one read and callgrind_annotate splits them by function:
 *
 *   sf_uuid_core_reserve()	the reservation (under the lock in the driver)
 *   bench_random_bytes()	get_random_bytes() of the kernel, modelled: its
 *				ChaCha20 blocks (the generic C block function,
 *				as lib/crypto/chacha.c: one block for the fast
 *				key erasure that also yields the first 32 bytes,
 *				then one per 64 bytes, a partial one through a
 *				buffer), without its per-CPU lock
 *   bench_put()		the formatting and the two 8-byte stores per
 *				UUID of sfu_put() (to memory here, to the user's
 *				buffer in the driver)
 *
 * The chunking is the driver's (SFU_RND_BYTES, read from snowflake_uuid.c
 * by scripts/bench.sh).  The kernel's own calls (the system call, the lock,
 * user_access_begin()) are not counted: they are per read, not per UUID.
 *
 *   uuid_bench READS    READS reads of 4096 UUIDs
 *
 * Prints "UUID reads=... uuids=..." on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uuid_core.h"

/* scripts/bench.sh passes the driver's own value. */
#ifndef SFU_RND_BYTES
#define SFU_RND_BYTES	(32 + 64 * 7)
#endif
#define SFU_CHUNK	(SFU_RND_BYTES / 4)

static inline __u32 rol32(__u32 w, int s)
{
	return (w << s) | (w >> (32 - s));
}

#define QR(a, b, c, d) do {				\
	x[a] += x[b]; x[d] = rol32(x[d] ^ x[a], 16);	\
	x[c] += x[d]; x[b] = rol32(x[b] ^ x[c], 12);	\
	x[a] += x[b]; x[d] = rol32(x[d] ^ x[a], 8);	\
	x[c] += x[d]; x[b] = rol32(x[b] ^ x[c], 7);	\
} while (0)

/* chacha_block_generic(state, stream, 20), as in lib/crypto/chacha.c. */
__attribute__((noinline)) static void chacha20_block(__u32 *state, __u8 *out)
{
	__u32 x[16];
	int i;

	memcpy(x, state, sizeof(x));
	for (i = 0; i < 20; i += 2) {
		QR(0, 4, 8, 12); QR(1, 5, 9, 13); QR(2, 6, 10, 14); QR(3, 7, 11, 15);
		QR(0, 5, 10, 15); QR(1, 6, 11, 12); QR(2, 7, 8, 13); QR(3, 4, 9, 14);
	}
	for (i = 0; i < 16; i++) {
		__u32 v = x[i] + state[i];

		memcpy(out + 4 * (size_t)i, &v, 4);
	}
	state[12]++;
}

/* _get_random_bytes() of drivers/char/random.c, its ChaCha20 work. */
__attribute__((noinline)) static void bench_random_bytes(__u32 *key, void *buf,
							 size_t len)
{
	__u32 st[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
	__u8 first[64], tmp[64];
	__u8 *p = buf;
	size_t n = len < 32 ? len : 32;

	/* crng_make_state(): fast key erasure, the first 32 bytes. */
	memcpy(st + 4, key, 32);
	chacha20_block(st, first);
	memcpy(key, first, 32);
	memcpy(p, first + 32, n);
	memset(first, 0, sizeof(first));
	memcpy(st + 4, key, 32);
	p += n;
	len -= n;
	while (len) {
		if (len < 64) {
			chacha20_block(st, tmp);
			memcpy(p, tmp, len);
			memset(tmp, 0, sizeof(tmp));
			break;
		}
		chacha20_block(st, p);
		p += 64;
		len -= 64;
	}
	__asm__ volatile("" : : "r"(st), "r"(tmp) : "memory");
}

static inline __u64 to_be64(__u64 v)
{
	return __builtin_bswap64(v);
}

/* sfu_put(): per UUID its two halves, the second stored first. */
__attribute__((noinline)) static void bench_put(__u64 *d,
						const struct sf_uuid_block *b,
						__u32 start, __u32 n,
						const __u32 *rnd)
{
	__u64 ms = b->ms, first = b->first + start;
	__u32 i;

	for (i = 0; i < n; i++, d += 2) {
		__u64 c = first + i;

		d[1] = to_be64(sf_uuid_lo(c, rnd[i]));
		d[0] = to_be64(sf_uuid_hi(ms, c));
	}
}

__attribute__((noinline)) int bench_uuid_read(struct sf_uuid_core *u,
					      __u64 ms, __u64 seed,
					      __u32 *key, __u64 *out);
__attribute__((noinline)) int bench_uuid_read(struct sf_uuid_core *u,
					      __u64 ms, __u64 seed,
					      __u32 *key, __u64 *out)
{
	struct sf_uuid_block b;
	__u32 rnd[SFU_CHUNK];
	__u32 start = 0;
	int ret;

	ret = sf_uuid_core_reserve(u, ms, SNOWFLAKE_UUID_MAX_PER_READ, seed, &b);
	if (ret <= 0)
		return ret;
	while (start < b.count) {
		__u32 n = b.count - start < SFU_CHUNK ? b.count - start : SFU_CHUNK;

		bench_random_bytes(key, rnd, n * sizeof(rnd[0]));
		bench_put(out + 2 * (size_t)start, &b, start, n, rnd);
		start += n;
	}
	return ret;
}

int main(int argc, char **argv)
{
	static __u64 out[SNOWFLAKE_UUID_MAX_PER_READ * 2];
	__u32 key[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	__u64 ms = 1700000000000ULL, uuids = 0, last_hi = 0, last_lo = 0;
	struct sf_uuid_core u;
	long reads, i;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s READS\n", argv[0]);
		return 2;
	}
	reads = atol(argv[1]);
	sf_uuid_core_init(&u, SF_UUID_COUNTER_BITS);
	for (i = 0; i < reads; i++) {
		ret = bench_uuid_read(&u, ms + (__u64)i / 8, 0x123456789abcdefULL * (__u64)i,
				      key, out);
		if (ret != SNOWFLAKE_UUID_MAX_PER_READ) {
			fprintf(stderr, "uuid_bench: reserve returned %d\n", ret);
			return 1;
		}
		/* Strictly increasing, as the device's reads are. */
		if (to_be64(out[0]) < last_hi ||
		    (to_be64(out[0]) == last_hi && to_be64(out[1]) <= last_lo)) {
			fprintf(stderr, "uuid_bench: not increasing\n");
			return 1;
		}
		last_hi = to_be64(out[2 * ret - 2]);
		last_lo = to_be64(out[2 * ret - 1]);
		uuids += (__u64)ret;
	}
	printf("UUID reads=%ld uuids=%llu\n", reads, (unsigned long long)uuids);
	return 0;
}
