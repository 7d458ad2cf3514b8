/* SPDX-License-Identifier: Apache-2.0 */
/* cli/template_cmd.c: `bulkhead template ls|rm` — the cache's templates (session/template.h),
 * which sessions started with --template make and restore. */
#include "cli/session_cmds.h"
#include "session/template_key.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char template_usage[] =
	"usage: bulkhead template COMMAND\n"
	"\n"
	"  ls [--json]            every template: its name, size on disk, when it was made, its\n"
	"                         shape (RAM, vCPUs, shares) and whether sessions still use it\n"
	"  rm NAME...|--stale|--all\n"
	"                         remove templates: those named (a unique prefix will do), those\n"
	"                         no session will use again, or all of them\n"
	"\n"
	"Sessions started with --template make a template of their shape once and restore it\n"
	"after (README, 'What works today'). A template is stale once its kernel, initramfs,\n"
	"bulkhead-vmm, the host's kernel or its CPU changed: the next session makes a new one,\n"
	"and the old one only takes space. One that cannot be judged here (KVM cannot be asked\n"
	"for the CPU, a malformed shape file) is unknown, and --stale leaves it. The cache:\n"
	"${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-~/.cache}/bulkhead}/templates.\n"
	"--json: an array of {\"name\", \"bytes\", \"made\": \"YYYY-MM-DDTHH:MM:SSZ\",\n"
	"\"current\": true|false, \"state\": \"current\"|\"stale\"|\"unknown\", with a shape\n"
	"\"mem_mib\", \"cpus\", \"shares\": [\"work\", \"image\", \"bind0\", \"bind1\"] (those\n"
	"present), and unless current \"why\"}.\n"
	"Exit status: 0 done; 125 failed (one line on stderr says why).\n";

static const char *const share_names[] = { "work", "image", "bind0", "bind1" };

static void print_row(const struct template_info *t, json_t *arr)
{
	char made[32];
	time_t m = (time_t)t->made;
	struct tm tm;
	strftime(made, sizeof(made), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&m, &tm));
	if (arr) {
		static const char *const states[] = { "current", "stale", "unknown" };
		json_t *o = json_pack("{s:s, s:I, s:s, s:b, s:s}", "name", t->name, "bytes",
				      (json_int_t)t->bytes, "made", made, "current",
				      t->state == TEMPLATE_CURRENT, "state", states[t->state]);
		if (t->shape) {
			json_t *sh = json_array();
			for (int i = 0; i < 4; i++)
				if (t->fs[i])
					json_array_append_new(sh, json_string(share_names[i]));
			json_object_set_new(o, "mem_mib", json_integer(t->mem_mib));
			json_object_set_new(o, "cpus", json_integer(t->cpus));
			json_object_set_new(o, "shares", sh);
		}
		if (t->state != TEMPLATE_CURRENT)
			json_object_set_new(o, "why", json_string(t->why));
		json_array_append_new(arr, o);
		return;
	}
	char shape[96] = "-";
	if (t->shape) {
		int n = snprintf(shape, sizeof(shape), "%u MiB, %u vCPU%s", t->mem_mib, t->cpus,
				 t->cpus == 1 ? "" : "s");
		for (int i = 0; i < 4 && n > 0 && (size_t)n < sizeof(shape); i++)
			if (t->fs[i])
				n += snprintf(shape + n, sizeof(shape) - (size_t)n, ", %s",
					      share_names[i]);
	}
	printf("%s  %8.1f MiB  %s  %-32s  %s\n", t->name, (double)t->bytes / (1 << 20), made, shape,
	       t->state == TEMPLATE_CURRENT ? "current" : t->why);
}

static int ls(int argc, char **argv)
{
	struct template_info *t;
	size_t n;
	char err[512];
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc > 2 || (argc == 2 && !json)) {
		fputs("usage: bulkhead template ls [--json]\n", stderr);
		return 125;
	}
	if (template_list(&t, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead template ls: %s\n", err);
		return 125;
	}
	json_t *arr = json ? json_array() : NULL;
	for (size_t i = 0; i < n; i++)
		print_row(&t[i], arr);
	if (arr) {
		char *s = json_dumps(arr, JSON_INDENT(2));
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(arr);
	}
	free(t);
	return 0;
}

/* The one template whose name starts with prefix, or NULL with err set. */
static const struct template_info *find(const struct template_info *t, size_t n, const char *prefix,
					char *err, size_t errlen)
{
	const struct template_info *hit = NULL;
	size_t len = strlen(prefix);
	for (size_t i = 0; i < n && len; i++)
		if (strncmp(t[i].name, prefix, len) == 0) {
			if (hit) {
				snprintf(err, errlen, "'%s' names more than one template", prefix);
				return NULL;
			}
			hit = &t[i];
		}
	if (!hit)
		snprintf(err, errlen, "no template '%s' (see 'bulkhead template ls')", prefix);
	return hit;
}

static int rm(int argc, char **argv)
{
	struct template_info *t;
	size_t n;
	char err[512];
	bool all = argc == 2 && strcmp(argv[1], "--all") == 0;
	bool stale = argc == 2 && strcmp(argv[1], "--stale") == 0;
	if (argc < 2) {
		fputs("usage: bulkhead template rm NAME...|--stale|--all\n", stderr);
		return 125;
	}
	if (template_list(&t, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "bulkhead template rm: %s\n", err);
		return 125;
	}
	int rc = 0;
	if (all || stale) {
		for (size_t i = 0; i < n && !rc; i++)
			if (all || t[i].state == TEMPLATE_STALE)
				rc = template_remove(t[i].name, err, sizeof(err));
	} else {
		/* Every name found before any is removed: nothing half done for a typo. */
		for (int a = 1; a < argc && !rc; a++)
			rc = find(t, n, argv[a], err, sizeof(err)) ? 0 : -1;
		for (int a = 1; a < argc && !rc; a++) {
			const struct template_info *hit = find(t, n, argv[a], err, sizeof(err));
			bool again = false; /* named twice: removed once */
			for (int b = 1; b < a; b++)
				again |= find(t, n, argv[b], err, sizeof(err)) == hit;
			rc = again ? 0 : template_remove(hit->name, err, sizeof(err));
		}
	}
	free(t);
	if (rc < 0) {
		fprintf(stderr, "bulkhead template rm: %s\n", err);
		return 125;
	}
	return 0;
}

int cmd_template(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(template_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 125 : 0;
	}
	if (!strcmp(argv[1], "ls"))
		return ls(argc - 1, argv + 1);
	if (!strcmp(argv[1], "rm"))
		return rm(argc - 1, argv + 1);
	fprintf(stderr, "bulkhead template: no command '%s' (ls, rm)\n", argv[1]);
	return 125;
}
