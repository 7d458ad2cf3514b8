/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_target.c: where a guest's request goes — the URL's scheme, host, port and path,
 * the CONNECT authority and the Host header — with every host name in its canonical spelling
 * (hostname.h) before anything compares it. */
#include "broker/proxy_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/hostname.h"
#include "lib/agent_proto.h"

void proxy_target_log(struct conn *c, const char *scheme, int port, const char *path)
{
	const char *open = strchr(c->host, ':') ? "[" : "", *close = *open ? "]" : "";
	size_t i;

	/* A longer target is cut in the log and the audit record, never in the request. */
	if (snprintf(c->log_path, sizeof(c->log_path), "%s://%s%s%s%s%.0d%s", scheme, open, c->host,
		     close, port >= 0 ? ":" : "", port >= 0 ? port : 0,
		     path) >= (int)sizeof(c->log_path))
		strcpy(c->log_path + sizeof(c->log_path) - 4, "...");
	for (i = 0; c->log_path[i]; i++)
		if (!isprint((unsigned char)c->log_path[i]) || c->log_path[i] == ' ')
			c->log_path[i] = '?';
}

/* The URL's host into c->host, canonical; -1 with the error set. */
static int take_host(struct conn *c, const char *h, size_t len)
{
	const char *why;

	if (hostname_canon(h, len, c->host, &why)) {
		proxy_fail(c, 400, "bad host in the request: %s", why);
		return -1;
	}
	return 0;
}

/* Where the request goes: scheme, host (into c->host), port (-1: the scheme's default),
 * path and query. Absolute form to the proxy, origin form inside a tunnel. Returns 0, 1 for
 * the CA route, or -1 with the error set. */
int proxy_target(struct conn *c, const char *url, char scheme[8], int *port,
		 char path[PROXY_MAX_URL + 1], const char **query, size_t *qlen)
{
	struct http_parser_url u;
	size_t i;

	http_parser_url_init(&u);
	if (http_parser_parse_url(url, c->req.url_len, 0, &u)) {
		proxy_fail(c, 400, "malformed request target");
		return -1;
	}
	if (u.field_set & (1 << UF_USERINFO)) {
		proxy_fail(c, 400, "credentials in the URL are not accepted");
		return -1;
	}
	if (u.field_set & (1 << UF_PATH)) {
		memcpy(path, url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
		path[u.field_data[UF_PATH].len] = 0;
	} else {
		strcpy(path, "/");
	}
	if (u.field_set & (1 << UF_QUERY)) {
		*query = url + u.field_data[UF_QUERY].off;
		*qlen = u.field_data[UF_QUERY].len;
	}
	/* The path and query as sent, for the audit record (a fragment never gets here). */
	c->target_off = u.field_set & (1 << UF_PATH)	? u.field_data[UF_PATH].off
			: u.field_set & (1 << UF_QUERY) ? (size_t)u.field_data[UF_QUERY].off - 1
							: c->req.url_len;
	c->have_target = 1;
	if (c->in_tunnel) {
		if (u.field_set & ((1 << UF_SCHEMA) | (1 << UF_HOST))) {
			proxy_fail(c, 400, "requests in a tunnel use origin form (/path)");
			return -1;
		}
		strcpy(scheme, "https");
		snprintf(c->host, sizeof(c->host), "%s", c->tun_host);
		*port = c->tun_port == 443 ? -1 : c->tun_port;
		return 0;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) && !(u.field_set & (1 << UF_HOST)) &&
	    !strcmp(path, BROKER_CA_PATH) && !*qlen && !c->has_body &&
	    (!strcmp(c->method, "GET") || c->is_head)) {
		snprintf(c->log_path, sizeof(c->log_path), "%s", BROKER_CA_PATH);
		snprintf(c->rule, sizeof(c->rule), "session-ca");
		c->serve_ca = 1;
		return 1;
	}
	if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST))) {
		proxy_fail(c, 400, "the proxy needs an absolute URL (http://host/path)");
		return -1;
	}
	if (u.field_data[UF_SCHEMA].len > 5) {
		proxy_fail(c, 400, "only http:// and https:// URLs are proxied");
		return -1;
	}
	for (i = 0; i < u.field_data[UF_SCHEMA].len; i++)
		scheme[i] = (char)tolower((unsigned char)url[u.field_data[UF_SCHEMA].off + i]);
	scheme[i] = 0;
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		proxy_fail(c, 400, "only http:// and https:// URLs are proxied");
		return -1;
	}
	if (take_host(c, url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len))
		return -1;
	*port = -1;
	if (u.field_set & (1 << UF_PORT)) {
		*port = u.port;
		if (!*port) {
			proxy_fail(c, 400, "port 0 in the URL");
			return -1;
		}
	}
	return 0;
}

/* CONNECT host:port: the host into c->host (canonical), the port into c->tun_port. */
int proxy_target_connect(struct conn *c, const char *url, size_t len)
{
	struct http_parser_url u;

	http_parser_url_init(&u);
	if (http_parser_parse_url(url, len, 1, &u) || !u.port) {
		proxy_fail(c, 400, "CONNECT needs host:port");
		return -1;
	}
	if (take_host(c, url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len))
		return -1;
	c->tun_port = u.port;
	return 0;
}

/* 1 when the Host header value HV names the canonical HOST and PORT (the port may be left
 * out). The name in it is canonicalised the same way as the URL's. */
int proxy_target_host_ok(const char *hv, const char *host, int port)
{
	char canon[HOSTNAME_MAX + 1];
	const char *end, *colon, *why;
	char *stop = NULL;
	long hp = -1;

	if (*hv == '[') { /* an IPv6 literal */
		end = strchr(hv, ']');
		colon = end && end[1] == ':' ? end + 1 : NULL;
		if (!end || (end[1] && !colon))
			return 0;
		end++;
	} else {
		colon = strchr(hv, ':');
		end = colon ? colon : hv + strlen(hv);
	}
	if (colon) {
		hp = strtol(colon + 1, &stop, 10);
		if (!isdigit((unsigned char)colon[1]) || *stop || hp < 1 || hp > 65535)
			return 0;
	}
	if (hostname_canon(hv, (size_t)(end - hv), canon, &why))
		return 0;
	return !strcmp(canon, host) && (hp < 0 || hp == port);
}
