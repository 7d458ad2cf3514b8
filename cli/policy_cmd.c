/* SPDX-License-Identifier: Apache-2.0 */
/* cli/policy_cmd.c: `bulkhead policy check FILE...` (global policies and session scopes,
 * errors with line and column) and `bulkhead policy explain` (what decide() says about one
 * request, and which rule says it). */
#include "cli/broker_cmds.h"
#include "session/exit_codes.h"

#include "broker/decide.h"
#include "broker/hostname.h"
#include "broker/policy.h"
#include "broker/reqpath.h"
#include "broker/rules.h"
#include "lib/json_where.h"
#include "lib/io.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <jansson.h>

static const char policy_usage[] =
	"usage: bulkhead policy check FILE...\n"
	"       bulkhead policy explain [--policy FILE] --scope FILE [--json] METHOD URL\n"
	"       bulkhead policy share [--policy FILE] [--scope FILE] [--work-rule PATH:MODE]...\n"
	"           [--share-secrets refuse|hide] [--share-allow PATH]... [--json] DIR\n"
	"\n"
	"check: validates global policies and session scopes (told apart by their keys: a scope\n"
	"has \"secrets\" or \"allow\"); prints 'FILE: ok (policy|scope)' or 'FILE: line L, column\n"
	"C: what is wrong'. Exit 0 when all are good, 1 otherwise.\n"
	"explain: how the broker would decide METHOD URL for a session with that scope under\n"
	"that policy (default " POLICY_DEFAULT_PATH " when it exists): the decision, the layer\n"
	"(global, scope, approval, default) and the rule behind it.\n"
	"explain --json: the same as one JSON object, a key per line of text: decision (allow,\n"
	"deny, approval), layer, rule, why (a denial's reason, else null), inject (the secrets'\n"
	"names, [] for none), git_push_held_by_ref_rule (true: a git push here is held for\n"
	"approval when it updates a ref an approval rule names), scope_refused (why no session\n"
	"starts with this scope under this policy, else null).\n"
	"share: what a session sharing DIR would get, nothing started: each rule inside the\n"
	"share (PATH MODE, who asked), each credential file found (why, and its fate: refused,\n"
	"hidden, cleaned or allowed), whether the scan looked at everything, and the decision\n"
	"(start or refuse, why). Exit 0 when it would start, 1 when refused. --json: share,\n"
	"rules [{path, mode, origin, missing}], found [{path, why, fate}], found_more, scan\n"
	"{complete, stopped, entries, bytes_read, ms}, secrets, secrets_by, decision, why.\n";

static char *slurp(const char *path, char *err, size_t errlen)
{
	char *buf = io_read_path(path, 1 << 20, NULL);
	if (!buf)
		snprintf(err, errlen, "%s", errno == ERANGE ? "larger than 1 MiB" : strerror(errno));
	return buf;
}

/* Scope errors name a path ("secrets[0].destinations[1]: ..."): add where it is. */
static void scope_error_where(const char *text, const char *msg, char *out, size_t len)
{
	char path[128];
	size_t n = strcspn(msg, ": ");
	int line, col;

	if (msg[n] == ':' && n < sizeof(path) && strncmp(msg, "line ", 5)) {
		memcpy(path, msg, n);
		path[n] = '\0';
		if (!json_where(text, path, &line, &col)) {
			snprintf(out, len, "line %d, column %d: %s", line, col, msg);
			return;
		}
	}
	snprintf(out, len, "%s", msg);
}

