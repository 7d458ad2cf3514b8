/* SPDX-License-Identifier: Apache-2.0 */
/* lib/json_strict.c: the unknown-key check of strict JSON loading (see json_strict.h). */
#include "lib/json_strict.h"

#include <string.h>

const char *json_strict_unknown(json_t *o, const char *const *keys)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
	{
		size_t i;

		(void)v;
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i])
			return k;
	}
	return NULL;
}
