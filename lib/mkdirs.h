/* SPDX-License-Identifier: Apache-2.0 */
/* lib/mkdirs.h: `mkdir -p`, written once (the broker's audit directory, bulkhead-oci's --root). */
#ifndef BULKHEAD_LIB_MKDIRS_H
#define BULKHEAD_LIB_MKDIRS_H

#include <sys/types.h>

/* Makes PATH and its missing parents, each with MODE when made here (an existing one keeps
 * its own). 0, or -errno (-ENAMETOOLONG when PATH does not fit PATH_MAX). */
int mkdirs(const char *path, mode_t mode);

#endif
