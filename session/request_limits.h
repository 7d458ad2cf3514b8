/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_limits.h: the bounds of a session request's numbers, named once for the
 * table of its fields (request_fields.c) and for what maps onto them without linking it (an
 * OCI bundle's resources, oci/bundle.c). */
#ifndef BULKHEAD_SESSION_REQUEST_LIMITS_H
#define BULKHEAD_SESSION_REQUEST_LIMITS_H

#define REQ_MEM_MIN_MIB	      64
#define REQ_MEM_MAX_MIB	      (64 * 1024)
#define REQ_MEM_DEFAULT_MIB   256
#define REQ_CPUS_MAX	      32
#define REQ_MEM_LIMIT_MAX_MIB (1024 * 1024)
#define REQ_TIMEOUT_MAX_S     (365 * 86400.0)
#define REQ_BOOT_TIMEOUT_MAX_S 86400
#define REQ_DISK_MIN_MIB      16
#define REQ_DISK_MAX_MIB      (1024 * 1024)

#endif
