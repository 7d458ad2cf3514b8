/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_mem.c: locked memory for plaintext secrets. Keys, passphrases and vault
 * contents live only here: pages kept out of swap (best effort), core dumps and forked
 * children, and wiped before they are unmapped. */
#include "broker/vault_internal.h"

#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return len ? (len + pg - 1) / pg * pg : pg;
}

unsigned char *vault_secret_alloc(size_t len)
{
	size_t sz = page_round(len);
	void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Best effort: mlock can fail under a low RLIMIT_MEMLOCK; the pages are still kept out
	 * of core dumps and children, and wiped on release. */
	(void)mlock(p, sz);
	(void)madvise(p, sz, MADV_DONTDUMP);
	(void)madvise(p, sz, MADV_WIPEONFORK);
	return p;
}

void vault_secret_free(unsigned char *buf, size_t len)
{
	if (!buf)
		return;
	size_t sz = page_round(len);
	OPENSSL_cleanse(buf, sz);
	munlock(buf, sz);
	munmap(buf, sz);
}