static int check_one(const char *path)
{
	char err[512], where[640];
	char *text = slurp(path, err, sizeof(err));
	json_t *root;
	int is_scope, rc = 0;

	if (!text) {
		printf("%s: %s\n", path, err);
		return 1;
	}
	root = json_loads(text, 0, NULL);
	is_scope = json_is_object(root) &&
		   (json_object_get(root, "secrets") || json_object_get(root, "allow") ||
		    json_object_get(root, "work") || json_object_get(root, "expires_at"));
	json_decref(root);
	if (is_scope) {
		struct rules r;

		if (rules_load_json(&r, text, err, sizeof(err))) {
			scope_error_where(text, err, where, sizeof(where));
			printf("%s: %s\n", path, where);
			rc = 1;
		} else {
			char grant[PATH_MAX + 64] = "", when[32];
			time_t t = (time_t)r.expires_at;

			if (r.work)
				snprintf(grant, sizeof(grant), ", work %s%s", r.work,
					 r.work_read_only ? " read-only" : "");
			if (r.expires_at &&
			    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t)))
				snprintf(grant + strlen(grant), sizeof(grant) - strlen(grant),
					 ", expires %s", when);
			printf("%s: ok (scope: %zu secret%s, %zu allowed destination%s%s)\n", path,
			       r.n_secrets, r.n_secrets == 1 ? "" : "s", r.n_allow,
			       r.n_allow == 1 ? "" : "s", grant);
			rules_free(&r);
		}
	} else {
		struct policy p;

		if (policy_load_json(&p, text, err, sizeof(err))) {
			printf("%s: %s\n", path, err);
			rc = 1;
		} else {
			printf("%s: ok (policy: %zu denied host%s, %zu denied network%s, %zu "
			       "approval rule%s)\n",
			       path, p.n_deny_hosts, p.n_deny_hosts == 1 ? "" : "s", p.n_deny_cidrs,
			       p.n_deny_cidrs == 1 ? "" : "s", p.n_approvals,
			       p.n_approvals == 1 ? "" : "s");
			policy_free(&p);
		}
	}
	free(text);
	return rc;
}

/* URL's path and query as the broker judges them: in their canonical spelling
 * (broker/reqpath.h), or refused as the broker refuses them. */
static int explain_target(const char *url, const struct http_parser_url *u, char *out,
			  size_t outlen)
{
	char raw[4096], query[4096];
	const char *why = NULL;
	int has_path = (u->field_set & (1 << UF_PATH)) != 0;
	int has_query = (u->field_set & (1 << UF_QUERY)) != 0;
	size_t plen = has_path ? u->field_data[UF_PATH].len : 1;
	size_t qlen = has_query ? u->field_data[UF_QUERY].len : 0;

	if (plen >= sizeof(raw) || qlen >= sizeof(query) || plen + qlen + 2 > outlen) {
		fprintf(stderr, "bulkhead policy explain: the URL is too long\n");
		return -1;
	}
	if (reqpath_canon_path(has_path ? url + u->field_data[UF_PATH].off : "/", plen, raw,
			       &why) ||
	    reqpath_canon_query(url + (has_query ? u->field_data[UF_QUERY].off : 0), qlen, query,
				&why)) {
		fprintf(stderr,
			"bulkhead policy explain: the broker refuses the target in '%s': %s\n", url,
			why);
		return -1;
	}
	int n = snprintf(out, outlen, "%s%s%s", raw, has_query ? "?" : "", query);
	return n < 0 || (size_t)n >= outlen ? -1 : 0; /* never: the canonical form is no longer */
}

/* What explain says, as JSON: the text is read from it, so the two cannot disagree. */
static json_t *explain_json(const struct decision *d, const char *refused)
{
	json_t *inject = json_array();
	for (size_t i = 0; inject && i < d->n_inject; i++)
		json_array_append_new(inject, json_string(d->inject[i]->name));
	return json_pack("{s:s, s:s, s:s, s:s?, s:o?, s:b, s:s?}", "decision",
			 decide_verdict_name(d->verdict), "layer", decide_layer_name(d->layer),
			 "rule", d->rule, "why", d->verdict == VERDICT_DENY ? d->why : NULL,
			 "inject", inject, "git_push_held_by_ref_rule",
			 d->needs_body && d->verdict == VERDICT_ALLOW, "scope_refused", refused);
}

static void explain_say(const json_t *e)
{
	size_t i;
	json_t *v;
	printf("decision: %s\nlayer:    %s\nrule:     %s\n",
	       json_string_value(json_object_get(e, "decision")),
	       json_string_value(json_object_get(e, "layer")),
	       json_string_value(json_object_get(e, "rule")));
	if (json_is_string(json_object_get(e, "why")))
		printf("why:      %s\n", json_string_value(json_object_get(e, "why")));
	json_array_foreach(json_object_get(e, "inject"), i, v)
		printf("inject:   %s\n", json_string_value(v));
	if (json_is_true(json_object_get(e, "git_push_held_by_ref_rule")))
		printf("note:     a git push here is held for approval when it updates a ref an "
		       "approval rule names\n");
	if (json_is_string(json_object_get(e, "scope_refused")))
		printf("note:     no session starts with this scope: %s\n",
		       json_string_value(json_object_get(e, "scope_refused")));
}

