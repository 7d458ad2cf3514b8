/* SPDX-License-Identifier: Apache-2.0 */
/* session/session.c: one session's life — its helpers acquired in order, the guest watched to
 * its end, everything released in reverse — whatever started it (run, start). */
#include "session/session.h"
#include "jail/proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct session *session_new(const struct session_plan *p, int notify_fd)
{
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->plan = p;
	s->notify_fd = notify_fd;
	s->diag[0] = s->diag[1] = -1;
	s->ids = (struct jail_ids)JAIL_IDS_INIT;
	s->vs.ready_lfd = -1;
	s->br.ctl_fd = -1;
	s->bind_lfd = -1;
	s->bind_spawner.sock = -1;
	s->br_unbound.ctl_fd = -1;
	s->vm.console_fd = -1;
	s->link.ready_fd = -1;
	s->template_fd = -1;
	s->pause_fd = -1;
	for (size_t i = 0; i < LAUNCH_FS_MAX; i++)
		s->fs_keep[i] = -1;
	/* Signals that end the session are read from a signalfd by the session loop; block them
	 * before anything starts so none is lost in between. */
	static const int pause_sigs[] = { SIGUSR1, SIGUSR2 }; /* `bulkhead pause`, `resume` */
	s->signal_fd = p->req.forward_signals ? proc_signalfd_all()
					      : proc_signalfd_and(pause_sigs, 2);
	return s;
}

void session_free(struct session *s)
{
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	free(s);
}

int session_run(const struct session_plan *p, int notify_fd)
{
	struct session *s = session_new(p, notify_fd);
	if (!s) {
		fprintf(stderr, "bulkhead: out of memory\n");
		return EXIT_BULKHEAD;
	}
	if (p->req.verbose)
		fprintf(stderr, "bulkhead: engine: %s\n", p->engine.why);
	/* What a helper leaves behind is ours to wait for, so that nothing of the session
	 * outlives our return (a caller may remove the share or the cgroup right after). */
	proc_adopt_orphans();

	int ran = 0, code;
	if (session_start(s, &ran) < 0) {
		fprintf(stderr, "bulkhead: %s\n", s->err);
		code = EXIT_BULKHEAD;
	} else {
		code = session_watch(s);
		if (code == EXIT_BULKHEAD && cgroup_oom_kills(&s->cg))
			fprintf(stderr,
				"bulkhead: the session went over its memory limit (%llu MiB: guest "
				"RAM and overhead; see --mem-limit) and was stopped\n",
				p->mem_limit_bytes >> 20);
	}
	session_stop(s, ran);
	session_free(s);
	return code;
}
