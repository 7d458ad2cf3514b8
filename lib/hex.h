/* SPDX-License-Identifier: Apache-2.0 */
/* lib/hex.h: one hex digit's value, for every parser that reads %XX, chunk sizes or escapes. */
#ifndef BULKHEAD_LIB_HEX_H
#define BULKHEAD_LIB_HEX_H

/* C's value (0-15) as a hex digit in either case, or -1. */
static inline int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
