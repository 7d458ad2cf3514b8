/* SPDX-License-Identifier: Apache-2.0 */
/* lib/json_where.h: where a value sits in a JSON text. jansson reports line and column for
 * syntax errors only; a policy or scope file that parses but holds a wrong value should get
 * the same precision, so the loaders name the value by its path ("limits.max_cpus",
 * "deny_cidrs[2]") and this finds its line and column in the text. */
#ifndef BULKHEAD_LIB_JSON_WHERE_H
#define BULKHEAD_LIB_JSON_WHERE_H

/* PATH: keys joined by '.', array indices as "[N]" (e.g. "a.b[3].c"; "" is the root).
 * Returns 0 with a 1-based line and column of the value's first character, or -1 when the
 * text does not hold that path (or is not valid JSON up to it). */
int json_where(const char *text, const char *path, int *line, int *column);

#endif
