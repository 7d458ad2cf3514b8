/* SPDX-License-Identifier: Apache-2.0 */
/* lib/sha256_hex.c: see lib/sha256_hex.h. */
#include "lib/sha256_hex.h"

#include <openssl/evp.h>
#include <stdio.h>

int sha256_hex(const void *p, size_t len, char *hex, size_t digits)
{
	unsigned char md[32];
	unsigned mdlen = 0;
	if (digits > 64 || digits % 2 || !EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32)
		return -1;
	for (size_t i = 0; i < digits / 2; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[digits] = '\0';
	return 0;
}
