/* SPDX-License-Identifier: Apache-2.0 */
/* broker/proxy_limits.h: bounds on what a guest may send in one request's head; anything
 * beyond is answered with 400. Both HTTP versions size their buffers from these (proxy.h,
 * h2_fields.h). */
#ifndef BULKHEAD_BROKER_PROXY_LIMITS_H
#define BULKHEAD_BROKER_PROXY_LIMITS_H

#define PROXY_MAX_HEAD	  16384 /* URL + header names and values of one request */
#define PROXY_MAX_HEADERS 64
#define PROXY_MAX_URL	  8192

#endif
