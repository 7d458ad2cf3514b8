/* SPDX-License-Identifier: Apache-2.0 */
/* lib/relpath.h: a path inside a share, as a rule names it ("src", "config/app.yaml"): one
 * spelling for one place, so that a rule is never applied to a place other than the one it
 * says, nor two rules to one place spelt two ways. */
#ifndef BULKHEAD_LIB_RELPATH_H
#define BULKHEAD_LIB_RELPATH_H

#include <stddef.h>

/* Whether P (N bytes, not NUL-terminated necessarily) is a canonical relative path: not empty,
 * not absolute, no empty, "." or ".." component, no trailing '/', valid UTF-8 with no control
 * character, shorter than PATH_MAX with components of at most NAME_MAX bytes. 0, or -1 with
 * why (a fixed text) in *WHY. */
int relpath_check(const char *p, size_t n, const char **why);

/* Whether relative path P is Q or lies under it ("src/a" under "src"; "srcx" not). */
int relpath_under(const char *p, const char *q);

#endif
