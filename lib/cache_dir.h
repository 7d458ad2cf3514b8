/* SPDX-License-Identifier: Apache-2.0 */
/* lib/cache_dir.h: where bulkhead keeps what it makes once and uses again (images,
 * templates): ${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/SUB. */
#ifndef BULKHEAD_LIB_CACHE_DIR_H
#define BULKHEAD_LIB_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the directory for SUB ("images", "templates") into buf, made (with its missing
 * parents, each 0700) when create, and then checked: a directory (not a link), ours, mode
 * 0700, in a parent only its owner (us or root) may change. 0, or -1 with err naming WHAT
 * ("the image store"). */
int cache_dir(char *buf, size_t len, const char *sub, const char *what, bool create, char *err,
	      size_t errlen);

/* The check cache_dir makes of a directory it creates, for one found (buf is restored). 0, or
 * -1 with err naming WHAT. */
int cache_dir_check(char *buf, const char *what, char *err, size_t errlen);

#endif
