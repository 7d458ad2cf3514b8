/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_answer.c: what the broker makes of an upstream answer's head before relaying
 * it (proxy_response.c): whether it may be handed to a client at all, whether it is a part
 * or compressed gRPC that the scrubber could not see whole, how its messages end, whether
 * it is gRPC's stream. */
#include "broker/proxy_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* http_parser lets through heads no client should be handed (a name with a space, a control
 * byte in a value, a lone CR): what is relayed must be token names, and values and status
 * text of visible characters, spaces and tabs. */
static int text_ok(const char *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((unsigned char)t[i] < 0x20 && t[i] != '\t') || t[i] == 0x7f)
			return 0;
	return 1;
}

int proxy_answer_head_ok(const struct head *h)
{
	size_t i, k;

	if (!text_ok(h->arena, h->url_len))
		return 0;
	for (i = 0; i < h->n; i++) {
		const char *name = h->arena + h->h[i].name_off;

		if (!h->h[i].name_len || !text_ok(proxy_head_val(h, i), h->h[i].val_len))
			return 0;
		for (k = 0; k < h->h[i].name_len; k++)
			if (!isalnum((unsigned char)name[k]) &&
			    !(name[k] && strchr("!#$%&'*+-.^_`|~", name[k])))
				return 0;
	}
	return 1;
}

/* Whether the current request went to a host that receives a credential: one was injected
 * into it, or a secret's destination names its host and port (another path or method of the
 * same host may have stored what it received there). */
int proxy_answer_credential_host(const struct conn *c)
{
	const struct rules *r = c->cfg ? c->cfg->rules : NULL;
	size_t i, j;

	if (c->n_inj_names)
		return 1;
	for (i = 0; r && i < r->n_secrets; i++)
		for (j = 0; j < r->secrets[i].n_dests; j++)
			if (!strcasecmp(r->secrets[i].dests[j].host, c->host) &&
			    (int)r->secrets[i].dests[j].port == c->port)
				return 1;
	return 0;
}

/* gRPC messages compressed (grpc-encoding other than identity, gRPC's own per-message
 * compression, inside the body): the scrubber would read only the compressed bytes. */
int proxy_answer_grpc_compressed(const struct conn *c)
{
	for (size_t i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "grpc-encoding") &&
		    (c->resp.h[i].val_len != 8 ||
		     strncasecmp(proxy_head_val(&c->resp, i), "identity", 8)))
			return 1;
	return 0;
}

/* A part of a representation (206, or a Content-Range on any status): a secret split across
 * two ranges would reach the guest in pieces the scrubber never sees together. */
int proxy_answer_partial(const struct conn *c, unsigned status)
{
	size_t i;

	for (i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "content-range"))
			return 1;
	return status == 206;
}

/* How the body's messages end. Only a body relayed as it arrives is framed (a decoded one
 * goes out whole at its end), and only when no secret holds a byte that ends a message. */
enum stream_framing proxy_answer_framing(const struct conn *c)
{
	size_t i;

	if (c->dec || !scrub_frames_ok(&c->scrub))
		return STREAM_FRAME_NONE;
	for (i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "content-type"))
			return stream_frame_kind(proxy_head_val(&c->resp, i), c->resp.h[i].val_len);
	return STREAM_FRAME_NONE;
}

/* A gRPC answer (application/grpc, +proto, +json, ...): its stream of messages may be silent
 * between them as long as a streamed answer's. */
int proxy_answer_grpc(const struct conn *c)
{
	for (size_t i = 0; i < c->resp.n; i++)
		if (proxy_head_is(&c->resp, i, "content-type")) {
			const char *v = proxy_head_val(&c->resp, i);
			size_t n = c->resp.h[i].val_len;

			return n >= 16 && !strncasecmp(v, "application/grpc", 16) &&
			       (n == 16 || v[16] == '+' || v[16] == ';');
		}
	return 0;
}
