/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/echo_reflect.h: the echo upstream's /reflect answers (echo_reflect.c). */
#ifndef BULKHEAD_TESTS_ECHO_REFLECT_H
#define BULKHEAD_TESTS_ECHO_REFLECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*reflect_write_fn)(void *arg, const void *b, size_t n);

/* IN in encoding ENC (raw, b64, b64url, mime, pem, b64json, b64jsonwrap, hex, HEX, pct, pctl,
 * pctall, form, jsonu, html, bsx, or a language's escapes: bspunct, octal, ubrace, pctu, css,
 * css6, html0, htmlx0, htmlnosemi, html5, bigu, perlx, perlx0, perlo, perlnu, sh0, javau,
 * pyname, pynamelc, each with "all" appended for every character escaped); a malloc'd,
 * NUL-terminated *OUT. -1: unknown ENC. */
int reflect_encode(const char *enc, const uint8_t *in, size_t n, char **out, size_t *out_n);

/* The whole response to a /reflect request whose target is PATH (query: enc=, ce=gzip|deflate|
 * br|stacked|bomb, mib= for the bomb, te= a Transfer-Encoding, or eof / eof-abrupt for a body
 * ended by closing the connection (with or without TLS close_notify), range=206 for a 206
 * answer or range=1 for a Content-Range on a 200, pause= milliseconds between the part ending
 * with the value and the rest, pad= bytes of filler before the value) and whose X-Reflect
 * value is PAYLOAD. The encoded value goes to LOG as "reflect: VALUE". Returns 0, -1 on a
 * write error, or REFLECT_CLOSE / REFLECT_CLOSE_ABRUPT: the caller must close the connection
 * now (abrupt: without TLS close_notify, as many servers do). */
#define REFLECT_CLOSE	     1
#define REFLECT_CLOSE_ABRUPT 2
int reflect_answer(reflect_write_fn w, void *arg, const char *path, const uint8_t *payload,
		   size_t n, FILE *log);

#endif
