/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_decide.c: precedence, table-driven — every combination of what the global
 * policy says (nothing, deny the host, deny the secret, require approval), what the scope
 * says (a secret's destination, an allow-list entry, nothing) and the kind of request (read,
 * write, git fetch, git push to a guarded or another ref), against the one expected
 * decision, layer and rule. */
#include "broker/decide.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const char *const scope_json[] = {
	/* SCOPE_SECRET: the token goes to api.test under /v1/ */
	"{\"secrets\":[{\"name\":\"tok\",\"inject\":{\"header\":\"Authorization\","
	"\"value\":\"Bearer {}\"},\"destinations\":[{\"scheme\":\"https\",\"host\":\"api.test\","
	"\"path_prefix\":\"/v1/\"}]}]}",
	/* SCOPE_ALLOW: api.test reachable without a secret */
	"{\"allow\":[{\"scheme\":\"https\",\"host\":\"api.test\"}]}",
	/* SCOPE_NONE */
	"{\"allow\":[]}",
};
enum { SCOPE_SECRET, SCOPE_ALLOW, SCOPE_NONE };

static const char *const policy_json[] = {
	/* POL_NONE */ NULL,
	/* POL_DENY_HOST */ "{\"deny_hosts\":[\"*.test\"]}",
	/* POL_DENY_SECRET */ "{\"deny_secrets\":[\"t*\"]}",
	/* POL_APPROVE_WRITES */ "{\"require_approval\":[{\"host\":\"api.test\"}]}",
	/* POL_APPROVE_MAIN */
	"{\"require_approval\":[{\"host\":\"api.test\",\"git_ref\":\"refs/heads/main\"}]}",
};
enum { POL_NONE, POL_DENY_HOST, POL_DENY_SECRET, POL_APPROVE_WRITES, POL_APPROVE_MAIN };

enum { REQ_READ, REQ_WRITE, REQ_FETCH, REQ_PUSH_MAIN, REQ_PUSH_TOPIC, REQ_OTHER_HOST };

struct row {
	int policy, scope, req;
	enum verdict verdict;
	enum layer layer;
	const char *rule;
	int needs_body; /* before the push's refs are known */
};

static const struct row table[] = {
	/* No global policy: the scope alone decides; default deny. */
	{ POL_NONE, SCOPE_SECRET, REQ_READ, VERDICT_ALLOW, LAYER_SCOPE, "secret:tok", 0 },
	{ POL_NONE, SCOPE_SECRET, REQ_WRITE, VERDICT_ALLOW, LAYER_SCOPE, "secret:tok", 0 },
	{ POL_NONE, SCOPE_ALLOW, REQ_READ, VERDICT_ALLOW, LAYER_SCOPE, "allow:api.test", 0 },
	{ POL_NONE, SCOPE_NONE, REQ_READ, VERDICT_DENY, LAYER_DEFAULT, "none", 0 },
	{ POL_NONE, SCOPE_SECRET, REQ_OTHER_HOST, VERDICT_DENY, LAYER_DEFAULT, "none", 0 },
	/* A global denial beats every scope. */
	{ POL_DENY_HOST, SCOPE_SECRET, REQ_READ, VERDICT_DENY, LAYER_GLOBAL, "deny_hosts:*.test",
	  0 },
	{ POL_DENY_HOST, SCOPE_ALLOW, REQ_WRITE, VERDICT_DENY, LAYER_GLOBAL, "deny_hosts:*.test",
	  0 },
	{ POL_DENY_HOST, SCOPE_NONE, REQ_READ, VERDICT_DENY, LAYER_GLOBAL, "deny_hosts:*.test", 0 },
	{ POL_DENY_SECRET, SCOPE_SECRET, REQ_READ, VERDICT_DENY, LAYER_GLOBAL, "deny_secrets:t*",
	  0 },
	/* ... a denied secret does not matter where no secret is used. */
	{ POL_DENY_SECRET, SCOPE_ALLOW, REQ_READ, VERDICT_ALLOW, LAYER_SCOPE, "allow:api.test", 0 },
	{ POL_DENY_SECRET, SCOPE_NONE, REQ_READ, VERDICT_DENY, LAYER_DEFAULT, "none", 0 },
	/* Approval only ever narrows what the scope allows. */
	{ POL_APPROVE_WRITES, SCOPE_SECRET, REQ_READ, VERDICT_ALLOW, LAYER_SCOPE, "secret:tok", 0 },
	{ POL_APPROVE_WRITES, SCOPE_SECRET, REQ_WRITE, VERDICT_APPROVAL, LAYER_APPROVAL,
	  "require_approval[0]", 0 },
	{ POL_APPROVE_WRITES, SCOPE_ALLOW, REQ_WRITE, VERDICT_APPROVAL, LAYER_APPROVAL,
	  "require_approval[0]", 0 },
	{ POL_APPROVE_WRITES, SCOPE_ALLOW, REQ_FETCH, VERDICT_ALLOW, LAYER_SCOPE, "allow:api.test",
	  0 },
	{ POL_APPROVE_WRITES, SCOPE_NONE, REQ_WRITE, VERDICT_DENY, LAYER_DEFAULT, "none", 0 },
	/* A ref rule: pushes wait for their body; fetches and other methods do not. */
	{ POL_APPROVE_MAIN, SCOPE_ALLOW, REQ_FETCH, VERDICT_ALLOW, LAYER_SCOPE, "allow:api.test",
	  0 },
	{ POL_APPROVE_MAIN, SCOPE_ALLOW, REQ_WRITE, VERDICT_ALLOW, LAYER_SCOPE, "allow:api.test",
	  0 },
	{ POL_APPROVE_MAIN, SCOPE_ALLOW, REQ_PUSH_MAIN, VERDICT_APPROVAL, LAYER_APPROVAL,
	  "require_approval[0]", 1 },
	{ POL_APPROVE_MAIN, SCOPE_ALLOW, REQ_PUSH_TOPIC, VERDICT_ALLOW, LAYER_SCOPE,
	  "allow:api.test", 1 },
	{ POL_APPROVE_MAIN, SCOPE_NONE, REQ_PUSH_MAIN, VERDICT_DENY, LAYER_DEFAULT, "none", 0 },
};

