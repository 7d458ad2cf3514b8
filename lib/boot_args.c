/* lib/boot_args.c: hex-encoded NUL-separated string lists for the kernel command line. */
#include "lib/boot_args.h"

#include <stdlib.h>
#include <string.h>

static const char hexdig[] = "0123456789abcdef";

int boot_args_encode(char *out, size_t outlen, char *const strs[], size_t n)
{
	size_t pos = strlen(out);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *s = (const unsigned char *)strs[i];
		size_t slen = strlen(strs[i]) + 1; /* the NUL travels too */
		for (size_t j = 0; j < slen; j++) {
			if (outlen - pos < 3)
				return -1;
			out[pos++] = hexdig[s[j] >> 4];
			out[pos++] = hexdig[s[j] & 15];
		}
	}
	if (pos >= outlen)
		return -1;
	out[pos] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int boot_args_decode(const char *hex, size_t len, char ***strs_out)
{
	*strs_out = NULL;
	if (len == 0 || len % 2)
		return -1;
	size_t blen = len / 2;
	char *block = malloc(blen);
	if (!block)
		return -1;
	size_t count = 0;
	for (size_t i = 0; i < blen; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			goto bad;
		block[i] = (char)(hi << 4 | lo);
		if (block[i] == '\0')
			count++;
	}
	if (block[blen - 1] != '\0' || count > BOOT_ARGS_MAX_STRINGS)
		goto bad;
	/* One allocation for the array; slot count+1 keeps the block for freeing. */
	char **strs = calloc(count + 2, sizeof(*strs));
	if (!strs)
		goto bad;
	char *s = block;
	for (size_t i = 0; i < count; i++) {
		strs[i] = s;
		s += strlen(s) + 1;
	}
	strs[count + 1] = block;
	*strs_out = strs;
	return (int)count;
bad:
	free(block);
	return -1;
}

void boot_args_free(char **strs)
{
	if (!strs)
		return;
	size_t n = 0;
	while (strs[n])
		n++;
	free(strs[n + 1]);
	free(strs);
}
