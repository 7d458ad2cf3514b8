/* SPDX-License-Identifier: Apache-2.0 */
/* serve/share_args.c: a create request's rules inside its work directory (docs/API.md): the
 * fields "work_rules" ({"src": "rw", "config": "ro", "secrets": "hidden"}), "share_secrets"
 * ("refuse" or "hide") and "share_secrets_allow" (paths), checked here with the same grammar
 * as the CLI and the scope (lib/relpath.h), and handed on to `bulkhead start` in its
 * request (serve/boot.c), so that one code path decides (session/share_plan.h). They need a
 * host directory ("work"): the daemon's own are empty. */
#include "serve/serve.h"

#include "session/request_fields.h"
#include "session/share_rules.h"
#include "lib/relpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t whylen, const char *what, const char *key, const char *because)
{
	snprintf(why, whylen, "\"%s\"%s%.100s: %s", what, key ? ": " : "", key ? key : "",
		 because);
	return -1;
}

int serve_share_parse(json_t *body, struct serve_create *c, char *why, size_t whylen)
{
	json_t *rules = json_object_get(body, "work_rules"), *v;
	json_t *sec = json_object_get(body, "share_secrets");
	json_t *allow = json_object_get(body, "share_secrets_allow");
	const char *key, *because;
	enum share_mode m;
	size_t i;

	if ((rules || sec || allow) && !c->work)
		return bad(why, whylen, rules ? "work_rules" : sec ? "share_secrets" : "share_secrets_allow",
			   NULL, "applies to a host directory given as \"work\"");
	if (rules && (!json_is_object(rules) || json_object_size(rules) > SHARE_RULES_MAX))
		return bad(why, whylen, "work_rules", NULL,
			   "an object of at most 64 \"PATH\": \"rw\" | \"ro\" | \"hidden\"");
	json_object_foreach(rules, key, v) {
		if (!json_is_string(v) || share_mode_parse(json_string_value(v), &m) < 0)
			return bad(why, whylen, "work_rules", key, "the mode is rw, ro or hidden");
		if (relpath_check(key, strlen(key), &because) < 0)
			return bad(why, whylen, "work_rules", key, because);
	}
	if (sec && (!json_is_string(sec) ||
		    !request_field_choice_ok(request_field_by_key("share_secrets"),
					     json_string_value(sec))))
		return bad(why, whylen, "share_secrets", NULL, "\"refuse\" or \"hide\"");
	if (allow && (!json_is_array(allow) || json_array_size(allow) > SHARE_RULES_MAX))
		return bad(why, whylen, "share_secrets_allow", NULL, "an array of at most 64 paths");
	json_array_foreach(allow, i, v) {
		if (!json_is_string(v))
			return bad(why, whylen, "share_secrets_allow", NULL, "paths are strings");
		if (relpath_check(json_string_value(v), json_string_length(v), &because) < 0)
			return bad(why, whylen, "share_secrets_allow", json_string_value(v), because);
	}
	c->work_rules = rules;
	c->share_secrets = sec ? json_string_value(sec) : NULL;
	c->share_allow = allow;
	return 0;
}
