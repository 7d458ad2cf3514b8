/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_live.h: the broker's vault kept current. `bulkhead vault put` replaces the file
 * whole (a rename), so a running broker notices a new file by its identity (device, inode,
 * size, times) at the next secret it reads, opens it with the key it kept, and from then on
 * serves its values: no restart, no session ends. A new file that cannot be used (damaged,
 * unreadable, another key than the key file holds) leaves the one loaded before in use, and is
 * said once on stderr. The key file is read again when the kept key fails: a key moved into its
 * place after `bulkhead vault rotate-key` is taken with the file. The values a new file replaced
 * or removed are kept (the last VAULT_LIVE_RETIRED_MAX), so that echoes of them are still
 * scrubbed from every connection's answers; an obtained token until five minutes after it
 * expires (at most VAULT_LIVE_RETIRED_BYTES of them a name). */
#ifndef BULKHEAD_BROKER_VAULT_LIVE_H
#define BULKHEAD_BROKER_VAULT_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "broker/vault.h"

#define VAULT_LIVE_RETIRED_MAX	 64
#define VAULT_LIVE_RETIRED_BYTES (16 * 1024) /* one name's retired tokens, all together */

struct vault_live;

/* Opens the vault at PATH with the key file KEY_FILE (kept, in locked memory, for reloads).
 * 0, or -1 with ERR. */
int vault_live_open(const char *path, const char *key_file, struct vault_live **out, char *err,
		    size_t errlen);
/* Closes L and wipes what it kept (the broker keeps its own for its life). */
void vault_live_close(struct vault_live *l);
/* A number that changes each time a new file is taken (the file is looked at first): a reader
 * that read its values at this number needs not read them again. */
unsigned vault_live_generation(struct vault_live *l);
/* The same number without looking at the file (no lock, no system call): a value another
 * reader took has changed it already. */
unsigned vault_live_current(struct vault_live *l);
/* The first value NAME held before (replaced or removed) whose serial is over AFTER, oldest
 * first: a malloc'd copy and its serial. 0, or -ENOENT when there is none. */
int vault_live_retired(struct vault_live *l, const char *name, unsigned after, unsigned *serial,
		       uint8_t **val, size_t *len);
/* NAME's value as the vault on disk holds it now (a reload first if the file changed): a
 * malloc'd copy the caller wipes and frees. 0, or a negative errno (-ENOENT: no such entry). */
int vault_live_get(struct vault_live *l, const char *name, uint8_t **val, size_t *len);
/* The same with the entry's kind (KIND may be NULL). */
int vault_live_get_kind(struct vault_live *l, const char *name, enum vault_kind *kind,
			uint8_t **val, size_t *len);
/* NAME's kind in the vault loaded (no look at the file), or -ENOENT. */
int vault_live_kind(struct vault_live *l, const char *name);
/* A value obtained for NAME that is no longer used (an access token replaced) or that only an
 * endpoint may see: kept among the retired values until UNTIL_MS (monotonic; INT64_MAX: for
 * good, a token's expiry: while it could still be used), and the generation changes so that
 * connections scrub it. Retiring a value kept already sets its time and changes nothing else. */
void vault_live_retire(struct vault_live *l, const char *name, const uint8_t *val, size_t len,
		       int64_t until_ms);
/* The generation changes: what a secret reads as may have (a new access token). */
void vault_live_bump(struct vault_live *l);
/* Writes VAL as NAME (of KIND) into the file, when the file still holds WAS for it (a rotated
 * refresh token written back; never over a change made meanwhile). 0, or a negative errno
 * with ERR (-ESTALE: the entry changed). */
int vault_live_update(struct vault_live *l, const char *name, enum vault_kind kind,
		      const uint8_t *was, size_t was_len, const uint8_t *val, size_t len, char *err,
		      size_t errlen);

#endif
