/* SPDX-License-Identifier: Apache-2.0 */
/* serve/spawn.c: one session's supervisor — `bulkhead start` run as our own child with
 * BULKHEAD_NOTIFY_FD (it supervises in that process and writes the id there once the guest
 * is ready) and BULKHEAD_LIFELINE_FD (the session ends when we do). Its stderr goes to a log
 * under --state, whose last line says why it ended. Each session we start has a record
 * there, so that a daemon that was KILLed stops what is left at its next start. */
#include "session/paths.h"
#include "session/pause_ask.h"
#include "session/rundir.h"
#include "jail/proc.h"
#include "session/session_reap.h"
#include "lib/env_merge.h"
#include "lib/mkdirs.h"
#include "serve/serve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define SPAWN_ARGS_MAX 48
/* The supervisor's own --boot-timeout ends a guest that never calls home; this is the bound
 * on our wait if the supervisor itself hangs. */
#define READY_WAIT_MS (180 * 1000)

static int state_file(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s/%s", serve.state, dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The environment with our two descriptors named (fds 3 and 4 in the child). */
static char **child_env(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "BULKHEAD_NOTIFY_FD=", 19) &&
		    strncmp(environ[i], "BULKHEAD_LIFELINE_FD=", 21))
			env[k++] = environ[i];
	env[k++] = "BULKHEAD_NOTIFY_FD=3";
	env[k++] = "BULKHEAD_LIFELINE_FD=4";
	env[k] = NULL;
	return env;
}

/* The last non-empty line of the log, without "bulkhead: ". */
static void last_line(const char *log, char *why, size_t whylen)
{
	char buf[4096];
	int fd = open(log, O_RDONLY | O_CLOEXEC);
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
	ssize_t n =
		size < 0 ? -1
			 : pread(fd, buf, sizeof(buf) - 1,
				 size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(why, whylen, "the supervisor ended without a word");
		return;
	}
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	char *line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	if (strncmp(line, "bulkhead: ", 10) == 0)
		line += 10;
	/* The line may quote the guest ("guest: ..."): printable ASCII only, so that it stays one
	 * line of valid JSON whatever the guest wrote. */
	for (char *c = line; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	snprintf(why, whylen, "%s", line);
}

void serve_session_last_line(const struct serve_session *s, char *why, size_t whylen)
{
	last_line(s->log, why, whylen);
}

static pid_t spawn(char *const argv[], int stdin_fd, int notify_w, int log_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dflt;
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	sigaddset(&dflt, SIGCHLD);
	posix_spawn_file_actions_init(&fa);
	if (stdin_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
	posix_spawn_file_actions_adddup2(&fa, notify_w, 3);
	posix_spawn_file_actions_adddup2(&fa, serve.lifeline[0], 4);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dflt);
	char **env = child_env();
	pid_t pid = -ENOMEM;
	if (env) {
		int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
		if (rc)
			pid = -rc;
	}
	free(env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return pid;
}

/* Reads the id line; 0 with it in id, or -1 (the supervisor ended, or hung). */
static int read_id(int fd, char id[17])
{
	char buf[64];
	size_t got = 0;
	long long end = serve_now_ms() + READY_WAIT_MS;
	while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = end - serve_now_ms();
		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			return -1;
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r == 0)
			return -1;
		if (r > 0)
			got += (size_t)r;
	}
	if (got != 17 || buf[16] != '\n' || strspn(buf, "0123456789abcdef") != 16)
		return -1;
	memcpy(id, buf, 16);
	id[16] = '\0';
	return 0;
}

/* What every exec needs from the run directory, read once: the socket, where commands
 * start, the image's environment. 0, or -1 (the session is not what it should be). */
static int session_facts(struct serve_session *s)
{
	struct rundir rd;
	char err[320];
	if (rundir_open(&rd, s->id, err, sizeof(err)) < 0 ||
	    rundir_file(&rd, RUNDIR_VSOCK "/vsock.sock", 1, s->uds, sizeof(s->uds)) < 0)
		return -1;
	if (rundir_get(&rd, "cwd", s->cwd, sizeof(s->cwd)) < 0)
		snprintf(s->cwd, sizeof(s->cwd), "/");
	s->cwd[strcspn(s->cwd, "\n")] = '\0';
	s->image_env_text = malloc(IMAGE_ENV_BYTES + 1);
	if (s->image_env_text &&
	    rundir_get(&rd, "env", s->image_env_text, IMAGE_ENV_BYTES + 1) == 0)
		env_lines(s->image_env_text, s->image_env, IMAGE_ENV_MAX);
	return 0;
}

