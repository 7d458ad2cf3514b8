/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_scope.c: libFuzzer target for the session scope loader (broker/rules.c,
 * rules_grant.c) and what runs on a loaded scope: decide() for a few requests and the check
 * against a global policy. The input is a scope file. Checks, beyond ASan and UBSan: a load
 * either succeeds or says why; every destination host of a loaded scope is canonical; a
 * decision to allow always names a destination, and a request the policy denies by name is
 * never allowed. */
#include "broker/decide.h"
#include "broker/hostname.h"
#include "broker/policy.h"
#include "broker/rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct policy pol;

static void dests_canonical(const struct rules_dest *d, size_t n)
{
	char canon[HOSTNAME_MAX + 1];
	const char *why;

	for (size_t i = 0; i < n; i++)
		if (hostname_canon(d[i].host, strlen(d[i].host), canon, &why) ||
		    strcmp(canon, d[i].host))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static const char *const hosts[] = { "api.example.com", "db.corp.example", "127.0.0.1",
					     "::1", "pypi.org" };
	char *text, err[512] = "";
	struct rules r;
	size_t i;

	if (!ready) {
		if (policy_load_json(
			    &pol,
			    "{\"deny_hosts\":[\"*.corp.example\",\"127.0.0.1\"],"
			    "\"deny_cidrs\":[\"10.0.0.0/8\"],\"deny_secrets\":[\"prod_*\"],"
			    "\"require_approval\":[{\"host\":\"api.example.com\"}]}",
			    err, sizeof(err)))
			abort();
		ready = 1;
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (rules_load_json(&r, text, err, sizeof(err))) {
		if (!err[0])
			abort();
		free(text);
		return 0;
	}
	for (i = 0; i < r.n_secrets; i++)
		dests_canonical(r.secrets[i].dests, r.secrets[i].n_dests);
	dests_canonical(r.allow, r.n_allow);
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct decide_req q = {
			"POST", hosts[i], -1, "/repos/x", 1, NULL, DECIDE_GIT_REFS_UNKNOWN
		};
		struct decision d;

		decide(&pol, &r, &q, &d);
		if (d.verdict != VERDICT_DENY && !d.dest)
			abort();
		if (d.verdict != VERDICT_DENY && policy_host_denied(&pol, hosts[i]))
			abort();
		decide_connect(&pol, &r, hosts[i], 443, &d);
		if (d.verdict == VERDICT_ALLOW && policy_host_denied(&pol, hosts[i]))
			abort();
	}
	(void)policy_check_scope(&pol, &r, err, sizeof(err));
	rules_free(&r);
	free(text);
	return 0;
}
