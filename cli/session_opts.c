/* SPDX-License-Identifier: Apache-2.0 */
/* cli/session_opts.c: the options of `bulkhead run` and `bulkhead start`, parsed once into a
 * session request (session/plan.h). Usage errors are one line on stderr and EXIT_BULKHEAD. */
#include "cli/session_cmds.h"
#include "session/plan.h"
#include "session/request_fields.h"
#include "session/request_json.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_head[] = "usage: bulkhead %s [OPTIONS]%s\n"
				  "%s\n"
				  "\n";
static const char usage_tail[] =
	"  --request FILE          the session's fields as the API's JSON body (docs/API.md,\n"
	"                          \"Create a session\"; FILE - : stdin); options after it\n"
	"                          override it\n"
	"  -h, --help              this text\n"
	"\n"
	"Exit codes: CMD's own; 128+N if CMD died by signal N; 124 timeout; 125 bulkhead failed.\n";

static const char run_what[] =
	"Runs CMD in a fresh microVM; its stdout/stderr become ours, its exit code ours.";
static const char start_what[] =
	"Starts a session in a fresh microVM and prints its id; run commands in it with\n"
	"'bulkhead exec ID -- CMD', stop it with 'bulkhead stop ID'.";

/* start's own options, first in its --help. */
static const char start_only[] =
	"  --log FILE              once the session is ready, its own messages (how it ended:\n"
	"                          a guest that crashed, a timeout, a stop) are appended to\n"
	"                          FILE (made 0600; default: nowhere)\n"
	"  --json                  once the session is ready, print it as one JSON object with\n"
	"                          the API's field names (docs/API.md, \"Sessions\"): id, state\n"
	"                          (\"running\"), pooled (false), image (or null), work (an\n"
	"                          absolute path, or null), work_ro, broker (\"private\",\n"
	"                          \"shared\" or null: no scope), audit_log (the private broker's\n"
	"                          log; null without one: a shared broker keeps its own),\n"
	"                          mem_mib, cpus, timeout_s (0: none), created_at (Unix seconds)\n";

static const char *command = "run"; /* or "start": for messages */

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bulkhead %s: ", command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see 'bulkhead %s --help')\n", command);
	va_end(ap);
	return EXIT_BULKHEAD;
}

/* getopt's values: a field's index in the table from OPT_FIELD on; start's own options. */
enum {
	OPT_FIELD = 256,
	OPT_JSON = 1024,
	OPT_LOG,
	OPT_REQUEST,
};

#define NOPTS 64
static struct option longopts[NOPTS];
static char shortopts[32];

/* The options, from the table of request fields and start's own. */
static void build_options(void)
{
	size_t n = 0, s = 0;
	/* '+': stop at the first non-option, which starts the guest command; ':': a missing
	 * value is told apart from an unknown option. */
	shortopts[s++] = '+';
	shortopts[s++] = ':';
	for (size_t i = 0; i < request_nfields && n < NOPTS - 5; i++) {
		const struct request_field *f = &request_fields[i];
		if (!f->flag)
			continue;
		longopts[n++] = (struct option){ f->flag, f->metavar ? required_argument : no_argument,
						 NULL, f->short_flag ? f->short_flag
								     : OPT_FIELD + (int)i };
		if (f->short_flag && s < sizeof(shortopts) - 3) {
			shortopts[s++] = f->short_flag;
			if (f->metavar)
				shortopts[s++] = ':';
		}
	}
	longopts[n++] = (struct option){ "json", no_argument, NULL, OPT_JSON };
	longopts[n++] = (struct option){ "log", required_argument, NULL, OPT_LOG };
	longopts[n++] = (struct option){ "request", required_argument, NULL, OPT_REQUEST };
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n] = (struct option){ 0 };
	shortopts[s++] = 'h';
	shortopts[s] = '\0';
}

/* The field getopt's C names, or NULL. */
static const struct request_field *field_of(int c)
{
	if (c >= OPT_FIELD && c < OPT_FIELD + (int)request_nfields)
		return &request_fields[c - OPT_FIELD];
	for (size_t i = 0; c > 0 && c < 128 && i < request_nfields; i++)
		if (request_fields[i].short_flag == c)
			return &request_fields[i];
	return NULL;
}

