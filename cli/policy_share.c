/* SPDX-License-Identifier: Apache-2.0 */
/* cli/policy_share.c: `bulkhead policy share DIR`: what a session sharing DIR would get, with
 * nothing started — each rule inside the share and where it comes from, each credential file
 * the scan finds with why and what is done with it, whether the scan looked at everything,
 * who decided, and whether the session starts (share_plan.h does the deciding, as for a
 * session). Exit 0 when it would start, 1 when it would be refused, 125 on a usage error. */
#include "cli/broker_cmds.h"
#include "session/exit_codes.h"
#include "session/plan.h"
#include "session/share_fs.h"
#include "session/share_plan.h"

#include "broker/policy.h"
#include "broker/rules.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

/* A path as JSON: itself when it is UTF-8, else its quoted form. */
static json_t *path_json(const char *p)
{
	char q[PATH_MAX * 4];
	json_t *v = json_string(p);

	if (v)
		return v;
	share_scan_quote(p, q, sizeof(q));
	return json_string(q);
}

static json_t *report(const char *dir, const struct share_rules *rs, const struct share_scan *s,
		      const struct share_outcome *o, const char *refused)
{
	json_t *rules = json_array(), *found = json_array();

	for (size_t i = 0; rules && i < rs->n; i++)
		json_array_append_new(rules, json_pack("{s:o, s:s, s:s, s:b}", "path",
						       path_json(rs->r[i].path), "mode",
						       share_mode_name(rs->r[i].mode), "origin",
						       rs->r[i].origin, "missing", rs->r[i].missing));
	for (size_t i = 0; found && i < s->n; i++)
		json_array_append_new(found, json_pack("{s:o, s:s, s:s}", "path",
						       path_json(s->found[i].path), "why",
						       s->found[i].why, "fate",
						       s->found[i].fate ? s->found[i].fate : "refused"));
	return json_pack("{s:s, s:o?, s:o?, s:I, s:{s:b, s:s?, s:I, s:I, s:I}, s:s, s:s, s:s, s:s?}",
			 "share", dir, "rules", rules, "found", found, "found_more",
			 (json_int_t)s->n_more, "scan", "complete", s->complete, "stopped",
			 s->complete ? NULL : s->stopped, "entries", (json_int_t)s->entries,
			 "bytes_read", (json_int_t)s->bytes_read, "ms", (json_int_t)s->ms,
			 "secrets", o->secrets == SHARE_SECRETS_HIDE ? "hide" : "refuse",
			 "secrets_by", o->secrets_by, "decision", refused ? "refuse" : "start",
			 "why", refused);
}

/* A name from the share for a line of text: a planted name cannot start a line of its own
 * or talk to the terminal (share_scan_quote). */
static const char *q(const json_t *o, const char *key, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(o, key));

	share_scan_quote(s ? s : "", buf, len);
	return buf;
}

static void say(const json_t *r)
{
	const json_t *scan = json_object_get(r, "scan"), *v;
	char b1[PATH_MAX * 4 + 8], b2[PATH_MAX * 4 + 8];
	size_t i;

	printf("share:    %s\n", q(r, "share", b1, sizeof(b1)));
	json_array_foreach(json_object_get(r, "rules"), i, v)
		printf("rule:     %s %s (%s%s)\n", q(v, "path", b1, sizeof(b1)),
		       json_string_value(json_object_get(v, "mode")),
		       json_string_value(json_object_get(v, "origin")),
		       json_is_true(json_object_get(v, "missing")) ? "; not there yet: made empty"
								    : "");
	json_array_foreach(json_object_get(r, "found"), i, v)
		printf("found:    %s: %s: %s\n", q(v, "path", b2, sizeof(b2)),
		       json_string_value(json_object_get(v, "why")),
		       json_string_value(json_object_get(v, "fate")));
	if (json_integer_value(json_object_get(r, "found_more")))
		printf("found:    %lld more, not listed\n",
		       (long long)json_integer_value(json_object_get(r, "found_more")));
	if (json_is_true(json_object_get(scan, "complete")))
		printf("scan:     complete: %lld entries, %lld bytes read, %lld ms\n",
		       (long long)json_integer_value(json_object_get(scan, "entries")),
		       (long long)json_integer_value(json_object_get(scan, "bytes_read")),
		       (long long)json_integer_value(json_object_get(scan, "ms")));
	else
		printf("scan:     stopped early: %s\n",
		       json_string_value(json_object_get(scan, "stopped")));
	printf("secrets:  %s (%s)\n", json_string_value(json_object_get(r, "secrets")),
	       json_string_value(json_object_get(r, "secrets_by")));
	printf("decision: %s\n", json_string_value(json_object_get(r, "decision")));
	if (json_is_string(json_object_get(r, "why")))
		printf("why:      %s\n", json_string_value(json_object_get(r, "why")));
}

static const char usage[] =
	"usage: bulkhead policy share [--policy FILE] [--scope FILE] [--work-rule PATH:MODE]...\n"
	"           [--share-secrets refuse|hide] [--share-allow PATH]... [--json] DIR\n";

