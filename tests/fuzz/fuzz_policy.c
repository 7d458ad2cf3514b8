/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_policy.c: libFuzzer target for the global policy loader (broker/policy.c)
 * and the host canonicalisation it relies on (broker/hostname.c). The input is a policy file.
 * Checks, beyond ASan and UBSan: a load either succeeds or says why; a loaded policy holds
 * only canonical host patterns, and queries on it run; hostname_canon on the raw input is
 * idempotent and its output holds only the characters a canonical name may. */
#include "broker/hostname.h"
#include "broker/policy.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_canon(const uint8_t *data, size_t size)
{
	char a[HOSTNAME_MAX + 1], b[HOSTNAME_MAX + 1];
	const char *why;
	size_t i;

	if (size > HOSTNAME_MAX + 2)
		size = HOSTNAME_MAX + 2;
	if (hostname_canon((const char *)data, size, a, &why)) {
		if (!why)
			abort(); /* a refusal always says why */
		return;
	}
	for (i = 0; a[i]; i++)
		if (!((a[i] >= 'a' && a[i] <= 'z') || (a[i] >= '0' && a[i] <= '9') ||
		      strchr("-_.:", a[i])))
			abort();
	if (!i || hostname_canon(a, strlen(a), b, &why) || strcmp(a, b))
		abort(); /* canonical is a fixed point */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = { "a.corp.example", "denied.example", "127.0.0.1", "::1",
					     "x" };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000001) };
	char *text = malloc(size + 1), err[512] = "", canon[HOSTNAME_MAX + 3], buf[64];
	struct policy p;
	const char *why;
	size_t i;

	check_canon(data, size);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (policy_load_json(&p, text, err, sizeof(err))) {
		if (!err[0])
			abort();
		free(text);
		return 0;
	}
	for (i = 0; i < p.n_deny_hosts; i++)
		if (hostname_canon_pattern(p.deny_hosts[i], canon, &why) ||
		    strcmp(canon, p.deny_hosts[i]))
			abort(); /* stored as compared: canonical */
	for (i = 0; i < p.n_approvals; i++)
		if (hostname_canon_pattern(p.approvals[i].host, canon, &why) ||
		    strcmp(canon, p.approvals[i].host))
			abort();
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		(void)policy_host_denied(&p, hosts[i]);
	(void)policy_addr_denied(&p, (const struct sockaddr *)&a4, buf, sizeof(buf));
	(void)policy_secret_denied(&p, "prod_db");
	policy_free(&p);
	free(text);
	return 0;
}