static int explain(int argc, char **argv)
{
	static const struct option opts[] = { { "policy", required_argument, NULL, 'p' },
					      { "scope", required_argument, NULL, 's' },
					      { "json", no_argument, NULL, 'j' },
					      { NULL, 0, NULL, 0 } };
	const char *policy_path = NULL, *scope_path = NULL, *method, *url;
	struct policy pol, *pp = NULL;
	struct rules scope;
	struct http_parser_url u;
	struct decision d;
	char err[512], host[HOSTNAME_MAX + 1], path[4096];
	const char *why;
	int o, port = -1, https, json = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'p')
			policy_path = optarg;
		else if (o == 's')
			scope_path = optarg;
		else if (o == 'j')
			json = 1;
		else
			return EXIT_BULKHEAD;
	}
	if (!scope_path || argc - optind != 2) {
		fputs(policy_usage, stderr);
		return EXIT_BULKHEAD;
	}
	method = argv[optind];
	url = argv[optind + 1];
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, strlen(url), 0, &u) || !(u.field_set & (1 << UF_SCHEMA)) ||
	    !(u.field_set & (1 << UF_HOST)) || u.field_data[UF_HOST].len > RULES_HOST_MAX) {
		fprintf(stderr, "bulkhead policy explain: '%s' is not an absolute http(s) URL\n",
			url);
		return EXIT_BULKHEAD;
	}
	https = u.field_data[UF_SCHEMA].len == 5 &&
		!strncasecmp(url + u.field_data[UF_SCHEMA].off, "https", 5);
	/* The host as the broker compares it: canonical (broker/hostname.h). */
	if (hostname_canon(url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len, host,
			   &why)) {
		fprintf(stderr,
			"bulkhead policy explain: the broker refuses the host in '%s': %s\n", url,
			why);
		return EXIT_BULKHEAD;
	}
	if (u.field_set & (1 << UF_PORT))
		port = u.port;
	if (explain_target(url, &u, path, sizeof(path)))
		return EXIT_BULKHEAD;
	if (!policy_path && access(POLICY_DEFAULT_PATH, F_OK) == 0)
		policy_path = POLICY_DEFAULT_PATH;
	if (policy_path) {
		if (policy_load_file(&pol, policy_path, err, sizeof(err))) {
			fprintf(stderr, "bulkhead policy explain: %s\n", err);
			return EXIT_BULKHEAD;
		}
		pp = &pol;
	}
	if (rules_load_file(&scope, scope_path, err, sizeof(err))) {
		fprintf(stderr, "bulkhead policy explain: %s: %s\n", scope_path, err);
		if (pp)
			policy_free(pp);
		return EXIT_BULKHEAD;
	}
	struct decide_req q = { method, host, port, path, https, NULL, DECIDE_GIT_REFS_UNKNOWN };
	decide(pp, &scope, &q, &d);
	int refused = policy_check_scope(pp, &scope, err, sizeof(err));
	json_t *e = explain_json(&d, refused ? err : NULL); /* before the rules it points into go */
	char *text = json && e ? json_dumps(e, JSON_INDENT(2)) : NULL;
	rules_free(&scope);
	if (pp)
		policy_free(pp);
	if (!e || (json && !text)) {
		fprintf(stderr, "bulkhead policy explain: out of memory\n");
		json_decref(e);
		return EXIT_BULKHEAD;
	}
	if (json)
		printf("%s\n", text);
	else
		explain_say(e);
	free(text);
	json_decref(e);
	return 0;
}

int cmd_policy(int argc, char **argv)
{
	int bad = 0;

	if (argc >= 2 && !strcmp(argv[1], "explain"))
		return explain(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "share"))
		return policy_share(argc - 1, argv + 1);
	if (argc >= 3 && !strcmp(argv[1], "check")) {
		for (int i = 2; i < argc; i++)
			bad |= check_one(argv[i]);
		return bad;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(policy_usage, stdout);
		return 0;
	}
	fputs(policy_usage, stderr);
	return EXIT_BULKHEAD;
}
