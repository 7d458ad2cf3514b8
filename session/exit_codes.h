/* SPDX-License-Identifier: Apache-2.0 */
/* session/exit_codes.h: the exit codes of bulkhead's commands besides a guest command's own (the
 * README's "Exit codes" table: 0-255 the command's, 128+N its signal N). */
#ifndef BULKHEAD_SESSION_EXIT_CODES_H
#define BULKHEAD_SESSION_EXIT_CODES_H

#define EXIT_TIMEOUT  124 /* --timeout, the scope's expiry or the policy's lifetime ended it */
#define EXIT_BULKHEAD 125 /* bulkhead itself failed; one line on stderr says why */

#endif
