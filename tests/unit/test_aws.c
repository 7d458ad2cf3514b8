/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_aws.c: Signature Version 4 as the broker signs (broker/aws_sigv4.h), against
 * the example AWS publishes in its "Signature Version 4 signing process" (IAM ListUsers, whose
 * signature is given there), the head it rewrites, and what it refuses; an S3 request's bucket
 * and key against a rule's "s3" list (broker/aws_s3.h); the rules that say so; the vault's
 * documents and STS's answers (broker/aws_sts.h), hostile ones included. The signer is
 * also checked against botocore's own, request by request, in tests/e2e/test_broker_aws.sh. */
#include "broker/aws_s3.h"
#include "broker/aws_sigv4.h"
#include "broker/aws_sts.h"
#include "broker/cred.h"
#include "broker/rules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define AWS_EXAMPLE_TIME 1440938160 /* 20150830T123600Z */

static char *sign(const char *head, const struct aws_key *k, const char *service)
{
	struct secbuf o = { 0 };

	if (aws_sigv4_sign(head, strlen(head), k, "us-east-1", service, AWS_EMPTY_SHA256,
			   AWS_EXAMPLE_TIME, &o))
		return NULL;
	secbuf_add(&o, "", 1);
	return o.b;
}

static void test_published_example(void **state)
{
	const struct aws_key k = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				   NULL };
	/* The guest's own signature, date and token are dropped, whatever their case. */
	char *out = sign("GET /?Action=ListUsers&Version=2010-05-08 HTTP/1.1\r\n"
			 "Host: iam.amazonaws.com\r\n"
			 "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n"
			 "authorization: AWS4-HMAC-SHA256 Credential=PLACEHOLDER/x\r\n"
			 "X-AMZ-DATE: 20010101T000000Z\r\nx-amz-security-token: fake\r\n"
			 "User-Agent: sdk\r\n\r\n",
			 &k, "iam");

	(void)state;
	assert_non_null(out);
	assert_non_null(strstr(out,
			       "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"
			       "20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;"
			       "host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a"
			       "8edb4c82c400e06b5924a6f2b5d7\r\n\r\n"));
	assert_non_null(strstr(out, "\r\nX-Amz-Date: 20150830T123600Z\r\n"));
	assert_null(strstr(out, "PLACEHOLDER"));
	assert_null(strstr(out, "20010101"));
	assert_null(strstr(out, "fake"));
	assert_non_null(strstr(out, "\r\nUser-Agent: sdk\r\n")); /* kept, not signed */
	free(out);
}

static void test_head_shapes(void **state)
{
	const struct aws_key k = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
				   "TOKEN/with+chars" };
	char *a, *b, *c;

	(void)state;
	/* A query in another order, spelt otherwise, signs the same; a head held for its body
	 * (no blank line yet) gets none. */
	a = sign(
		"GET /?Version=2010-05-08&Action=ListUsers HTTP/1.1\r\nHost: iam.amazonaws.com\r\n",
		&k, "iam");
	b = sign("GET /?Action=List%55sers&Version=2010-05-08 HTTP/1.1\r\nHost: "
		 "iam.amazonaws.com\r\n",
		 &k, "iam");
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(strstr(a, "Signature="), strstr(b, "Signature="));
	assert_null(strstr(a, "\r\n\r\n"));
	assert_non_null(strstr(a, "X-Amz-Security-Token: TOKEN/with+chars\r\n"));
	assert_non_null(strstr(a, "SignedHeaders=host;x-amz-date;x-amz-security-token,"));
	/* The path is encoded once more for services but s3. */
	c = sign("GET /a%20b HTTP/1.1\r\nHost: h\r\n", &k, "s3");
	free(a);
	a = sign("GET /a%20b HTTP/1.1\r\nHost: h\r\n", &k, "lambda");
	assert_non_null(c);
	assert_non_null(a);
	assert_string_not_equal(strstr(a, "Signature="), strstr(c, "Signature="));
	free(a);
	free(b);
	free(c);
	/* Heads that do not parse. */
	assert_null(sign("GET\r\nHost: h\r\n", &k, "s3"));
	assert_null(sign("GET / HTTP/1.1\r\nno colon here\r\n", &k, "s3"));
	assert_null(sign("GET relative HTTP/1.1\r\nHost: h\r\n", &k, "s3"));
	assert_null(sign("", &k, "s3"));
}

