/* cli/session.c: watch a running guest — relay its framed stdout/stderr, keep
 * console noise apart, enforce --timeout, and turn the outcome into our exit code. */
#include "cli/out.h"
#include "cli/run.h"
#include "lib/console_frame.h"

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

#define TAIL_MAX 4096

/* --console FILE keeps at most this much of the console: a guest's flood ends there. */
#define CONSOLE_FILE_MAX (64ull << 20)

struct watch {
	const struct run_opts *o;
	const char *engine;			  /* for messages: "qemu", "bulkhead-vmm" */
	int console_file;			  /* --console FILE, or -1 */
	unsigned long long console_bytes;	  /* written to it so far */
	char guest_error[CFRAME_MAX_PAYLOAD + 1]; /* from init's error frame */
	char tail[TAIL_MAX];			  /* last console noise, for "why did it stop" */
	size_t tail_len;
	char diag[512]; /* last line the engine printed on its stderr */
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void keep_tail(char *tail, size_t *tail_len, size_t max, const uint8_t *buf, size_t len)
{
	if (len >= max) {
		memcpy(tail, buf + len - max, max);
		*tail_len = max;
		return;
	}
	if (*tail_len + len > max) {
		size_t drop = *tail_len + len - max;
		memmove(tail, tail + drop, *tail_len - drop);
		*tail_len -= drop;
	}
	memcpy(tail + *tail_len, buf, len);
	*tail_len += len;
}

/* Console text for --console FILE, up to its bound, and then one line saying so. */
static void keep_console(struct watch *w, const void *buf, size_t len)
{
	static const char cut[] = "\n[bulkhead: console output beyond 64 MiB not kept]\n";
	if (w->console_file < 0 || w->console_bytes >= CONSOLE_FILE_MAX)
		return;
	if (len > CONSOLE_FILE_MAX - w->console_bytes) {
		len = (size_t)(CONSOLE_FILE_MAX - w->console_bytes);
		write_all(w->console_file, buf, len);
		write_all(w->console_file, cut, sizeof(cut) - 1);
		w->console_bytes = CONSOLE_FILE_MAX;
		return;
	}
	write_all(w->console_file, buf, len);
	w->console_bytes += len;
}

static void on_noise(void *ctx, const uint8_t *buf, size_t len)
{
	struct watch *w = ctx;
	keep_console(w, buf, len);
	/* -v: as much as our stderr takes now; a reader that stopped loses noise, not time. */
	if (w->o->verbose)
		out_try(2, buf, len);
	keep_tail(w->tail, &w->tail_len, sizeof(w->tail), buf, len);
}

/* The only frame init sends: why the session could not start. */
static int on_frame(void *ctx, int type, const uint8_t *payload, size_t len)
{
	struct watch *w = ctx;
	if (type != CFRAME_ERROR || w->guest_error[0])
		return -1; /* nothing may follow it */
	memcpy(w->guest_error, payload, len);
	w->guest_error[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (w->guest_error[i] < 0x20)
			w->guest_error[i] = ' ';
	return 0;
}

static void read_diag(struct watch *w, int fd, bool *open_)
{
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n <= 0) {
		*open_ = n < 0 && errno == EINTR;
		return;
	}
	keep_console(w, buf, (size_t)n);
	if (w->o->verbose)
		out_try(2, buf, (size_t)n);
	/* Keep the last non-empty line: QEMU's errors are one line each. */
	size_t dl = strlen(w->diag);
	keep_tail(w->diag, &dl, sizeof(w->diag) - 1, (const uint8_t *)buf, (size_t)n);
	w->diag[dl] = '\0';
}

static const char *last_line(char *text)
{
	size_t n = strlen(text);
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	char *nl = strrchr(text, '\n');
	return nl ? nl + 1 : text;
}

/* The kernel's panic line from the console tail, if there is one. */
static const char *panic_line(struct watch *w)
{
	w->tail[w->tail_len < TAIL_MAX ? w->tail_len : TAIL_MAX - 1] = '\0';
	char *p = strstr(w->tail, "Kernel panic - not syncing");
	if (!p)
		return NULL;
	p[strcspn(p, "\r\n")] = '\0';
	return p;
}

static int outcome(struct watch *w, struct cframe_parser *p, int wstatus, int sig, bool timed_out)
{
	const struct run_opts *o = w->o;
	if (timed_out) {
		if (o->timeout_is_expiry)
			fprintf(stderr, "bulkhead: the scope expired (%s); the VM was stopped\n",
				o->scope_expiry);
		else
			fprintf(stderr, "bulkhead: timed out after %g s; the VM was stopped\n",
				o->timeout_s);
		return EXIT_TIMEOUT;
	}
	if (sig) {
		fprintf(stderr, "bulkhead: %s; the VM was stopped\n", strsignal(sig));
		return 128 + sig;
	}
	if (w->guest_error[0]) {
		fprintf(stderr, "bulkhead: guest: %s\n", w->guest_error);
		return EXIT_BULKHEAD;
	}
	if (p->error[0]) {
		fprintf(stderr, "bulkhead: %s; the session's result is unknown%s\n", p->error,
			o->console_path ? "" : " (--console FILE keeps the guest's console)");
		return EXIT_BULKHEAD;
	}
	const char *panic = panic_line(w);
	if (panic) {
		fprintf(stderr, "bulkhead: guest kernel panicked: %s\n", panic);
		return EXIT_BULKHEAD;
	}
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
		fprintf(stderr, "bulkhead: %s failed (status %d): %s\n", w->engine,
			WEXITSTATUS(wstatus), last_line(w->diag));
		return EXIT_BULKHEAD;
	}
	if (WIFSIGNALED(wstatus)) {
		fprintf(stderr, "bulkhead: the VM process died: %s\n",
			strsignal(WTERMSIG(wstatus)));
		return EXIT_BULKHEAD;
	}
	fprintf(stderr, "bulkhead: the guest stopped without reporting the command's status%s\n",
		cframe_idle(p) ? "" : " (in the middle of a frame)");
	return EXIT_BULKHEAD;
}

