/* SPDX-License-Identifier: Apache-2.0 */
/* cli/approvals_cmd.c: `bulkhead approvals list|show ID|approve ID|deny ID [--reason R]` —
 * asks every broker on this host (session/approvals.c).
 * Host only: no vsock port leads to these sockets, and the brokers check who connects. */
#include "session/approvals.h"
#include "cli/broker_cmds.h"
#include "session/exit_codes.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void complain(const char *why)
{
	fprintf(stderr, "bulkhead approvals: %s\n", why);
}

static const char approvals_usage[] =
	"usage: bulkhead approvals list [--json]\n"
	"       bulkhead approvals show ID\n"
	"       bulkhead approvals approve ID [--reason TEXT]\n"
	"       bulkhead approvals deny ID [--reason TEXT]\n"
	"\n"
	"Requests the global policy holds for a person. Each approval is bound to one exact\n"
	"request (its SHA-256 is shown) and is used once; undecided, it is denied when its TTL\n"
	"runs out or its session ends. The guest gets the upstream's answer after approve, or a\n"
	"403 naming the approval and the reason.\n";

static const char *s_or(json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : dflt;
}

static int list(int as_json)
{
	json_t *all = approvals_collect(complain), *a;
	time_t now = time(NULL);
	size_t i;

	if (as_json) {
		char *s = json_dumps(all, JSON_INDENT(2));

		puts(s ? s : "[]");
		free(s);
	} else if (!json_array_size(all)) {
		puts("no pending approvals");
	} else {
		printf("%-12s  %-16s  %-7s  %-8s  %s\n", "ID", "SESSION", "METHOD", "EXPIRES",
		       "URL");
		json_array_foreach(all, i, a)
		{
			long left = (long)(json_integer_value(json_object_get(a, "expires")) - now);

			printf("%-12s  %-16s  %-7s  %5lds    %s\n", s_or(a, "id", "-"),
			       s_or(a, "session", "-"), s_or(a, "method", "-"), left < 0 ? 0 : left,
			       s_or(a, "url", "-"));
		}
	}
	json_decref(all);
	return 0;
}

static int show(const char *id)
{
	json_t *all = approvals_collect(complain), *a = approvals_find(all, id), *refs;
	size_t i;

	if (!a) {
		fprintf(stderr, "bulkhead approvals: no pending approval %s\n", id);
		json_decref(all);
		return 1;
	}
	printf("id:      %s\nsession: %s\nrequest: %s %s\nrule:    %s\nsecret:  %s\n"
	       "sha256:  %s\nbody:    %s\n",
	       s_or(a, "id", "-"), s_or(a, "session", "-"), s_or(a, "method", "-"),
	       s_or(a, "url", "-"), s_or(a, "rule", "-"), s_or(a, "secret", "-"),
	       s_or(a, "sha256", "-"), s_or(a, "body", ""));
	refs = json_object_get(a, "git_refs");
	for (i = 0; i < json_array_size(refs); i++)
		printf("git ref: %s\n", json_string_value(json_array_get(refs, i)));
	json_decref(all);
	return 0;
}

static int decide_cmd(const char *id, int approve, const char *reason)
{
	json_t *all = approvals_collect(complain), *a = approvals_find(all, id);
	char why[PATH_MAX + 64];
	int rc = 1;

	if (!a)
		fprintf(stderr, "bulkhead approvals: no pending approval %s\n", id);
	else if (approvals_decide(a, approve, reason, why, sizeof(why)) < 0)
		fprintf(stderr, "bulkhead approvals: %s\n", why);
	else {
		printf("%s %s\n", approve ? "approved" : "denied", id);
		rc = 0;
	}
	json_decref(all);
	return rc;
}

int cmd_approvals(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list") &&
	    (argc == 2 || (argc == 3 && !strcmp(argv[2], "--json"))))
		return list(argc == 3);
	if (argc == 3 && !strcmp(argv[1], "show"))
		return show(argv[2]);
	if ((argc == 3 || (argc == 5 && !strcmp(argv[3], "--reason"))) &&
	    (!strcmp(argv[1], "approve") || !strcmp(argv[1], "deny")))
		return decide_cmd(argv[2], argv[1][0] == 'a', argc == 5 ? argv[4] : NULL);
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(approvals_usage, stdout);
		return 0;
	}
	fputs(approvals_usage, stderr);
	return EXIT_BULKHEAD;
}
