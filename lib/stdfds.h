/* SPDX-License-Identifier: Apache-2.0 */
/* lib/stdfds.h: descriptors 0, 1 and 2 made safe before a program opens anything. Started
 * with one of them closed, a program's next open() or eventfd() would take that number, and
 * what it then writes to "stdout" or "stderr" (a guest's console, its own messages) would land
 * in that file or eventfd. */
#ifndef BULKHEAD_LIB_STDFDS_H
#define BULKHEAD_LIB_STDFDS_H

/* Each of 0, 1 and 2 that is closed becomes /dev/null. 0, or -1 when one is closed and
 * /dev/null cannot take its place (an empty root): the caller refuses to run. */
int stdfds_ensure(void);

#endif