/* The fields the table leaves to us (REQ_OWN). -1 when taken, else the exit code. */
static int own_field(const struct request_field *f, char *arg, struct session_request *o)
{
	if (!strcmp(f->flag, "engine")) {
		if (engine_parse(arg, &o->engine) < 0)
			return bad("--engine '%s': expected auto, kvm or qemu", arg);
	} else if (!strcmp(f->flag, "ram-file")) {
		if (!*arg || strchr(arg, ','))
			return bad("--ram-file '%s': expected a path without commas", arg);
		o->ram_file = arg;
	} else if (!strcmp(f->flag, "env")) {
		if (!strchr(arg, '=') || arg[0] == '=')
			return bad("--env '%s': expected KEY=VALUE", arg);
		if (o->nenv == RUN_MAX_ENV)
			return bad("--env: more than %d variables", RUN_MAX_ENV);
		o->env[o->nenv++] = arg;
	} else {
		return bad("--%s: no parser", f->flag);
	}
	return -1;
}

/* What no single option can say: combinations, the environment, the command. */
static int check_request(int argc, char **argv, bool detached, struct session_request *o)
{
	if (o->no_jail && o->jail_uid)
		return bad("--jail-uid and --no-jail do not go together");
	if (!o->broker.shared && getenv("BULKHEAD_BROKER") && *getenv("BULKHEAD_BROKER"))
		o->broker.shared = getenv("BULKHEAD_BROKER");
	if (o->broker.shared && !o->broker.scope)
		o->broker.shared = NULL; /* no scope: no way out, so nothing to register */
	if (o->broker.shared && (o->broker.vault || o->broker.ca_file || o->broker.audit))
		return bad("--vault, --ca-file and --audit belong to the shared broker "
			   "(bulkhead broker) when --broker or BULKHEAD_BROKER is given");
	if ((o->disk_mib || o->keep_changes) && !o->image)
		return bad("--disk and --keep-changes are for sessions on an --image");
	if (o->disk_mib && o->keep_changes)
		return bad(
			"--disk sizes the tmpfs write layer; with --keep-changes the layer is DIR, "
			"on DIR's file system (give one or the other)");
	if (optind >= argc) /* an image may bring its own command */
		return detached || o->image ? -1 : bad("no command given");
	if (detached)
		return bad(
			"bulkhead start takes no command; run one with 'bulkhead exec ID -- CMD'");
	o->argv = argv + optind;
	return -1; /* parsed; go on */
}

/* --request FILE: the API's JSON into O; kept for the life of the process (O points into
 * it). -1 when taken, else the exit code. */
static int request_file(const char *path, struct session_request *o)
{
	static json_t *keep; /* every document read and every text made from one */
	char err[320];
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return bad("--request %s: %s", path, strerror(errno));
	json_t *d = request_json_read(fd, err, sizeof(err));
	if (fd)
		close(fd);
	else if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
		dup2(fd, 0); /* nothing after us reads the request again */
		close(fd);
	}
	if (!d)
		return bad("--request %s: %s", path, err);
	if ((!keep && !(keep = json_array())) || json_array_append_new(keep, d) < 0)
		return bad("--request: out of memory");
	if (request_from_json(d, o, keep, err, sizeof(err)) < 0)
		return bad("--request %s: %s", path, err);
	return -1;
}

static void help(bool detached)
{
	printf(usage_head, detached ? "start" : "run", detached ? "" : " [--] CMD [ARG...]",
	       detached ? start_what : run_what);
	if (detached)
		fputs(start_only, stdout);
	request_fields_help(stdout);
	fputs(usage_tail, stdout);
}

int session_opts_parse(int argc, char **argv, bool detached, struct session_request *o)
{
	char err[256];
	int c;
	command = detached ? "start" : "run";
	o->detached = detached;
	opterr = 0;
	optind = 1;
	build_options();
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct request_field *f = field_of(c);
		int rc;
		switch (c) {
		case OPT_JSON:
			if (!detached)
				return bad("--json is for 'bulkhead start' (run's output is the "
					   "command's own)");
			o->json = true;
			break;
		case OPT_REQUEST:
			if ((rc = request_file(optarg, o)) >= 0)
				return rc;
			break;
		case OPT_LOG:
			if (!detached)
				return bad("--log is for 'bulkhead start' (run's messages are on "
					   "its stderr)");
			o->log_path = optarg;
			break;
		case 'h':
			help(detached);
			return 0;
		case ':':
			return bad("option '%s' needs a value", argv[optind - 1]);
		case '?':
			return bad("unknown option '%s'", argv[optind - 1]);
		default:
			if (!f)
				return bad("unknown option");
			if (f->type == REQ_OWN) {
				if ((rc = own_field(f, optarg, o)) >= 0)
					return rc;
			} else {
				const char *text = f->metavar ? optarg : "";
				char name[160];

				snprintf(name, sizeof(name), "--%s '%.100s'", f->flag, text);
				if (request_field_set(o, f, name, text, err, sizeof(err)) < 0)
					return bad("%s", err);
			}
		}
	}
	return check_request(argc, argv, detached, o);
}
