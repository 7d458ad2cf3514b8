/* SPDX-License-Identifier: Apache-2.0 */
/* lib/env_merge.h: environments from layers (lib/env_merge.c). */
#ifndef BULKHEAD_LIB_ENV_MERGE_H
#define BULKHEAD_LIB_ENV_MERGE_H

#include <stdbool.h>
#include <stddef.h>

/* Merges the NULL-terminated lists of "KEY=VALUE" in lists (itself NULL-terminated), earliest
 * first: an entry is kept unless a later one sets the same KEY. Writes at most max entries
 * (pointers into the lists) and a NULL to out (max + 1 slots); returns how many. */
size_t env_merge(char *const *const lists[], char **out, size_t max);

/* Splits text (one entry per line, as a run directory's "env") in place into out, at most
 * max entries and a NULL. Returns how many. */
size_t env_lines(char *text, char **out, size_t max);

#endif
