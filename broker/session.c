/* SPDX-License-Identifier: Apache-2.0 */
/* broker/session.c: a session's listener thread and its connection threads (see session.h).
 * Every connection thread holds a reference; ending the session shuts the sockets down so
 * each thread returns soon, and the last one out frees the session. */
#include "broker/session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/audit.h"
#include "broker/mitm_ca.h"

/* The session CA outlives any session a scope allows (issue 7 bounds session lifetime). */
#define SESSION_CA_LIFETIME_S (7L * 24 * 3600)

struct broker_session {
	char id[BROKER_SESSION_ID_MAX + 1];
	struct rules rules;
	struct proxy_config cfg;
	struct audit *audit;
	pthread_mutex_t audit_lock;
	int lfd;
	pthread_t acceptor;
	pthread_mutex_t lock;		     /* guards everything below */
	int conns[BROKER_SESSION_MAX_CONNS]; /* open guest connections; -1: free slot */
	unsigned refs;			     /* the session itself, plus one per connection */
	int ended;
	unsigned long next_conn;
	unsigned max_conns;
	struct hold_budget hold; /* what this session's held requests take */
};

int broker_session_id_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (!n || n > BROKER_SESSION_ID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '-'))
			return 0;
	return 1;
}

static void session_free(struct broker_session *s)
{
	int rc = s->audit ? audit_close(s->audit) : 0;

	if (rc < 0)
		fprintf(stderr, "bulkhead-broker: session %s: closing the audit log: %s\n", s->id,
			strerror(-rc));
	mitm_ca_free(s->cfg.mitm);
	rules_free(&s->rules);
	hold_budget_destroy(&s->hold);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->audit_lock);
	free(s);
}

static void session_put(struct broker_session *s)
{
	unsigned left;

	pthread_mutex_lock(&s->lock);
	left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (!left)
		session_free(s);
}

struct conn_job {
	struct broker_session *s;
	int slot, fd;
	unsigned long id;
};

static void *conn_thread(void *arg)
{
	struct conn_job j = *(struct conn_job *)arg;
	struct broker_session *s = j.s;

	free(arg);
	/* The proxy closes its own descriptor; the table keeps the original until here, so
	 * broker_session_end never shuts down a number that has been reused meanwhile. */
	proxy_serve(&s->cfg, j.fd, j.id);
	pthread_mutex_lock(&s->lock);
	close(s->conns[j.slot]);
	s->conns[j.slot] = -1;
	pthread_mutex_unlock(&s->lock);
	session_put(s);
	return NULL;
}

static void *accept_thread(void *arg)
{
	struct broker_session *s = arg;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC), slot = -1, dup_fd = -1;
		struct conn_job *j;
		pthread_t t;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			pthread_mutex_lock(&s->lock);
			int ended = s->ended;
			pthread_mutex_unlock(&s->lock);
			if (ended)
				break;
			usleep(10000); /* out of descriptors or memory: wait rather than spin */
			continue;
		}
		pthread_mutex_lock(&s->lock);
		if (!s->ended)
			for (int i = 0; i < (int)s->max_conns && slot < 0; i++)
				if (s->conns[i] < 0)
					slot = i;
		j = slot >= 0 ? malloc(sizeof(*j)) : NULL;
		dup_fd = j ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (dup_fd >= 0) {
			*j = (struct conn_job){ s, slot, dup_fd, s->next_conn++ };
			s->conns[slot] = fd;
			s->refs++;
			if (pthread_create(&t, &attr, conn_thread, j)) {
				s->conns[slot] = -1;
				s->refs--;
				close(dup_fd);
				dup_fd = -1;
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (dup_fd < 0) {
			free(j);
			close(fd);
		}
	}
	pthread_attr_destroy(&attr);
	return NULL;
}

struct broker_session *broker_session_start(const struct broker_common *common, const char *id,
					    struct rules *rules, int listen_fd,
					    const char *audit_path, char *err, size_t errlen)
{
	struct broker_session *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		rules_free(rules);
		close(listen_fd);
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->rules = *rules;
	memset(rules, 0, sizeof(*rules));
	s->lfd = listen_fd;
	s->refs = 1;
	s->next_conn = 1;
	for (int i = 0; i < BROKER_SESSION_MAX_CONNS; i++)
		s->conns[i] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->audit_lock, NULL);
	hold_budget_init(&s->hold, common->hold_session_bytes, common->hold_session_reqs);
	s->max_conns = common->max_conns && common->max_conns < BROKER_SESSION_MAX_CONNS
			       ? common->max_conns
			       : BROKER_SESSION_MAX_CONNS;
	if (audit_path && audit_open(audit_path, &s->audit, err, errlen) < 0)
		goto fail;
	s->cfg = (struct proxy_config){
		.rules = &s->rules,
		.secrets = common->secrets,
		.tls = common->tls,
		.io_timeout_ms = common->io_timeout_ms,
		.connect_timeout_ms = common->connect_timeout_ms,
		.log = common->log,
		.audit = s->audit,
		.audit_lock = &s->audit_lock,
		.session = s->id,
		.policy = common->policy,
		.approvals = common->approvals,
		.hold_session = &s->hold,
		.hold_total = common->hold_total,
		.head_timeout_ms = common->head_timeout_ms,
	};
	/* The session CA for CONNECT: made here, never written anywhere; the guest fetches its
	 * certificate through the proxy and trusts nothing else. */
	s->cfg.mitm = mitm_ca_new(s->id, SESSION_CA_LIFETIME_S, err, errlen);
	if (!s->cfg.mitm)
		goto fail;
	if (pthread_create(&s->acceptor, NULL, accept_thread, s)) {
		snprintf(err, errlen, "cannot start the session's listener thread");
		goto fail;
	}
	return s;
fail:
	close(s->lfd);
	session_free(s);
	return NULL;
}

void broker_session_end(struct broker_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->ended = 1;
	/* shutdown() wakes the accept() and every blocked read on the guest side. */
	shutdown(s->lfd, SHUT_RDWR);
	for (int i = 0; i < BROKER_SESSION_MAX_CONNS; i++)
		if (s->conns[i] >= 0)
			shutdown(s->conns[i], SHUT_RDWR);
	pthread_mutex_unlock(&s->lock);
	/* Its held requests are denied: nothing of a session outlives it. */
	if (s->cfg.approvals)
		approvals_session_end(s->cfg.approvals, s->id);
	pthread_join(s->acceptor, NULL);
	close(s->lfd);
	s->lfd = -1;
	session_put(s);
}
