/* SPDX-License-Identifier: Apache-2.0 */
/* broker/hostname.c: host names and IP literals in their one canonical spelling (see
 * hostname.h). */
#include "broker/hostname.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* Whether the label L (n bytes, lower case) reads as a number: decimal, or 0x and hex. */
static int numeric_label(const char *l, size_t n)
{
	size_t i = 0;

	if (n >= 2 && l[0] == '0' && l[1] == 'x') {
		for (i = 2; i < n && is_hex(l[i]); i++)
			;
		return i == n;
	}
	for (; i < n && is_digit(l[i]); i++)
		;
	return n && i == n;
}

/* A dotted quad exactly as inet_ntop writes it. */
static int canonical_ipv4(const char *s)
{
	int parts = 0;

	while (*s) {
		size_t n = 0;
		unsigned v = 0;

		while (is_digit(s[n]) && n < 4)
			v = v * 10 + (unsigned)(s[n++] - '0');
		if (!n || n > 3 || v > 255 || (n > 1 && s[0] == '0'))
			return 0;
		s += n;
		parts++;
		if (*s == '.' && parts < 4 && s[1])
			s++;
		else if (*s)
			return 0;
	}
	return parts == 4;
}

static int canon_ipv6(const char *s, char *out, const char **why)
{
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct in6_addr a;

	if (strchr(s, '%')) {
		*why = "an IPv6 zone id (%) is not accepted in a host";
		return -1;
	}
	if (inet_pton(AF_INET6, s, &a) != 1) {
		*why = "not a valid IPv6 address";
		return -1;
	}
	if (IN6_IS_ADDR_V4MAPPED(&a) || IN6_IS_ADDR_V4COMPAT(&a) || !memcmp(a.s6_addr, nat64, 12)) {
		*why = "an IPv6 address that carries an IPv4 address: write the IPv4 address";
		return -1;
	}
	if (!inet_ntop(AF_INET6, &a, out, HOSTNAME_MAX + 1)) {
		*why = "not a valid IPv6 address";
		return -1;
	}
	return 0;
}

int hostname_canon(const char *in, size_t len, char out[HOSTNAME_MAX + 1], const char **why)
{
	char buf[HOSTNAME_MAX + 2];
	size_t i, label = 0, last = 0;

	*why = NULL;
	if (len && in[0] == '[') { /* a URL's IPv6 literal */
		if (len < 3 || in[len - 1] != ']' || len - 2 > HOSTNAME_MAX) {
			*why = "a bracketed host must be an IPv6 address";
			return -1;
		}
		memcpy(buf, in + 1, len - 2);
		buf[len - 2] = '\0';
		return canon_ipv6(buf, out, why);
	}
	if (len && in[len - 1] == '.')
		len--; /* the root label: "example.com." is "example.com" */
	if (!len) {
		*why = "empty host name";
		return -1;
	}
	if (len > HOSTNAME_MAX) {
		*why = "host name longer than 253 bytes";
		return -1;
	}
	if (memchr(in, ':', len)) {
		memcpy(buf, in, len);
		buf[len] = '\0';
		return canon_ipv6(buf, out, why);
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x80) {
			*why = "non-ASCII host name: write it in its ASCII (xn--) form";
			return -1;
		}
		if (c == '.') {
			if (i == label) {
				*why = "empty label in host name (leading dot or two dots)";
				return -1;
			}
			label = i + 1;
			out[i] = '.';
			continue;
		}
		if (!(is_digit((char)c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '-' || c == '_')) {
			*why = "host names hold only letters, digits, '-', '_' and dots";
			return -1;
		}
		if (i - label >= 63) {
			*why = "host name label longer than 63 bytes";
			return -1;
		}
		out[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	if (label == len) {
		*why = "empty label in host name (two trailing dots)";
		return -1;
	}
	out[len] = '\0';
	last = label;
	if (numeric_label(out + last, len - last) && !canonical_ipv4(out)) {
		*why = "an IPv4 address must be written as four decimal numbers a.b.c.d (no "
		       "octal, hex, leading zeros or short forms)";
		return -1;
	}
	return 0;
}

int hostname_canon_pattern(const char *in, char out[HOSTNAME_MAX + 3], const char **why)
{
	if (!strncmp(in, "*.", 2)) {
		memcpy(out, "*.", 2);
		if (hostname_canon(in + 2, strlen(in + 2), out + 2, why))
			return -1;
		if (hostname_is_ip(out + 2)) {
			*why = "a *. pattern needs a DNS name after it, not an address";
			return -1;
		}
		return 0;
	}
	return hostname_canon(in, strlen(in), out, why);
}

int hostname_is_ip(const char *h)
{
	unsigned char a[16];

	return inet_pton(AF_INET, h, a) == 1 || inet_pton(AF_INET6, h, a) == 1;
}
