/* SPDX-License-Identifier: Apache-2.0 */
/* lib/signame.c: a signal named as people and engines name them: "TERM", "SIGTERM", "term",
 * "15", "RTMIN+3". bulkhead-oci's kill and the session API's signal request. */
#include "lib/signame.h"

#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int signame_parse(const char *s)
{
	if (isdigit((unsigned char)s[0])) {
		char *end;
		long n = strtol(s, &end, 10);
		return *end || n < 1 || n > SIGRTMAX ? 0 : (int)n;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int n = 1; n < 32; n++) {
		const char *name = sigabbrev_np(n);
		if (name && strcasecmp(s, name) == 0)
			return n;
	}
	if (strncasecmp(s, "RTMIN+", 6) == 0) {
		int k = atoi(s + 6);
		return k >= 0 && SIGRTMIN + k <= SIGRTMAX ? SIGRTMIN + k : 0;
	}
	return 0;
}
