/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fuzz/fuzz_console_frame.c: libFuzzer target for the console frame parser,
 * the host's first reader of guest-controlled bytes. The input is fed in pieces
 * whose sizes come from the input itself, to exercise every state boundary. */
#include "lib/console_frame.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t seen;

static void on_noise(void *ctx, const uint8_t *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	seen += len;
}

static int on_frame(void *ctx, int type, const uint8_t *payload, size_t len)
{
	(void)ctx;
	(void)type;
	(void)payload;
	assert(len <= CFRAME_MAX_PAYLOAD);
	assert(type == CFRAME_ERROR);
	seen += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cframe_parser p;
	struct cframe_sink sink = { .noise = on_noise, .frame = on_frame, .ctx = NULL };
	cframe_parser_init(&p, &sink);
	if (size == 0)
		return 0;
	size_t step = (size_t)data[0] % 17 + 1;
	for (size_t i = 1; i < size; i += step) {
		size_t n = size - i < step ? size - i : step;
		if (cframe_feed(&p, data + i, n) < 0)
			break;
	}
	return 0;
}
