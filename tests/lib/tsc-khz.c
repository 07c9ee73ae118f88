// SPDX-License-Identifier: GPL-2.0
/*
 * sf-tsc-khz: the host's TSC frequency in kHz, for the guests' kernel
 * argument tsc_early_khz= (tests/lib/vm.sh, vm_accel_args).
 *
 * Under QEMU's TCG, RDTSC in the guest returns the host's TSC, so the
 * guest's TSC counts at the host's rate.  A guest kernel that calibrates it
 * itself measures it against the emulated PIT, and on a busy host that
 * measurement can be far off (seen: 973 MHz for a 2596 MHz TSC, "PIT
 * calibration deviates from HPET").  The later refinement against the HPET
 * is dropped when it differs by more than 1 %, and with tsc=reliable no
 * watchdog catches it: every clock of that guest then runs 2.7 times too
 * fast (a ceiling_test read refused with ENOTCONN on 6.12-rt).  Measured
 * here against CLOCK_MONOTONIC_RAW over 200 ms, each end the TSC read with
 * the shortest bracket of clock reads out of 16.
 *
 * Prints the kHz and exits 0; exits 1 (nothing printed) when the result is
 * not a plausible TSC rate (under 100 MHz or over 10 GHz).
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A (TSC, ns) pair read as close together as the host lets us. */
static void pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 16; i++) {
		uint64_t a = now_ns(), c = __rdtsc(), b = now_ns();

		if (b - a < best) {
			best = b - a;
			*tsc = c;
			*ns = a + (b - a) / 2;
		}
	}
}

int main(void)
{
	struct timespec d = { .tv_sec = 0, .tv_nsec = 200000000 };
	uint64_t c0, t0, c1, t1, khz;

	pair(&c0, &t0);
	nanosleep(&d, NULL);
	pair(&c1, &t1);
	if (t1 <= t0 || c1 <= c0)
		return 1;
	khz = (c1 - c0) * 1000000ULL / (t1 - t0);
	if (khz < 100000 || khz > 10000000)
		return 1;
	printf("%llu\n", (unsigned long long)khz);
	return 0;
}
