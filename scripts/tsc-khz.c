// SPDX-License-Identifier: GPL-2.0
/*
 * Prints the host's TSC rate in kHz, for make bench (scripts/bench.sh).
 *
 * Under TCG a guest's RDTSC reads the host's TSC, but the benchmark
 * kernel (no ACPI: no HPET, no PM timer) can calibrate it only against
 * the emulated PIT, which fails now and then under TCG; the kernel then
 * marks it unstable and keeps time by jiffies: a clock and timers of 4 ms
 * steps. bench.sh hands this rate to the guest as
 * tsc_early_khz= so that it keeps time by the TSC.
 *
 * The rate: TSC ticks over 200 ms of CLOCK_MONOTONIC_RAW, the best of
 * three tries (the one least disturbed between its two readings).
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static uint64_t ns_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

int main(void)
{
	const struct timespec pause = { 0, 200000000 };
	double best = 0, best_err = 1e18;
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t n0 = ns_now(), c0 = __rdtsc(), n1 = ns_now();
		uint64_t n2, c1, n3;

		nanosleep(&pause, NULL);
		n2 = ns_now();
		c1 = __rdtsc();
		n3 = ns_now();
		/* How uncertain the two readings are: the time around each. */
		double err = (double)(n1 - n0) + (double)(n3 - n2);
		double khz = (double)(c1 - c0) * 1e6 / (double)((n2 + n3) / 2 - (n0 + n1) / 2);

		if (err < best_err) {
			best_err = err;
			best = khz;
		}
	}
	if (best < 100000 || best > 10000000) {
		fprintf(stderr, "tsc-khz: implausible rate %.0f kHz\n", best);
		return 1;
	}
	printf("%.0f\n", best);
	return 0;
}
