/* SPDX-License-Identifier: Apache-2.0 */
/* lib/mono.h: the monotonic clock, for deadlines and durations (never the wall clock, which
 * may step): one place that reads it, in milliseconds or nanoseconds. */
#ifndef BULKHEAD_LIB_MONO_H
#define BULKHEAD_LIB_MONO_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline int64_t mono_ms(void)
{
	return (int64_t)(mono_ns() / 1000000);
}

/* The monotonic clock MS milliseconds from now, as pthread_cond_timedwait takes it (a
 * condition variable set to CLOCK_MONOTONIC). */
static inline struct timespec mono_deadline(int64_t ms)
{
	uint64_t at = mono_ns() + (uint64_t)ms * 1000000u;

	return (struct timespec){ .tv_sec = (time_t)(at / 1000000000u),
				  .tv_nsec = (long)(at % 1000000000u) };
}

#endif