/* Back ends see the engine close their sockets a moment before it exits:
 * give it half a second to finish exiting. True (and reaped) if it did. */
static bool vm_exits_soon(pid_t pid, int *wstatus)
{
	for (int i = 0; i < 50; i++) {
		if (waitpid(pid, wstatus, WNOHANG) == pid)
			return true;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Reads what is left on the console of an engine that has exited. */
static void drain_console(struct cframe_parser *p, int fd, uint8_t *buf, size_t len)
{
	ssize_t n;
	while ((n = read(fd, buf, len)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && cframe_feed(p, buf, (size_t)n) < 0)
			break;
}

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

int session_watch(const struct run_opts *o, struct guest *g)
{
	struct watch w = {
		.o = o,
		.engine = g->engine_label,
		.console_file = -1,
	};
	out_unblock();
	struct cframe_parser *parser = malloc(sizeof(*parser));
	if (!parser) {
		kill(g->pid, SIGKILL);
		waitpid(g->pid, NULL, 0);
		fprintf(stderr, "bulkhead: out of memory\n");
		return EXIT_BULKHEAD;
	}
	struct cframe_sink sink = { .noise = on_noise, .frame = on_frame, .ctx = &w };
	cframe_parser_init(parser, &sink);
	if (o->console_path) {
		w.console_file =
			open(o->console_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (w.console_file < 0)
			fprintf(stderr, "bulkhead: warning: --console %s: %s\n", o->console_path,
				strerror(errno));
	}

	int sfd = g->signal_fd;
	if (g->agent)
		agent_link_arm(g->agent, o->boot_timeout_s);
	int tfd = o->timeout_s > 0 ? arm_timeout(o->timeout_s) : -1;

	enum { P_CONSOLE, P_DIAG, P_SIGNAL, P_TIMER, P_BACKENDS };
	struct pollfd pfd[P_BACKENDS + GUEST_MAX_BACKENDS + AGENT_LINK_POLLFDS];
	const char *dead_backend = NULL;
	bool timed_out = false, diag_open = g->diag_fd >= 0, console_open = true;
	int stop_sig = 0, agent_rc = 0, interrupts = 0, wstatus = 0;
	bool reaped = false;
	uint8_t buf[65536];
	while (console_open) {
		pfd[P_CONSOLE] = (struct pollfd){ .fd = g->console_fd, .events = POLLIN };
		pfd[P_DIAG] =
			(struct pollfd){ .fd = diag_open ? g->diag_fd : -1, .events = POLLIN };
		pfd[P_SIGNAL] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pfd[P_TIMER] = (struct pollfd){ .fd = tfd, .events = POLLIN };
		for (unsigned i = 0; i < g->nbackends; i++)
			pfd[P_BACKENDS + i] =
				(struct pollfd){ .fd = g->backends[i].pidfd, .events = POLLIN };
		int nfixed = P_BACKENDS + (int)g->nbackends;
		int nagent = g->agent ? agent_link_pollfds(g->agent, pfd + nfixed) : 0;
		/* Every event here is served without blocking, so the timer and signals are
		 * seen whatever the guest sends or withholds. */
		int wait_ms = g->agent ? agent_link_timeout_ms(g->agent) : -1;
		if (poll(pfd, (nfds_t)(nfixed + nagent), wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[P_CONSOLE].revents) {
			ssize_t n = read(g->console_fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				console_open =
					false; /* the engine closed the console: it is exiting */
			else if (cframe_feed(parser, buf, (size_t)n) < 0)
				break;
			if (w.guest_error[0])
				break; /* init could not start the session; it powers off */
		}
		if (diag_open && pfd[P_DIAG].revents)
			read_diag(&w, g->diag_fd, &diag_open);
		if (sfd >= 0 && pfd[P_SIGNAL].revents) {
			struct signalfd_siginfo si;
			int sig = read(sfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo
									   : SIGTERM;
			if (sig == SIGWINCH) {
				struct winsize ws;
				if (g->agent && g->agent->exec && ioctl(0, TIOCGWINSZ, &ws) == 0)
					exec_client_winsize(g->agent->exec, ws.ws_row, ws.ws_col);
				continue;
			}
			/* The first Ctrl-C goes to the guest command, as in a shell; a
			 * second one (or any other signal) stops the session. */
			if (sig == SIGINT && interrupts++ == 0 && g->agent && g->agent->exec &&
			    !o->tty) {
				exec_client_signal(g->agent->exec, SIGINT);
				continue;
			}
			stop_sig = sig;
			break;
		}
		if (tfd >= 0 && pfd[P_TIMER].revents) {
			timed_out = true;
			break;
		}
		for (unsigned i = 0; i < g->nbackends && !dead_backend; i++)
			if (pfd[P_BACKENDS + i].revents)
				dead_backend = g->backends[i].name;
		if (dead_backend) {
			/* Back ends end when the VM does: if the VM is already gone, its
			 * console (a panic, say) tells the story, not the back end. */
			if (vm_exits_soon(g->pid, &wstatus)) {
				reaped = true;
				dead_backend = NULL;
				drain_console(parser, g->console_fd, buf, sizeof(buf));
			}
			break;
		}
		if (g->agent && (agent_rc = agent_link_handle(g->agent, pfd + nfixed, nagent)) != 0)
			break;
	}
	/* However we got here, the VM does not outlive the session. */
	if (!reaped) {
		kill(g->pid, SIGKILL);
		while (waitpid(g->pid, &wstatus, 0) < 0 && errno == EINTR)
			;
	}
	/* What the engine said before it died is in the pipe now; back ends that are
	 * still running (and are stopped after us) keep it open, so do not wait for EOF. */
	fcntl(g->diag_fd, F_SETFL, O_NONBLOCK);
	while (diag_open)
		read_diag(&w, g->diag_fd, &diag_open);
	int code;
	struct exec_client *ex = g->agent ? g->agent->exec : NULL;
	if (agent_rc == 2) {
		fprintf(stderr,
			"\r\nbulkhead: stopped from the terminal (~.); the VM was stopped\n");
		code = 128 + SIGINT;
	} else if (agent_rc == 1 && ex->error[0]) {
		fprintf(stderr, "bulkhead: guest: %s\n", ex->error);
		code = EXIT_BULKHEAD;
	} else if (agent_rc == 1) {
		code = exec_client_status(ex);
	} else if (agent_rc < 0 && !panic_line(&w)) {
		fprintf(stderr, "bulkhead: %s\n", g->agent->error);
		code = EXIT_BULKHEAD;
	} else if (dead_backend) {
		fprintf(stderr, "bulkhead: %s stopped during the session: %s\n", dead_backend,
			w.diag[0] ? last_line(w.diag) : "no message");
		code = EXIT_BULKHEAD;
	} else {
		code = outcome(&w, parser, wstatus, stop_sig, timed_out);
	}
	close(g->console_fd);
	if (g->diag_fd >= 0)
		close(g->diag_fd);
	if (tfd >= 0)
		close(tfd);
	if (w.console_file >= 0)
		close(w.console_file);
	free(parser);
	return code;
}