static void test_scope_and_payload(void **state)
{
	char region[AWS_NAME_MAX + 1], service[AWS_NAME_MAX + 1];
	const char *why = NULL;
#define SCOPE(s)   aws_sigv4_scope_of(s, strlen(s), region, service)
#define PAYLOAD(s) aws_sigv4_payload_ok(s, strlen(s), &why)

	(void)state;
	assert_int_equal(SCOPE("AWS4-HMAC-SHA256 Credential=AK/20260101/eu-west-1/s3/aws4_request, "
			       "SignedHeaders=host, Signature=00"),
			 1);
	assert_string_equal(region, "eu-west-1");
	assert_string_equal(service, "s3");
	assert_int_equal(SCOPE("Bearer abc"), 0);
	assert_int_equal(SCOPE("AWS4-HMAC-SHA256 Signature=00"), -1);
	assert_int_equal(SCOPE("AWS4-HMAC-SHA256 Credential=AK/20260101/eu-west-1/s3"), -1);
	assert_int_equal(SCOPE("AWS4-HMAC-SHA256 Credential=AK/d//s3/aws4_request"), -1);
	assert_int_equal(PAYLOAD(AWS_EMPTY_SHA256), 0);
	assert_int_equal(PAYLOAD("UNSIGNED-PAYLOAD"), 0);
	assert_int_equal(PAYLOAD("STREAMING-UNSIGNED-PAYLOAD-TRAILER"), 0);
	assert_int_equal(PAYLOAD("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), -1);
	assert_non_null(strstr(why, "chunks are signed"));
	assert_int_equal(PAYLOAD("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"), -1);
	assert_int_equal(PAYLOAD("zz"), -1);
	assert_int_equal(
		PAYLOAD("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85g"), -1);
#undef SCOPE
#undef PAYLOAD
}

static const char *rules_json =
	"{\"secrets\":[{\"name\":\"AWS\",\"inject\":{\"aws_sigv4\":{\"service\":\"s3\","
	"\"region\":\"us-east-1\"}},\"s3\":[\"agent-data/runs/\",\"shared/\"],"
	"\"destinations\":[{\"scheme\":\"https\",\"host\":\"s3.us-east-1.amazonaws.com\"}]}]}";

static int s3(const struct rules *r, const char *method, const char *host, const char *path,
	      const char *query, const char *copy)
{
	char why[400];

	return aws_s3_allowed(&r->secrets[0], method, host, path, query, strlen(query), copy,
			      copy ? strlen(copy) : 0, why, sizeof(why));
}

static void test_s3_paths(void **state)
{
	const char *h = "s3.us-east-1.amazonaws.com";
	struct rules r;
	char err[256];

	(void)state;
	assert_int_equal(rules_load_json(&r, rules_json, err, sizeof(err)), 0);
	assert_int_equal(r.secrets[0].kind, RULES_INJECT_AWS_SIGV4);
	assert_string_equal(r.secrets[0].aws_service, "s3");
	/* Objects: path-style and virtual-hosted, keys decoded before the prefix is compared. */
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/a.txt", "", NULL), 0);
	assert_int_equal(
		s3(&r, "GET", "agent-data.s3.us-east-1.amazonaws.com", "/runs/a", "", NULL), 0);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/%72uns/a", "", NULL), 0);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/other/a", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/run", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", "billing.s3.amazonaws.com", "/agent-data/runs/a", "", NULL),
			 -1);
	assert_int_equal(s3(&r, "GET", h, "/billing/runs/a", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/runs/%00", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/runs/%zz", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/shared/anything", "", NULL), 0);
	/* A bucket's name may hold ".s3.": the last one ends it. */
	assert_int_equal(s3(&r, "GET", "agent-data.s3.evil.s3.amazonaws.com", "/runs/a", "", NULL),
			 -1);
	assert_int_equal(s3(&r, "GET", "agent-data.s3.dualstack.us-east-1.amazonaws.com", "/runs/a",
			    "", NULL),
			 0);
	/* A parameter given twice: a server may read either. */
	assert_int_equal(
		s3(&r, "GET", h, "/agent-data", "list-type=2&prefix=runs%2F&prefix=", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data/runs/a", "versionId=1&versionId=2", NULL),
			 -1);
	/* Object sub-resources: multipart and tags yes, ACLs no. */
	assert_int_equal(s3(&r, "POST", h, "/agent-data/runs/a", "uploads", NULL), 0);
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/a", "partNumber=1&uploadId=x", NULL),
			 0);
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/a", "acl", NULL), -1);
	/* The bucket: HEAD, and listings within a prefix; nothing else. */
	assert_int_equal(s3(&r, "HEAD", h, "/agent-data", "", NULL), 0);
	assert_int_equal(s3(&r, "HEAD", h, "/billing", "", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data", "list-type=2&prefix=runs%2Fx", NULL), 0);
	assert_int_equal(s3(&r, "GET", h, "/agent-data", "list-type=2&prefix=other", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/agent-data", "list-type=2", NULL), -1);
	assert_int_equal(s3(&r, "GET", h, "/shared", "list-type=2", NULL), 0);
	assert_int_equal(s3(&r, "GET", h, "/agent-data", "policy", NULL), -1);
	assert_int_equal(s3(&r, "POST", h, "/agent-data", "delete", NULL), -1);
	assert_int_equal(s3(&r, "DELETE", h, "/shared", "", NULL), -1);
	/* A copy's source is read: it must be within the list too. */
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/b", "", "/shared/x?versionId=1"), 0);
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/b", "", "agent-data/runs/a"), 0);
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/b", "", "/billing/x"), -1);
	assert_int_equal(s3(&r, "PUT", h, "/agent-data/runs/b", "", "nobucket"), -1);
	rules_free(&r);
}

static void test_rules_refused(void **state)
{
	static const char *const bad[] = {
		/* s3 without its buckets; buckets for another service; a bucket S3 would not
		 * take; a service or region that is no name; aws_sigv4 with another form. */
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"s3\","
		"\"region\":\"us-east-1\"}},\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\","
		"\"region\":\"us-east-1\"}},\"s3\":[\"b12/"
		"\"],\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"s3\","
		"\"region\":\"us-east-1\"}},\"s3\":[\"Bad_Bucket/"
		"\"],\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"S3\","
		"\"region\":\"us-east-1\"}},\"s3\":[\"b12/"
		"\"],\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\"}},"
		"\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\","
		"\"region\":\"r\"},\"header\":\"X\"},\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\","
		"\"region\":\"r\",\"x\":1}},\"destinations\":[{\"host\":\"h\"}]}]}",
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\","
		"\"region\":\"r\"}},\"oauth_scope\":\"read\",\"destinations\":[{\"host\":\"h\"}]}]"
		"}",
		/* A session policy that is no object. */
		"{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":{\"service\":\"lambda\","
		"\"region\":\"r\",\"session_policy\":\"*\"}},\"destinations\":[{\"host\":\"h\"}]}]"
		"}",
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rules r;

		err[0] = 0;
		assert_int_equal(rules_load_json(&r, bad[i], err, sizeof(err)), -1);
		assert_true(err[0]);
	}
}

static int doc(const char *json, struct cred_doc *d, char *err)
{
	return cred_doc_parse(VAULT_KIND_AWS_SIGV4, (const uint8_t *)json, strlen(json), d, err,
			      160);
}

static void test_documents(void **state)
{
	static const char *const bad[] = {
		"{\"access_key_id\": \"AKIA0000\", \"secret_access_key\": \"s0000000000000000\"}",
		"{\"access_key_id\": \"akia0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\"}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": \"short\"}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\", "
		"\"role_arn\": \"agent\"}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\", "
		"\"role_arn\": \"arn:aws:iam::1:role/a\", \"duration_seconds\": 60}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\", "
		"\"role_arn\": \"arn:aws:iam::1:role/a\", \"sts_url\": \"http://sts.test/\"}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\", "
		"\"sts_url\": \"https://sts.test/\"}",
		"{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
		"\"s0000000000000000\", "
		"\"role_arn\": \"arn:aws:iam::1:role/a\", \"sts_region\": \"Us East\"}",
	};
	struct cred_doc d;
	char err[160];

	(void)state;
	assert_int_equal(doc("{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
			     "\"s0000000000000000\", \"role_arn\": \"arn:aws:iam::1:role/a\"}",
			     &d, err),
			 0);
	assert_string_equal(d.endpoint.host, "sts.amazonaws.com");
	assert_string_equal(d.sts_region, "us-east-1");
	assert_int_equal(d.duration, 3600);
	cred_doc_free(&d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(doc(bad[i], &d, err), -1);
		assert_true(err[0]);
		assert_null(strstr(err, "s0000000000000000"));
	}
}

static void test_sts_answers(void **state)
{
	static const char good[] =
		"<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
		"<AssumeRoleResult><AssumedRoleUser><Arn>a</Arn></AssumedRoleUser><Credentials>"
		"<AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId><SecretAccessKey>tmp/secret0000000"
		"</SecretAccessKey><SessionToken>FwoGZXtoken0000</SessionToken><Expiration>"
		"2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult>"
		"</AssumeRoleResponse>";
	static const char *const hostile[] = {
		/* An entity expanded a billion times; an external one; not XML; no token. */
		"<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaaaaaa\"><!ENTITY b "
		"\"&a;&a;&a;&a;&a;&a;&a;&a;\">]><AssumeRoleResponse>&b;</AssumeRoleResponse>",
		"<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
		"<r><Credentials><SessionToken>&x;</SessionToken></Credentials></r>",
		"{\"Credentials\": {}}",
		"<r><Credentials><AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId></Credentials></r>",
		/* A field twice; credentials twice. */
		"<r><Credentials><AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId><SecretAccessKey>"
		"tmp/secret0000000</SecretAccessKey><SessionToken>FwoGZXtoken0000</SessionToken>"
		"<SessionToken>FwoGZXtoken1111</SessionToken></Credentials></r>",
		"<r><Credentials><AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId><SecretAccessKey>"
		"tmp/secret0000000</SecretAccessKey><SessionToken>FwoGZXtoken0000</SessionToken>"
		"</Credentials><Credentials><AccessKeyId>ASIAEXAMPLE111111111</AccessKeyId>"
		"</Credentials></r>",
		/* Credentials that have expired already. */
		"<r><Credentials><AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId><SecretAccessKey>"
		"tmp/secret0000000</SecretAccessKey><SessionToken>FwoGZXtoken0000</SessionToken>"
		"<Expiration>1970-01-01T00:00:00Z</Expiration></Credentials></r>",
		/* The fields, but not within Credentials. */
		"<r><AccessKeyId>ASIAEXAMPLE000000000</AccessKeyId><SecretAccessKey>tmp/"
		"secret0000000"
		"</SecretAccessKey><SessionToken>FwoGZXtoken0000</SessionToken></r>",
	};
	struct token_reply out = { 0 };
	struct cred_doc d;
	bool refused;
	char err[160], why[200];

	(void)state;
	assert_int_equal(doc("{\"access_key_id\": \"AKIA0000000000000000\", \"secret_access_key\": "
			     "\"s0000000000000000\", \"role_arn\": \"arn:aws:iam::1:role/a\"}",
			     &d, err),
			 0);
	assert_int_equal(
		aws_sts_answer(&d, 200, good, strlen(good), &out, &refused, why, sizeof(why)), 0);
	assert_string_equal(out.access_token,
			    "{\"access_key_id\":\"ASIAEXAMPLE000000000\",\"secret_access_key\":"
			    "\"tmp/secret0000000\",\"session_token\":\"FwoGZXtoken0000\"}");
	assert_int_equal(out.expires_in, 3600); /* 2099 is further than asked: the lifetime asked */
	token_reply_free(&out);
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		memset(&out, 0, sizeof(out));
		assert_int_equal(aws_sts_answer(&d, 200, hostile[i], strlen(hostile[i]), &out,
						&refused, why, sizeof(why)),
				 -1);
		assert_null(out.access_token);
	}
	/* An error: its code, never its message; refused for good unless throttled. */
#define ANSWER(status, x) aws_sts_answer(&d, status, x, strlen(x), &out, &refused, why, sizeof(why))
	assert_int_equal(ANSWER(403, "<ErrorResponse><Error><Code>AccessDenied</Code><Message>"
				     "s0000000000000000</Message></Error></ErrorResponse>"),
			 -1);
	assert_true(refused);
	assert_non_null(strstr(why, "403 (AccessDenied)"));
	assert_null(strstr(why, "s0000000000000000"));
	assert_int_equal(ANSWER(400, "<ErrorResponse><Error><Code>Throttling</Code></Error>"
				     "</ErrorResponse>"),
			 -1);
	assert_false(refused);
	assert_int_equal(ANSWER(403, "<ErrorResponse><Error><Code>a b&lt;c</Code></Error>"
				     "</ErrorResponse>"),
			 -1);
	assert_non_null(strstr(why, "(no code)"));
#undef ANSWER
	cred_doc_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published_example), cmocka_unit_test(test_head_shapes),
		cmocka_unit_test(test_scope_and_payload), cmocka_unit_test(test_s3_paths),
		cmocka_unit_test(test_rules_refused),	  cmocka_unit_test(test_documents),
		cmocka_unit_test(test_sts_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