static void make_req(int kind, struct decide_req *q, int body_known)
{
	static const char *const main_ref[] = { "refs/heads/main" };
	static const char *const topic_ref[] = { "refs/heads/topic" };

	memset(q, 0, sizeof(*q));
	q->host = kind == REQ_OTHER_HOST ? "other.example" : "api.test";
	q->port = -1;
	q->https = 1;
	q->n_git_refs = DECIDE_GIT_REFS_UNKNOWN;
	switch (kind) {
	case REQ_READ:
	case REQ_OTHER_HOST:
		q->method = "GET";
		q->path = "/v1/items";
		break;
	case REQ_WRITE:
		q->method = "DELETE";
		q->path = "/v1/items/1";
		break;
	case REQ_FETCH:
		q->method = "POST";
		q->path = "/v1/repo.git/git-upload-pack";
		break;
	default:
		q->method = "POST";
		q->path = "/v1/repo.git/git-receive-pack";
		if (body_known) {
			q->git_refs = kind == REQ_PUSH_MAIN ? main_ref : topic_ref;
			q->n_git_refs = 1;
		}
	}
}

static void test_precedence_table(void **state)
{
	char err[256], name[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct row *r = &table[i];
		struct policy pol, *pp = NULL;
		struct rules scope;
		struct decide_req q;
		struct decision d;

		snprintf(name, sizeof(name), "row %zu", i);
		if (policy_json[r->policy]) {
			assert_int_equal(
				policy_load_json(&pol, policy_json[r->policy], err, sizeof(err)),
				0);
			pp = &pol;
		}
		assert_int_equal(rules_load_json(&scope, scope_json[r->scope], err, sizeof(err)),
				 0);
		/* At the head: a push's refs are not known yet. */
		make_req(r->req, &q, 0);
		decide(pp, &scope, &q, &d);
		if (r->needs_body) {
			if (!d.needs_body || d.verdict != VERDICT_ALLOW)
				fail_msg("%s: a push must wait for its body", name);
			make_req(r->req, &q, 1);
			decide(pp, &scope, &q, &d);
		}
		if (d.verdict != r->verdict || d.layer != r->layer || strcmp(d.rule, r->rule))
			fail_msg("%s: got %s/%s/%s, want %s/%s/%s", name,
				 decide_verdict_name(d.verdict), decide_layer_name(d.layer), d.rule,
				 decide_verdict_name(r->verdict), decide_layer_name(r->layer),
				 r->rule);
		if (d.verdict == VERDICT_DENY && !d.why[0])
			fail_msg("%s: a denial must say why", name);
		if (d.verdict == VERDICT_ALLOW && !d.dest)
			fail_msg("%s: an allowed request needs a destination", name);
		rules_free(&scope);
		if (pp)
			policy_free(pp);
	}
}

static void test_cidr_and_ip_literal(void **state)
{
	struct policy pol;
	struct rules scope;
	struct decide_req q = { "GET", "10.1.2.3", -1, "/", 0, NULL, DECIDE_GIT_REFS_UNKNOWN };
	struct decision d;
	char err[256];

	(void)state;
	assert_int_equal(
		policy_load_json(&pol, "{\"deny_cidrs\":[\"10.0.0.0/8\"]}", err, sizeof(err)), 0);
	assert_int_equal(rules_load_json(&scope,
					 "{\"allow\":[{\"scheme\":\"http\",\"host\":\"10.1.2.3\","
					 "\"allow_addresses\":[\"10.1.2.3\"]}]}",
					 err, sizeof(err)),
			 0);
	decide(&pol, &scope, &q, &d);
	assert_int_equal(d.verdict, VERDICT_DENY);
	assert_int_equal(d.layer, LAYER_GLOBAL);
	assert_string_equal(d.rule, "deny_cidrs:10.0.0.0/8");
	/* The same scope is refused at session start, naming the rule. */
	assert_int_equal(policy_check_scope(&pol, &scope, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "deny_cidrs"));
	rules_free(&scope);
	policy_free(&pol);
}

static void test_connect(void **state)
{
	struct policy pol;
	struct rules scope;
	struct decision d;
	char err[256];

	(void)state;
	assert_int_equal(policy_load_json(&pol, "{\"deny_hosts\":[\"*.test\"]}", err, sizeof(err)),
			 0);
	assert_int_equal(rules_load_json(&scope, scope_json[SCOPE_SECRET], err, sizeof(err)), 0);
	decide_connect(NULL, &scope, "api.test", 443, &d);
	assert_int_equal(d.verdict, VERDICT_ALLOW);
	assert_string_equal(d.rule, "connect:api.test");
	decide_connect(NULL, &scope, "api.test", 8443, &d); /* no https rule for that port */
	assert_int_equal(d.verdict, VERDICT_DENY);
	assert_int_equal(d.layer, LAYER_DEFAULT);
	decide_connect(&pol, &scope, "api.test", 443, &d); /* the policy beats the scope */
	assert_int_equal(d.verdict, VERDICT_DENY);
	assert_int_equal(d.layer, LAYER_GLOBAL);
	assert_string_equal(d.rule, "deny_hosts:*.test");
	rules_free(&scope);
	policy_free(&pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precedence_table),
		cmocka_unit_test(test_cidr_and_ip_literal),
		cmocka_unit_test(test_connect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