int policy_share(int argc, char **argv)
{
	static const struct option opts[] = { { "policy", required_argument, NULL, 'p' },
					      { "scope", required_argument, NULL, 's' },
					      { "work-rule", required_argument, NULL, 'r' },
					      { "share-secrets", required_argument, NULL, 'S' },
					      { "share-allow", required_argument, NULL, 'a' },
					      { "json", no_argument, NULL, 'j' },
					      { NULL, 0, NULL, 0 } };
	const char *policy_path = NULL, *scope_path = NULL, *specs[SHARE_RULES_MAX],
		   *allow[SHARE_RULES_MAX];
	struct share_asks a = { .rules = specs, .allow = allow };
	struct share_layers L = { 0 };
	struct share_rules rs = { 0 };
	struct share_scan scan = { 0 };
	struct share_outcome out = { 0 };
	struct share_fs fs;
	struct policy pol;
	struct rules scope;
	bool have_pol = false, have_scope = false;
	const char *hit;
	char err[4096], label[PATH_MAX + 16];
	int o, json = 0, rc = EXIT_BULKHEAD, refused;
	json_t *r = NULL;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'p')
			policy_path = optarg;
		else if (o == 's')
			scope_path = optarg;
		else if (o == 'r' && a.nrules < SHARE_RULES_MAX)
			specs[a.nrules++] = optarg;
		else if (o == 'a' && a.nallow < SHARE_RULES_MAX)
			allow[a.nallow++] = optarg;
		else if (o == 'S' && (!strcmp(optarg, "refuse") || !strcmp(optarg, "hide")))
			a.secrets = optarg;
		else if (o == 'j')
			json = 1;
		else {
			fputs(usage, stderr);
			return EXIT_BULKHEAD;
		}
	}
	if (argc - optind != 1) {
		fputs(usage, stderr);
		return EXIT_BULKHEAD;
	}
	if (!policy_path && access(POLICY_DEFAULT_PATH, F_OK) == 0)
		policy_path = POLICY_DEFAULT_PATH;
	if (policy_path) {
		if (policy_load_file(&pol, policy_path, err, sizeof(err))) {
			fprintf(stderr, "bulkhead policy share: %s\n", err);
			return EXIT_BULKHEAD;
		}
		have_pol = true;
		if (share_layers_policy(&L, &pol, err, sizeof(err)) < 0)
			goto fail;
	}
	if (scope_path) {
		if (rules_load_file(&scope, scope_path, err, sizeof(err))) {
			fprintf(stderr, "bulkhead policy share: %s: %s\n", scope_path, err);
			goto out;
		}
		have_scope = true;
		if (share_layers_scope(&L, &scope, err, sizeof(err)) < 0)
			goto fail;
	}
	if (share_fs_resolve(argv[optind], false, "bulkhead policy share:", &fs, err,
			     sizeof(err)) < 0)
		goto fail;
	snprintf(label, sizeof(label), "--work %s", fs.dir);
	refused = share_plan(fs.dir, label, true, &L, &a, &rs, &scan, &out, err,
			     sizeof(err));
	if (refused == -2)
		goto fail; /* the asks, not the share: a usage error */
	/* What refuses the directory itself, as a session would: the policy's deny_share_paths,
	 * a scope that grants another one. Said instead of what the share holds. */
	if (have_pol && (hit = plan_share_denied(&pol, &fs))) {
		snprintf(err, sizeof(err),
			 "--work %.2000s: refused by the global policy (deny_share_paths: \"%.1000s\")",
			 fs.dir, hit);
		refused = -1;
	} else if (have_scope && scope.work) {
		struct share_fs granted;
		char glabel[PATH_MAX + 32];

		snprintf(glabel, sizeof(glabel), "--scope %s: work:", scope_path);
		if (share_fs_resolve(scope.work, scope.work_read_only, glabel, &granted, err,
				     sizeof(err)) < 0) {
			refused = -1;
		} else if (granted.dev != fs.dev || granted.ino != fs.ino) {
			snprintf(err, sizeof(err),
				 "--work %.200s: the scope grants %.200s, and no other directory",
				 fs.dir, granted.dir);
			refused = -1;
		}
	}
	r = report(fs.dir, &rs, &scan, &out, refused ? err : NULL);
	if (!r)
		goto fail;
	if (json) {
		char *t = json_dumps(r, JSON_INDENT(2));

		if (!t)
			goto fail;
		printf("%s\n", t);
		free(t);
	} else {
		say(r);
	}
	rc = refused ? 1 : 0;
	goto out;
fail:
	fprintf(stderr, "bulkhead policy share: %s\n", err);
out:
	json_decref(r);
	if (have_pol)
		policy_free(&pol);
	if (have_scope)
		rules_free(&scope);
	share_rules_free(&rs);
	share_scan_free(&scan);
	share_layers_free(&L);
	return rc;
}
