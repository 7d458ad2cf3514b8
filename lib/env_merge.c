/* SPDX-License-Identifier: Apache-2.0 */
/* lib/env_merge.c: a command's environment from layers — an image's, a session's, a
 * command's — where a later entry of a name replaces every earlier one. A session's plan
 * (session/plan_image.c), `bulkhead exec` and the session API's exec build it the same way. */
#include "lib/env_merge.h"

#include <string.h>

/* Whether entry's name ("KEY" of "KEY=...") is set again after position (l, i). */
static bool set_later(char *const *const lists[], size_t l, size_t i)
{
	const char *entry = lists[l][i];
	size_t klen = strcspn(entry, "=") + 1;
	for (size_t m = l; lists[m]; m++)
		for (size_t j = m == l ? i + 1 : 0; lists[m][j]; j++)
			if (strncmp(lists[m][j], entry, klen) == 0)
				return true;
	return false;
}

size_t env_merge(char *const *const lists[], char **out, size_t max)
{
	size_t n = 0;
	for (size_t l = 0; lists[l]; l++)
		for (size_t i = 0; lists[l][i] && n < max; i++)
			if (!set_later(lists, l, i))
				out[n++] = lists[l][i];
	out[n] = NULL;
	return n;
}

size_t env_lines(char *text, char **out, size_t max)
{
	size_t n = 0;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save))
		out[n++] = line;
	out[n] = NULL;
	return n;
}
