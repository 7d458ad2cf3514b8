/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_error.c: a connection's refusal. Whichever part of the proxy finds a request
 * bad records it here, once (the first reason wins: later ones are consequences); proxy.c
 * sends it as the one answer the guest gets, before the connection closes. The connection
 * loop's own refusals take the same form (proxy_error_text). */
#include "broker/proxy_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int proxy_error_text(char *buf, size_t len, int status, const char *why)
{
	static const struct {
		int code;
		const char *text;
	} texts[] = { { 400, "Bad Request" },	    { 403, "Forbidden" },
		      { 404, "Not Found" },	    { 408, "Request Timeout" },
		      { 413, "Content Too Large" }, { 501, "Not Implemented" },
		      { 502, "Bad Gateway" },	    { 503, "Service Unavailable" },
		      { 504, "Gateway Timeout" } };
	const char *text = "Error";
	int n;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].code == status)
			text = texts[i].text;
	n = snprintf(buf, len,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\nbulkhead: %s\n",
		     status, text, strlen(why) + 11, status == 503 ? "Retry-After: 1\r\n" : "",
		     why);
	return n > 0 && (size_t)n < len ? n : -1;
}

void proxy_fail(struct conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	if (c->err_status)
		return;
	c->err_status = status;
	va_start(ap, fmt);
	vsnprintf(c->err_msg, sizeof(c->err_msg), fmt, ap);
	va_end(ap);
}
