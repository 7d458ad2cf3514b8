/* SPDX-License-Identifier: Apache-2.0 */
/* serve/exec_internal.h: an exec, between the file that starts it and takes its stdin and
 * signals (exec.c) and the file that streams its output (exec_stream.c). */
#ifndef BULKHEAD_SERVE_EXEC_INTERNAL_H
#define BULKHEAD_SERVE_EXEC_INTERNAL_H

#include "serve/serve.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ctl_msg {
	char kind; /* 's' signal, 'w' window size */
	int a, b;
};

struct serve_exec {
	struct serve_exec *next;
	char id[17];
	struct serve_session *sess;
	struct exec_client *c;
	int out_r, out_w, err_r, err_w, in_r, in_w, ctl_r, ctl_w;
	bool stdin_open; /* in_w belongs to POST .../stdin */
	char *feed;	 /* "stdin" of the request, written by the exec's thread */
	size_t feed_len, feed_off;
	int client_fd;
	int phase;   /* 0: id frame; 1: relaying; 2: exit frame sent */
	bool over;   /* the exec client is done */
	char *frame; /* the frame being sent */
	size_t flen, foff;
	int refs; /* the stream, and each request writing to it */
	pthread_mutex_t stdin_lock;
};

/* Closes *fd if open, and marks it closed. */
void exec_closefd(int *fd);
/* Lets go of the exec; the last hold frees it (and its session's hold). */
void exec_put(struct serve_exec *e);
/* The exec's stream (a serve_body reader, serve/body.h): the id frame, output and stderr
 * frames as the command writes, heartbeats, the exit frame. Release: exec_put. */
ssize_t exec_stream_read(void *cls, char *buf, size_t max);
void exec_stream_free(void *cls);

#endif