int serve_spawn(struct serve_session *s, char *const args[], int stdin_fd, char *why,
		size_t whylen)
{
	char bin[PATH_MAX], *argv[SPAWN_ARGS_MAX + 3];
	size_t n = 0;
	if (paths_join(bin, sizeof(bin), paths_bindir(), "bulkhead") < 0) {
		snprintf(why, whylen, "path of bulkhead too long");
		return -1;
	}
	argv[n++] = bin;
	argv[n++] = "start";
	for (size_t i = 0; args[i]; i++) {
		if (n == SPAWN_ARGS_MAX) {
			snprintf(why, whylen, "more than %d supervisor arguments", SPAWN_ARGS_MAX);
			return -1;
		}
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	char tmpl[PATH_MAX];
	if (state_file(tmpl, sizeof(tmpl), "logs", "start-XXXXXX") < 0) {
		snprintf(why, whylen, "--state path too long");
		return -1;
	}
	int log_fd = mkostemp(tmpl, O_CLOEXEC), p[2] = { -1, -1 };
	if (log_fd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "supervisor log %s: %s", tmpl, strerror(errno));
		if (log_fd >= 0)
			close(log_fd);
		return -1;
	}
	snprintf(s->log, sizeof(s->log), "%s", tmpl);
	pthread_mutex_lock(&serve.lock);
	/* Under the lock, against serve_stop_all: a supervisor either exists when the daemon
	 * starts to stop, and is stopped and waited for, or never starts. */
	pid_t pid = serve.stopping ? -ESHUTDOWN
				   : spawn(argv, stdin_fd, p[1], log_fd); /* the reaper knows it at once */
	s->pid = pid > 0 ? pid : 0;
	/* A pool guest boots and waits at a lower priority (serve/pool.c); `bulkhead start`
	 * plans before it starts any helper, and each inherits this. */
	if (pid > 0 && s->in_pool && geteuid() == 0)
		setpriority(PRIO_PROCESS, (id_t)pid, POOL_NICE);
	pthread_mutex_unlock(&serve.lock);
	close(p[1]);
	close(log_fd);
	if (pid < 0) {
		close(p[0]);
		if (pid == -ESHUTDOWN)
			snprintf(why, whylen, "the daemon is stopping");
		else
			snprintf(why, whylen, "cannot start %s: %s", bin, strerror((int)-pid));
		return -1;
	}
	s->pid_start = proc_start_time(pid);
	int rc = read_id(p[0], s->id);
	close(p[0]);
	if (rc < 0) {
		pthread_mutex_lock(&serve.lock);
		serve_session_stop(s);
		pthread_mutex_unlock(&serve.lock);
		last_line(s->log, why, whylen);
		unlink(s->log);
		return -1;
	}
	if (session_facts(s) < 0) {
		snprintf(why, whylen, "session %s has no run directory", s->id);
		pthread_mutex_lock(&serve.lock);
		serve_session_stop(s);
		pthread_mutex_unlock(&serve.lock);
		return -1;
	}
	char named[PATH_MAX];
	if (state_file(named, sizeof(named), "logs", s->id) == 0 && rename(s->log, named) == 0)
		snprintf(s->log, sizeof(s->log), "%s", named);
	serve_record_put(s);
	return 0;
}

/* A record: "PID START OWNED WORK\n" in <state>/sessions/<id>. */
void serve_record_put(const struct serve_session *s)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	if (state_file(path, sizeof(path), "sessions", s->id) < 0)
		return;
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%d %llu %d %s\n", (int)s->pid, s->pid_start, s->work_owned ? 1 : 0, s->work);
	if (fclose(f) == 0)
		rename(tmp, path);
}

void serve_record_remove(const char *id)
{
	char path[PATH_MAX];
	if (state_file(path, sizeof(path), "sessions", id) == 0)
		unlink(path);
	if (state_file(path, sizeof(path), "logs", id) == 0)
		unlink(path);
}

/* One record of a daemon that is gone: its supervisor stopped (TERM, then KILL), its run
 * directory and cgroups, and the work directory we made. */
static void recover(const char *id)
{
	char path[PATH_MAX], work[PATH_MAX] = "";
	int pid = 0, owned = 0;
	unsigned long long start = 0;
	if (state_file(path, sizeof(path), "sessions", id) < 0)
		return;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	int got = fscanf(f, "%d %llu %d %4095[^\n]", &pid, &start, &owned, work);
	fclose(f);
	if (got >= 2 && pid > 1 && start && proc_start_time(pid) == start) {
		kill(pid, SIGTERM);
		for (int i = 0; i < 200 && proc_start_time(pid) == start; i++)
			usleep(50000);
		if (proc_start_time(pid) == start)
			kill(pid, SIGKILL);
	}
	struct rundir rd;
	char err[320];
	if (rundir_open(&rd, id, err, sizeof(err)) == 0) {
		session_reap_cgroups(&rd, true);
		rundir_remove(&rd);
	}
	/* Only a directory of ours: a record is a file a share could have held. */
	char mine[PATH_MAX];
	int n = snprintf(mine, sizeof(mine), "%s/work/", serve.state);
	if (got == 4 && owned && n > 0 && strncmp(work, mine, (size_t)n) == 0 &&
	    !strstr(work + n, "/") && !strstr(work, "/.."))
		serve_rmtree(work);
	session_pause_files_remove(id); /* a paused guest's memory, if it was paused */
	fprintf(stderr, "bulkhead serve: stopped session %s left by a previous daemon\n", id);
	serve_record_remove(id);
}

void serve_records_recover(void)
{
	char dir[PATH_MAX];
	if (state_file(dir, sizeof(dir), "sessions", "") < 0)
		return;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strlen(e->d_name) == 16 && strspn(e->d_name, "0123456789abcdef") == 16)
			recover(e->d_name);
	if (d)
		closedir(d);
}

/* After recovery, nothing in work/, logs/ or scopes/ belongs to a session: what is left there
 * was made by a create or a pool boot that a KILL cut short before its record. */
void serve_records_sweep(void)
{
	const char *subs[] = { "work", "logs", "scopes" };
	for (size_t i = 0; i < 3; i++) {
		char dir[PATH_MAX], path[PATH_MAX + NAME_MAX + 2];
		if (state_file(dir, sizeof(dir), subs[i], "") < 0)
			continue;
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s%s", dir, e->d_name);
			if (i == 0)
				serve_rmtree(path);
			else
				unlink(path);
		}
		if (d)
			closedir(d);
	}
}
