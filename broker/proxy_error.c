/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_error.c: a connection's refusal. Whichever part of the proxy finds a request
 * bad records it here, once (the first reason wins: later ones are consequences); proxy.c
 * sends it as the one answer the guest gets, before the connection closes. */
#include "broker/proxy_conn.h"

#include <stdarg.h>
#include <stdio.h>

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
