/* SPDX-License-Identifier: Apache-2.0 */
/* lib/mono_ms.h: the monotonic clock in milliseconds, for deadlines (never the wall clock,
 * which may step). */
#ifndef BULKHEAD_LIB_MONO_MS_H
#define BULKHEAD_LIB_MONO_MS_H

#include <stdint.h>
#include <time.h>

static inline int64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#endif
