/* SPDX-License-Identifier: Apache-2.0 */
/* session/session_watch.c: the session loop — the guest's console, our signals, the session's
 * deadlines, the helpers' ends and the exec agent's link — and the exit code it ends with.
 * Every event is served without blocking, so a deadline holds whatever the guest does. */
#include "session/out.h"
#include "session/session.h"
#include "session/session_console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { P_CONSOLE, P_DIAG, P_SIGNAL, P_TIMER, P_BIND, P_WATCHED };
#define WATCH_POLLFDS (P_WATCHED + SESSION_MAX_WATCHED + AGENT_LINK_POLLFDS)

struct watch {
	struct session *s;
	const struct session_plan *p;
	struct session_console con;
	int timer_fd;
	bool console_open, diag_open;
	bool resuming; /* resumed: "running" once the guest calls home */
	/* how it ended */
	bool timed_out, reaped;
	int stop_sig, agent_rc, interrupts, wstatus;
	const char *dead_helper;
	uint8_t buf[65536];
};

static int arm_timeout(double seconds)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (fd < 0)
		return -1;
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)seconds;
	its.it_value.tv_nsec = (long)((seconds - (double)its.it_value.tv_sec) * 1e9);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Helpers see the engine close their sockets a moment before it exits: give it half a
 * second to finish exiting. True (and reaped) if it did. */
