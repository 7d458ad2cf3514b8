/* SPDX-License-Identifier: Apache-2.0 */
/* broker/reqpath.h: a request target's one canonical spelling (RFC 3986 6.2.2), made once,
 * before any rule, approval or decision sees the path, and forwarded upstream as it is, so
 * the upstream serves exactly what was judged. Servers decode %XX before they route (a CGI's
 * PATH_INFO is decoded by RFC 3875; Werkzeug routes "/%77/" as "/w/"), so a rule that
 * compared the spelling the guest chose could be stepped around by spelling it otherwise.
 *
 * Path: %XX of an unreserved character (ALPHA DIGIT - . _ ~) is decoded, the hex of every
 * other escape is made upper case; empty segments ("//") and path parameters (';') are
 * refused, as are dot segments (also after decoding) and escaped '/', '\' and NUL: servers
 * read each of them differently. Query: the same decoding and case, nothing refused (its
 * meaning is the application's; decoding only the unreserved never changes it). */
#ifndef BULKHEAD_BROKER_REQPATH_H
#define BULKHEAD_BROKER_REQPATH_H

#include <stddef.h>

/* IN[0..N) into OUT (at least N + 1 bytes: the canonical form is never longer), NUL-ended.
 * Path: 0, or -1 with *WHY saying what was refused. IN has passed reqcheck's target grammar
 * (every '%' is followed by two hex digits); a stray '%' is refused here too. */
int reqpath_canon_path(const char *in, size_t n, char *out, const char **why);
/* The query (without its '?'): always succeeds but for a stray '%' (-1). */
int reqpath_canon_query(const char *in, size_t n, char *out, const char **why);

#endif
