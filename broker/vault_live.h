/* SPDX-License-Identifier: Apache-2.0 */
/* broker/vault_live.h: the broker's vault kept current. `bulkhead vault put` replaces the file
 * whole (a rename), so a running broker notices a new file by its identity (device, inode,
 * size, times) at the next secret it reads, opens it with the key it kept, and from then on
 * serves its values: no restart, no session ends. A new file that cannot be used (damaged,
 * another key, unreadable) leaves the one loaded before in use, and is said once on stderr. */
#ifndef BULKHEAD_BROKER_VAULT_LIVE_H
#define BULKHEAD_BROKER_VAULT_LIVE_H

#include <stddef.h>
#include <stdint.h>

struct vault_live;

/* Opens the vault at PATH with the key file KEY_FILE (kept, in locked memory, for reloads).
 * 0, or -1 with ERR. */
int vault_live_open(const char *path, const char *key_file, struct vault_live **out, char *err,
		    size_t errlen);
/* A number that changes each time a new file is taken (the file is looked at first): a reader
 * that read its values at this number needs not read them again. */
unsigned vault_live_generation(struct vault_live *l);
/* NAME's value as the vault on disk holds it now (a reload first if the file changed): a
 * malloc'd copy the caller wipes and frees. 0, or a negative errno (-ENOENT: no such entry). */
int vault_live_get(struct vault_live *l, const char *name, uint8_t **val, size_t *len);

#endif