static bool vm_exits_soon(struct watch *w)
{
	for (int i = 0; i < 50; i++) {
		if (waitpid(w->s->vm.pid, &w->wstatus, WNOHANG) == w->s->vm.pid)
			return true;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Reads what is left on the console of an engine that has exited. */
static void drain_console(struct watch *w)
{
	ssize_t n;
	while ((n = read(w->s->vm.console_fd, w->buf, sizeof(w->buf))) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0 && console_feed(&w->con, w->buf, (size_t)n) < 0)
			break;
}

static int fill_pollfds(struct watch *w, struct pollfd *pfd)
{
	struct session *s = w->s;
	pfd[P_CONSOLE] = (struct pollfd){ .fd = s->vm.console_fd, .events = POLLIN };
	pfd[P_DIAG] = (struct pollfd){ .fd = w->diag_open ? s->diag[0] : -1, .events = POLLIN };
	pfd[P_SIGNAL] = (struct pollfd){ .fd = s->signal_fd, .events = POLLIN };
	pfd[P_TIMER] = (struct pollfd){ .fd = w->timer_fd, .events = POLLIN };
	pfd[P_BIND] = (struct pollfd){ .fd = s->bind_lfd, .events = POLLIN };
	for (unsigned i = 0; i < s->nwatched; i++)
		pfd[P_WATCHED + i] = (struct pollfd){ .fd = s->watched[i].fd, .events = POLLIN };
	return P_WATCHED + (int)s->nwatched;
}

/* 1 when the loop is over. */
static int on_console(struct watch *w)
{
	ssize_t n = read(w->s->vm.console_fd, w->buf, sizeof(w->buf));
	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0) {
		w->console_open = false; /* the engine closed the console: it is exiting */
		return 1;
	}
	if (console_feed(&w->con, w->buf, (size_t)n) < 0)
		return 1;
	return w->con.guest_error[0] != '\0'; /* init could not start; it powers off */
}

/* `bulkhead pause` (pause) or `resume`: done, and the answer in the run directory's "state"
 * ("paused", "running" once the resumed guest called home, or "error: WHY"). 1 when the loop
 * is over (the VMM ended otherwise while saving). */
static int on_pause(struct watch *w, bool pause)
{
	struct session *s = w->s;
	char why[sizeof(s->err)], state[sizeof(s->err) + 64];
	int rc = 1; /* not tried */
	if (!session_pausable(s, why, sizeof(why)))
		;
	else if (pause && (rc = session_pause(s, &w->wstatus)) == -2) {
		w->reaped = true;
		drain_console(w);
		return 1;
	} else if (pause && rc == 0) {
		drain_console(w);
		close(s->vm.console_fd);
		s->vm.console_fd = -1;
		rundir_put(&s->rd, "state", "paused\n");
		return 0;
	} else if (!pause && (rc = session_resume(s)) == 0) {
		w->resuming = true;
		w->diag_open = true;
		return 0;
	}
	if (rc != 1)
		snprintf(why, sizeof(why), "%s", s->err);
	snprintf(state, sizeof(state), "error: cannot %s: %s\n", pause ? "pause" : "resume", why);
	rundir_put(&s->rd, "state", state);
	return 0;
}

/* 1 when the loop is over (w->stop_sig says why). */
static int on_signal(struct watch *w)
{
	struct session *s = w->s;
	struct exec_client *ex = s->link.exec;
	struct signalfd_siginfo si;
	int sig = read(s->signal_fd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo : SIGTERM;
	if (sig == SIGWINCH) {
		struct winsize ws;
		if (ex && ioctl(0, TIOCGWINSZ, &ws) == 0)
			exec_client_winsize(ex, ws.ws_row, ws.ws_col);
		return 0;
	}
	/* `bulkhead pause` and `resume` (never an OCI caller's: those are the container's). */
	if ((sig == SIGUSR1 || sig == SIGUSR2) && !w->p->req.forward_signals)
		return on_pause(w, sig == SIGUSR1);
	/* An OCI caller's signals are the container's: the command's once it runs. */
	if (w->p->req.forward_signals && ex) {
		exec_client_signal(ex, sig);
		return 0;
	}
	/* The first Ctrl-C goes to the guest command, as in a shell; a second one (or any
	 * other signal) stops the session. */
	if (sig == SIGINT && w->interrupts++ == 0 && ex && !w->p->req.tty) {
		exec_client_signal(ex, SIGINT);
		return 0;
	}
	w->stop_sig = sig;
	return 1;
}

/* A watched helper ended: 1 (the loop is over). If the VM is already gone, its console (a
 * panic, say) tells the story, not the helper. */
static int on_helper_end(struct watch *w, const char *name)
{
	w->dead_helper = name;
	if (vm_exits_soon(w)) {
		w->reaped = true;
		w->dead_helper = NULL;
		drain_console(w);
	}
	return 1;
}

/* A pooled guest's binding; a bound scope's expiry ends the session as a cold one's would. */
static void on_bind(struct watch *w)
{
	struct session *s = w->s;
	if (session_bind_serve(s) < 0)
		fprintf(stderr, "bulkhead: the binding's answer could not be given\n");
	if (s->bound_timeout_s <= 0)
		return;
	int fd = arm_timeout(s->bound_timeout_s);
	if (fd >= 0 && w->timer_fd >= 0) {
		struct itimerspec left;
		timerfd_gettime(w->timer_fd, &left);
		if ((double)left.it_value.tv_sec + left.it_value.tv_nsec / 1e9 <
		    s->bound_timeout_s) {
			close(fd); /* the lifetime it had ends it sooner */
			fd = -1;
			s->bound_expiry[0] = '\0';
		} else {
			close(w->timer_fd);
		}
	}
	if (fd >= 0)
		w->timer_fd = fd;
	s->bound_timeout_s = 0;
}

static void loop(struct watch *w)
{
	struct session *s = w->s;
	struct pollfd pfd[WATCH_POLLFDS];
	while (w->console_open) {
		int nfixed = fill_pollfds(w, pfd);
		int nagent = agent_link_pollfds(&s->link, pfd + nfixed);
		if (poll(pfd, (nfds_t)(nfixed + nagent), agent_link_timeout_ms(&s->link)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[P_CONSOLE].revents && on_console(w))
			break;
		if (w->diag_open && pfd[P_DIAG].revents)
			console_read_diag(&w->con, s->diag[0], &w->diag_open);
		if (pfd[P_SIGNAL].revents && on_signal(w))
			break;
		if (w->timer_fd >= 0 && pfd[P_TIMER].revents) {
			w->timed_out = true;
			break;
		}
		if (pfd[P_BIND].revents)
			on_bind(w);
		unsigned i = 0;
		while (i < s->nwatched && !pfd[P_WATCHED + i].revents)
			i++;
		if (i < s->nwatched && on_helper_end(w, s->watched[i].name))
			break;
		w->agent_rc = agent_link_handle(&s->link, pfd + nfixed, nagent);
		if (w->agent_rc != 0)
			break;
		if (w->resuming && s->link.ready) {
			w->resuming = false;
			rundir_put(&s->rd, "state", "running\n");
		}
	}
}

/* The end as nothing else explains it: timeout, signal, the guest's or the engine's word. */
static int outcome(struct watch *w)
{
	const struct session_plan *p = w->p;
	struct session_console *c = &w->con;
	if (w->timed_out) {
		if (w->s->bound_expiry[0])
			fprintf(stderr, "bulkhead: the scope expired (%s); the VM was stopped\n",
				w->s->bound_expiry);
		else if (p->end_kind == END_EXPIRY)
			fprintf(stderr, "bulkhead: the scope expired (%s); the VM was stopped\n",
				p->expiry);
		else
			fprintf(stderr, "bulkhead: timed out after %g s; the VM was stopped\n",
				p->timeout_s);
		return EXIT_TIMEOUT;
	}
	if (w->stop_sig) {
		fprintf(stderr, "bulkhead: %s; the VM was stopped\n", strsignal(w->stop_sig));
		return 128 + w->stop_sig;
	}
	if (c->guest_error[0]) {
		fprintf(stderr, "bulkhead: guest: %s\n", c->guest_error);
		return EXIT_BULKHEAD;
	}
	if (c->parser.error[0]) {
		fprintf(stderr, "bulkhead: %s; the session's result is unknown%s\n",
			c->parser.error,
			p->req.console_path ? "" : " (--console FILE keeps the guest's console)");
		return EXIT_BULKHEAD;
	}
	const char *panic = console_panic_line(c);
	if (panic) {
		/* Out of memory before init can say so (unpacking the initramfs, say). */
		bool oom = strstr(panic, "deadlocked on memory") || strstr(panic, "Out of memory");
		fprintf(stderr, "bulkhead: guest kernel panicked: %s", panic);
		if (oom)
			fprintf(stderr,
				" (the guest ran out of memory: give it more than --mem %u)",
				p->req.mem_mib);
		fputc('\n', stderr);
		return EXIT_BULKHEAD;
	}
	if (WIFEXITED(w->wstatus) && WEXITSTATUS(w->wstatus) != 0) {
		fprintf(stderr, "bulkhead: %s failed (status %d): %s\n", w->s->vm.label,
			WEXITSTATUS(w->wstatus), console_last_diag(c, w->s->vm.label));
		return EXIT_BULKHEAD;
	}
	if (WIFSIGNALED(w->wstatus)) {
		fprintf(stderr, "bulkhead: the VM process died: %s\n",
			strsignal(WTERMSIG(w->wstatus)));
		return EXIT_BULKHEAD;
	}
	fprintf(stderr, "bulkhead: the guest stopped without reporting the command's status%s\n",
		cframe_idle(&c->parser) ? "" : " (in the middle of a frame)");
	return EXIT_BULKHEAD;
}

/* Our exit code: the main command's, or why the session ended without one. */
static int exit_code(struct watch *w)
{
	struct session *s = w->s;
	struct exec_client *ex = s->link.exec;
	if (w->agent_rc == 2) {
		fprintf(stderr,
			"\r\nbulkhead: stopped from the terminal (~.); the VM was stopped\n");
		return 128 + SIGINT;
	}
	if (w->agent_rc == 1 && ex->error[0]) {
		fprintf(stderr, "bulkhead: guest: %s\n", ex->error);
		return EXIT_BULKHEAD;
	}
	if (w->agent_rc == 1)
		return exec_client_status(ex);
	if (w->agent_rc < 0 && !console_panic_line(&w->con)) {
		fprintf(stderr, "bulkhead: %s\n", s->link.error);
		return EXIT_BULKHEAD;
	}
	if (w->dead_helper) {
		const char *last = console_last_diag(&w->con, NULL);
		fprintf(stderr, "bulkhead: %s stopped during the session: %s\n", w->dead_helper,
			last[0] ? last : "no message");
		return EXIT_BULKHEAD;
	}
	return outcome(w);
}

int session_watch(struct session *s)
{
	struct watch *w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "bulkhead: out of memory\n");
		return EXIT_BULKHEAD;
	}
	out_unblock();
	w->s = s;
	w->p = s->plan;
	w->console_open = true;
	w->diag_open = s->diag[0] >= 0;
	console_open(&w->con, w->p->req.console_path, w->p->req.verbose);
	agent_link_arm(&s->link, w->p->boot_timeout_s);
	w->timer_fd = w->p->timeout_s > 0 ? arm_timeout(w->p->timeout_s) : -1;
	loop(w);
	/* However we got here, the VM does not outlive the session (a paused one has none). */
	if (!w->reaped && s->vm.pid > 0) {
		kill(s->vm.pid, SIGKILL);
		while (waitpid(s->vm.pid, &w->wstatus, 0) < 0 && errno == EINTR)
			;
	}
	s->vm.pid = 0;
	/* What the engine said before it died is in the pipe now; helpers that are still
	 * running (and are stopped after us) keep it open, so do not wait for its end. */
	if (w->diag_open) {
		fcntl(s->diag[0], F_SETFL, O_NONBLOCK);
		while (w->diag_open)
			console_read_diag(&w->con, s->diag[0], &w->diag_open);
	}
	int code = exit_code(w);
	console_close(&w->con);
	if (w->timer_fd >= 0)
		close(w->timer_fd);
	free(w);
	return code;
}
