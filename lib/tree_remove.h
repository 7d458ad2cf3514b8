/* SPDX-License-Identifier: Apache-2.0 */
/* lib/tree_remove.h: removing a directory tree safely (lib/tree_remove.c). */
#ifndef BULKHEAD_LIB_TREE_REMOVE_H
#define BULKHEAD_LIB_TREE_REMOVE_H

#include <stddef.h>

/* Removes DIRFD/NAME and everything below it without following links; refuses to descend
 * into another mount. Nothing there is fine. 0, or -1 with err. */
int tree_remove(int dirfd, const char *name, char *err, size_t errlen);

#endif
