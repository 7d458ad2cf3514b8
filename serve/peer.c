/* SPDX-License-Identifier: Apache-2.0 */
/* serve/peer.c: who is asking. Root and the daemon's own uid are the host's administrators
 * and may do anything the daemon may; a uid let in with --allow-uid is a tenant: it sees and
 * drives only the sessions it created, and names no host path (serve/sessions.c). */
#include "serve/serve.h"

#include <unistd.h>

bool serve_peer_admin(const struct serve_peer *p)
{
	return p->uid == 0 || p->uid == geteuid();
}

bool serve_peer_owns(const struct serve_peer *p, const struct serve_session *s)
{
	return serve_peer_admin(p) || s->owner_uid == p->uid;
}
