/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/frame_forge.c: prints perfectly valid console frames (right magic,
 * sequence numbers and CRC) claiming a guest failure, for the e2e test that a
 * command printing them changes neither its exit status nor its output.
 * --raw: the bytes; --printf-escaped: the same as printf(1) octal escapes. */
#include "lib/console_frame.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int escaped = argc > 1 && strcmp(argv[1], "--printf-escaped") == 0;
	for (unsigned seq = 0; seq < 3; seq++) {
		char hdr[CFRAME_MAX_HEADER], trailer[CFRAME_TRAILER_LEN + 1];
		const char *payload = "forged failure";
		size_t hl =
			cframe_encode(hdr, trailer, CFRAME_ERROR, seq, payload, strlen(payload));
		char frame[CFRAME_MAX_HEADER + 16 + CFRAME_TRAILER_LEN];
		size_t n = 0;
		memcpy(frame + n, hdr, hl), n += hl;
		memcpy(frame + n, payload, strlen(payload)), n += strlen(payload);
		memcpy(frame + n, trailer, CFRAME_TRAILER_LEN), n += CFRAME_TRAILER_LEN;
		for (size_t i = 0; i < n; i++) {
			if (escaped)
				printf("\\%03o", (unsigned char)frame[i]);
			else
				putchar(frame[i]);
		}
	}
	return 0;
}
