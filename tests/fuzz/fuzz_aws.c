/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_aws.c: libFuzzer target for what the broker reads of a request an AWS key
 * signs (broker/aws_sigv4.c, aws_s3.c): the guest's Authorization, its x-amz-content-sha256,
 * an S3 request's host, path, query and copy source against a rule's prefixes, and the signer
 * over a head, and STS's answer. The input is cut at NUL bytes into those parts. Checks, beyond ASan and UBSan:
 * a scope read is a region and a service of names; an allowed S3 request's key lies under a
 * listed prefix whenever it is spelt without escapes; a signed head holds exactly one
 * Authorization, the broker's, and none of the guest's date or token. */
#include "broker/aws_s3.h"
#include "broker/aws_sigv4.h"
#include "broker/aws_sts.h"
#include "broker/rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct rules rules;

/* Part K of the input (NUL-separated), or "" when there are fewer. */
static const char *part(const char *t, size_t n, int k)
{
	const char *p = t, *end = t + n;

	while (k-- > 0) {
		p = memchr(p, 0, (size_t)(end - p));
		if (!p)
			return "";
		p++;
	}
	return p < end ? p : "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct aws_key key = { "AKIAFUZZKEY000000000", "fuzz-secret-key-0000", "TOK" };
	char region[AWS_NAME_MAX + 1], service[AWS_NAME_MAX + 1], why[400], *t;
	const char *w, *host, *path, *query, *copy, *head;
	struct secbuf o = { 0 };

	if (!rules.n_secrets) {
		char err[256];

		if (rules_load_json(
			    &rules,
			    "{\"secrets\":[{\"name\":\"A\",\"inject\":{\"aws_sigv4\":"
			    "{\"service\":\"s3\",\"region\":\"us-east-1\"}},\"s3\":"
			    "[\"agent-data/runs/\",\"whole/\"],\"destinations\":[{\"scheme\":"
			    "\"https\",\"host\":"
			    "\"s3.amazonaws.com\"}]}]}",
			    err, sizeof(err)))
			abort();
	}
	if (!(t = malloc(size + 1)))
		return 0;
	memcpy(t, data, size);
	t[size] = 0;
	if (aws_sigv4_scope_of(t, strlen(t), region, service) > 0 &&
	    (!*region || !*service || strchr(region, '/') || strchr(service, '/')))
		abort();
	(void)aws_sigv4_payload_ok(t, strlen(t), &w);

	host = part(t, size, 1);
	path = part(t, size, 2);
	query = part(t, size, 3);
	copy = part(t, size, 4);
	if (*path == '/' && *host &&
	    !aws_s3_allowed(&rules.secrets[0], t, host, path, query, strlen(query),
			    *copy ? copy : NULL, strlen(copy), why, sizeof(why)) &&
	    !strchr(path, '%') && !strncmp(host, "s3.", 3) && strlen(path) > 1 &&
	    strchr(path + 1, '/') && strchr(path + 1, '/')[1]) {
		/* A path-style object request allowed: its bucket and key are listed. */
		if (strncmp(path, "/agent-data/runs/", 17) && strncmp(path, "/whole/", 7))
			abort();
	}

	head = part(t, size, 5);
	if (*head && !aws_sigv4_sign(head, strlen(head), &key, "us-east-1", "s3", AWS_EMPTY_SHA256,
				     1440938160, &o)) {
		char *s = malloc(o.n + 1), *a;

		if (s) {
			memcpy(s, o.b, o.n);
			s[o.n] = 0;
			a = strstr(s, "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIAFUZZKEY");
			if (!a || strstr(a + 2, "\r\nAuthorization:") ||
			    !strstr(s, "\r\nX-Amz-Date: 20150830T123600Z\r\n"))
				abort();
			free(s);
		}
	}
	secbuf_wipe(&o);

	/* STS's answer: taken only as an aws-sigv4 document the broker can read back. */
	w = part(t, size, 6);
	if (*w) {
		static struct cred_doc d;
		struct token_reply r = { 0 };
		struct cred_doc back;
		char err[160];
		bool refused;
		static const char role[] = "{\"access_key_id\": \"AKIA0000000000000000\", "
					   "\"secret_access_key\": \"s0000000000000000\", "
					   "\"role_arn\": \"arn:aws:iam::1:role/a\"}";

		if (!d.role_arn &&
		    cred_doc_parse(VAULT_KIND_AWS_SIGV4, (const uint8_t *)role, strlen(role), &d,
				   err, sizeof(err)))
			abort();
		if (!aws_sts_answer(&d, 200, w, strlen(w), &r, &refused, why, sizeof(why))) {
			if (cred_doc_parse(VAULT_KIND_AWS_SIGV4, (const uint8_t *)r.access_token,
					   strlen(r.access_token), &back, err, sizeof(err)))
				abort();
			cred_doc_free(&back);
		}
		token_reply_free(&r);
	}
	free(t);
	return 0;
}
