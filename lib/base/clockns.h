/*
 * clockns: a clock's time in nanoseconds, as one 64-bit number.
 *
 * Owns the one conversion from struct timespec that the recorders use
 * (CLOCK_MONOTONIC for deadlines and the emu clock's origin,
 * CLOCK_REALTIME for the manifest's wall-clock times).  Header-only so
 * that the emu plugin, which links no lib archive, shares it too.
 * Both clocks are always there on Linux, so it cannot fail.
 */
#ifndef PTKIT_CLOCKNS_H
#define PTKIT_CLOCKNS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds: the unit of the capture deadlines. */
static inline uint64_t
clock_mono_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

#endif
