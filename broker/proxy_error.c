/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_error.c: a connection's refusal. Whichever part of the proxy finds a request
 * bad records it here, once (the first reason wins: later ones are consequences); proxy.c
 * sends it as the one answer the guest gets, before the connection closes. The connection
 * loop's own refusals take the same form (proxy_error_text). A request an AWS key signs is
 * refused as AWS would, so that the SDK shows the reason (proxy_error_aws_text). */
#include "broker/proxy_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *status_text(int status)
{
	static const struct {
		int code;
		const char *text;
	} texts[] = { { 400, "Bad Request" },	    { 403, "Forbidden" },
		      { 404, "Not Found" },	    { 408, "Request Timeout" },
		      { 413, "Content Too Large" }, { 501, "Not Implemented" },
		      { 502, "Bad Gateway" },	    { 503, "Service Unavailable" },
		      { 504, "Gateway Timeout" } };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].code == status)
			return texts[i].text;
	return "Error";
}

int proxy_error_text(char *buf, size_t len, int status, const char *why)
{
	int n = snprintf(buf, len,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n%s\r\nbulkhead: %s\n",
			 status, status_text(status), strlen(why) + 11,
			 status == 503 ? "Retry-After: 1\r\n" : "", why);
	return n > 0 && (size_t)n < len ? n : -1;
}

/* AWS's name for an error of STATUS. */
static const char *aws_code(int status)
{
	switch (status) {
	case 403:
		return "AccessDenied";
	case 413:
		return "EntityTooLarge";
	case 503:
		return "ServiceUnavailable";
	default:
		return status >= 500 ? "InternalError" : "InvalidRequest";
	}
}

int proxy_error_aws_text(char *buf, size_t len, int status, const char *why, int xml)
{
	char body[1600], msg[1300], *j = NULL;
	size_t o = 0;
	int n;

	if (xml) { /* S3's <Error>, the message escaped */
		for (const char *p = why; *p && o + 7 < sizeof(msg); p++) {
			const char *e = *p == '&'   ? "&amp;"
					: *p == '<' ? "&lt;"
					: *p == '>' ? "&gt;"
					: *p == '"' ? "&quot;"
						    : NULL;

			if (e)
				o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s", e);
			else
				msg[o++] = *p;
		}
		msg[o] = 0;
		n = snprintf(body, sizeof(body),
			     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
			     "<Message>bulkhead: %s</Message></Error>\n",
			     aws_code(status), msg);
	} else { /* the JSON protocols' {"__type", "message"} */
		json_t *doc;

		snprintf(msg, sizeof(msg), "bulkhead: %s", why);
		doc = json_pack("{s:s, s:s}", "__type", aws_code(status), "message", msg);
		j = doc ? json_dumps(doc, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(doc);
		n = snprintf(body, sizeof(body), "%s\n", j ? j : "{}");
		free(j);
	}
	if (n < 0 || (size_t)n >= sizeof(body))
		return proxy_error_text(buf, len, status, why);
	n = snprintf(buf, len,
		     "HTTP/1.1 %d %s\r\nContent-Type: application/%s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n%s",
		     status, status_text(status), xml ? "xml" : "json", strlen(body),
		     status == 503 ? "Retry-After: 1\r\n" : "", body);
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
