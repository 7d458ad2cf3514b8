/* SPDX-License-Identifier: Apache-2.0 */
/* session/request_fields.c: the table of a session request's fields (request_fields.h). */
#include "session/request_fields.h"

#include "session/plan.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AT(member)    offsetof(struct session_request, member)
#define UINT(lo, hi)  .type = REQ_UINT, .min = (lo), .max = (hi)
#define LIST(member, n) .type = REQ_LIST, .off = AT(member), .count_off = AT(n), .max = SHARE_RULES_MAX

const struct request_field request_fields[] = {
	{ .flag = "engine", .metavar = "auto|kvm|qemu", .type = REQ_OWN, .off = AT(engine),
	  .help = "which VMM runs the guest (default auto: see 'bulkhead doctor')" },
	{ .key = "mem_mib", .flag = "mem", .metavar = "MIB", UINT(REQ_MEM_MIN_MIB, REQ_MEM_MAX_MIB),
	  .off = AT(mem_mib), .deflt = REQ_MEM_DEFAULT_MIB, .help = "guest memory" },
	{ .key = "cpus", .flag = "cpus", .metavar = "N", UINT(1, REQ_CPUS_MAX), .off = AT(cpus),
	  .deflt = 1, .help = "vCPUs" },
	{ .key = "timeout_s", .flag = "timeout", .metavar = "S", .type = REQ_SECONDS, .min = 0,
	  .max = REQ_TIMEOUT_MAX_S, .off = AT(timeout_s), .bind = REQ_AFTER_BOOT,
	  .help = "stop the VM after S seconds (exit 124)" },
	{ .flag = "boot-timeout", .metavar = "S", UINT(1, REQ_BOOT_TIMEOUT_MAX_S),
	  .off = AT(boot_timeout_s), .deflt = BOOT_TIMEOUT_DEFAULT_S,
	  .help = "the guest must be up within S seconds, else the session fails (exit 125)" },
	{ .key = "work", .flag = "work", .metavar = "DIR[:ro]", .type = REQ_TEXT, .off = AT(work),
	  .help = "share DIR with the guest at /work (CMD starts there); :ro makes it read-only, "
		  "enforced on the host" },
	{ .key = "work_rules", .flag = "work-rule", .metavar = "PATH:MODE",
	  LIST(work_rules, nwork_rules),
	  .help = "inside the share, PATH (relative) is rw, ro or hidden; the most specific rule "
		  "wins, the share's mode is the default; enforced on the host (repeatable)" },
	{ .key = "share_secrets", .flag = "share-secrets", .metavar = "refuse|hide",
	  .type = REQ_CHOICE, .choices = "refuse|hide", .off = AT(share_secrets),
	  .help = "credential files found in the share (.env, a token in .git/config, keys, "
		  ".npmrc, ...): refuse to start, naming them (default), or hide them from the "
		  "guest" },
	{ .key = "share_secrets_allow", .flag = "share-allow", .metavar = "PATH",
	  LIST(share_allow, nshare_allow),
	  .help = "share PATH as it is, credential or not (repeatable)" },
	{ .key = "image", .flag = "image", .metavar = "NAME", .type = REQ_TEXT, .off = AT(image),
	  .help = "run on image NAME ('bulkhead image ls') as the root: read-only, with a private "
		  "write layer; its PATH, HOME, user and working directory apply, and its command "
		  "when CMD is not given" },
	{ .flag = "disk", .metavar = "MIB", UINT(REQ_DISK_MIN_MIB, REQ_DISK_MAX_MIB),
	  .off = AT(disk_mib), .deflt = SHARE_IMAGE_DISK_MIB,
	  .help = "the write layer's size (it counts against --mem-limit)" },
	{ .flag = "keep-changes", .metavar = "DIR", .type = REQ_TEXT, .off = AT(keep_changes),
	  .help = "the write layer in DIR (new or empty; made 0700: it holds the guest's files), "
		  "left there afterwards" },
	{ .key = "scope", .flag = "scope", .metavar = "FILE", .type = REQ_TEXT,
	  .off = AT(broker.scope),
	  .help = "the session's network scope: broker rules (JSON); without it the guest "
		  "reaches nothing" },
	{ .key = "vault", .flag = "vault", .metavar = "FILE", .type = REQ_TEXT,
	  .off = AT(broker.vault), .help = "secrets for the scope's rules (see 'bulkhead vault')" },
	{ .key = "ca_file", .flag = "ca-file", .metavar = "FILE", .type = REQ_TEXT,
	  .off = AT(broker.ca_file), .help = "trust only this CA for the broker's upstream TLS" },
	{ .key = "audit", .flag = "audit", .metavar = "FILE", .type = REQ_TEXT,
	  .off = AT(broker.audit),
	  .help = "the broker's audit log (default: one per session under "
		  "~/.local/state/bulkhead/audit/; 'bulkhead audit verify')" },
	{ .flag = "policy", .metavar = "FILE", .type = REQ_TEXT, .off = AT(policy),
	  .help = "the global policy (default /etc/bulkhead/policy.json when it exists): what no "
		  "session may do, limits, approval rules" },
	{ .key = "broker", .flag = "broker", .metavar = "SOCK", .type = REQ_TEXT,
	  .off = AT(broker.shared),
	  .help = "register with a shared broker ('bulkhead broker') at its control socket SOCK "
		  "instead of starting a private one (default: $BULKHEAD_BROKER when set)" },
	{ .key = "env", .flag = "env", .short_flag = 'e', .metavar = "KEY=VALUE", .type = REQ_OWN,
	  .off = AT(env), .max = RUN_MAX_ENV, .bind = REQ_AFTER_BOOT,
	  .help = "set an environment variable for CMD (not for secrets)" },
	{ .flag = "interactive", .short_flag = 'i', .type = REQ_FLAG, .off = AT(interactive),
	  .bind = REQ_AFTER_BOOT, .help = "forward our stdin to CMD (else CMD reads /dev/null)" },
	{ .flag = "tty", .short_flag = 't', .type = REQ_FLAG, .off = AT(tty),
	  .bind = REQ_AFTER_BOOT,
	  .help = "run CMD on a pseudo-terminal (with -i: an interactive shell)" },
	{ .flag = "kernel", .metavar = "PATH", .type = REQ_TEXT, .off = AT(kernel),
	  .help = "guest kernel: ELF vmlinux or bzImage" },
	{ .flag = "initrd", .metavar = "PATH", .type = REQ_TEXT, .off = AT(initrd),
	  .help = "guest initramfs" },
	{ .flag = "console", .metavar = "FILE", .type = REQ_TEXT, .off = AT(console_path),
	  .help = "write the guest's whole serial console to FILE" },
	{ .flag = "verbose", .short_flag = 'v', .type = REQ_FLAG, .off = AT(verbose),
	  .help = "show the guest's serial console on stderr" },
	{ .key = "mem_limit_mib", .flag = "mem-limit", .metavar = "MIB",
	  UINT(REQ_MEM_MIN_MIB, REQ_MEM_LIMIT_MAX_MIB), .off = AT(mem_limit_mib),
	  .help = "host memory the whole session may use: guest RAM, VMM and back ends (default: "
		  "--mem + 512); over it, it ends" },
	{ .flag = "template", .type = REQ_FLAG, .off = AT(template),
	  .help = "kvm engine: start by restoring a template of this session's shape (kernel, "
		  "initramfs, memory, vCPUs, shares), booted once and kept in the cache; the first "
		  "such session makes it" },
	{ .flag = "no-jail", .type = REQ_FLAG, .off = AT(no_jail),
	  .help = "start the VM and its back ends unjailed (debugging only; a global policy may "
		  "forbid it)" },
	{ .flag = "jail-uid", .metavar = "UID[:GID]", .type = REQ_TEXT, .off = AT(jail_uid),
	  .help = "as root: the ids the jailed VM and back ends run as (default: a free one of "
		  "the session's own)" },
	{ .flag = "bind-later", .type = REQ_FLAG, .off = AT(bind_later),
	  .help = "boot with a broker that allows nothing, and wait for a scope on the run "
		  "directory's bind.sock ('bulkhead serve' pools guests so)" },
	{ .flag = "ram-file", .metavar = "FILE", .type = REQ_OWN, .off = AT(ram_file),
	  .help = "back guest RAM with FILE (new; qemu engine) and keep it after the session: what "
		  "the guest held, for inspection" },
};
const size_t request_nfields = sizeof(request_fields) / sizeof(request_fields[0]);

const struct request_field *request_field_by_key(const char *key)
{
	for (size_t i = 0; i < request_nfields; i++)
		if (request_fields[i].key && !strcmp(request_fields[i].key, key))
			return &request_fields[i];
	return NULL;
}

const struct request_field *request_field_by_flag(const char *flag)
{
	for (size_t i = 0; i < request_nfields; i++)
		if (request_fields[i].flag && !strcmp(request_fields[i].flag, flag))
			return &request_fields[i];
	return NULL;
}

/* What F takes, for a message: "MIB, 64 to 65536". */
static void takes(const struct request_field *f, char *buf, size_t len)
{
	switch (f->type) {
	case REQ_UINT:
		snprintf(buf, len, "%s, %.0f to %.0f", f->metavar, f->min, f->max);
		break;
	case REQ_SECONDS:
		snprintf(buf, len, "seconds, more than %g and at most %.0f", f->min, f->max);
		break;
	case REQ_CHOICE:
		snprintf(buf, len, "%s", f->choices);
		break;
	default:
		snprintf(buf, len, "%s", f->metavar ? f->metavar : "no value");
	}
}

int request_field_number_ok(const struct request_field *f, double v, char *err, size_t errlen)
{
	bool fits = f->type == REQ_UINT	     ? v >= f->min && v <= f->max && v == floor(v)
		    : f->type == REQ_SECONDS ? v > f->min && v <= f->max
					     : false;
	if (fits)
		return 0;
	const char *name = f->key ? f->key : f->flag;
	if (f->type == REQ_UINT)
		snprintf(err, errlen, "\"%s\" must be a whole number from %.0f to %.0f", name,
			 f->min, f->max);
	else
		snprintf(err, errlen, "\"%s\" must be a number more than %g and at most %.0f",
			 name, f->min, f->max);
	return -1;
}

bool request_field_choice_ok(const struct request_field *f, const char *text)
{
	size_t n = strlen(text);
	for (const char *c = f->choices; c && *c;) {
		const char *end = strchr(c, '|');
		size_t len = end ? (size_t)(end - c) : strlen(c);
		if (n && n == len && !strncmp(c, text, n))
			return true;
		c = end ? end + 1 : c + len;
	}
	return false;
}

int request_field_set(struct session_request *r, const struct request_field *f, const char *name,
		      const char *text, char *err, size_t errlen)
{
	char *at = (char *)r + f->off, *end, what[96];
	double v;

	takes(f, what, sizeof(what));
	errno = 0;
	switch (f->type) {
	case REQ_UINT:
		if (!*text || strspn(text, "0123456789") != strlen(text) || strlen(text) > 12)
			break; /* digits only: no sign, no exponent, no hex */
		v = strtod(text, &end);
		if (request_field_number_ok(f, v, err, errlen))
			break;
		*(unsigned *)(void *)at = (unsigned)v;
		return 0;
	case REQ_SECONDS:
		v = strtod(text, &end);
		if (errno || end == text || *end || request_field_number_ok(f, v, err, errlen))
			break;
		*(double *)(void *)at = v;
		return 0;
	case REQ_CHOICE:
		if (!request_field_choice_ok(f, text))
			break;
		*(const char **)(void *)at = text;
		return 0;
	case REQ_TEXT:
		if (!*text)
			break;
		*(const char **)(void *)at = text;
		return 0;
	case REQ_LIST: {
		size_t *n = (size_t *)(void *)((char *)r + f->count_off);
		if (!*text)
			break;
		if (*n >= (size_t)f->max) {
			snprintf(err, errlen, "%s: more than %.0f", name, f->max);
			return -1;
		}
		((const char **)(void *)at)[(*n)++] = text;
		return 0;
	}
	case REQ_FLAG:
		*(bool *)(void *)at = true;
		return 0;
	case REQ_OWN:
		break;
	}
	snprintf(err, errlen, "%s: expected %s", name, what);
	return -1;
}

/* One option's words after its column, wrapped at 88 with the column kept. */
static void help_words(FILE *out, const char *words, int col)
{
	const int width = 88;
	int at = col;
	for (const char *w = words; *w;) {
		size_t len = strcspn(w, " ");
		if (at > col && at + 1 + (int)len > width) {
			fprintf(out, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', out);
			at++;
		}
		fprintf(out, "%.*s", (int)len, w);
		at += (int)len;
		w += len;
		while (*w == ' ')
			w++;
	}
	fputc('\n', out);
}

void request_fields_help(FILE *out)
{
	const int col = 26;
	for (size_t i = 0; i < request_nfields; i++) {
		const struct request_field *f = &request_fields[i];
		char head[64], words[512], shortf[8] = "";
		if (!f->flag)
			continue;
		if (f->short_flag)
			snprintf(shortf, sizeof(shortf), "-%c, ", f->short_flag);
		int n = snprintf(head, sizeof(head), "  %s--%s%s%s", shortf, f->flag,
				 f->metavar ? " " : "", f->metavar ? f->metavar : "");
		if (f->type == REQ_UINT && f->deflt)
			snprintf(words, sizeof(words), "%s; %.0f..%.0f, default %u", f->help,
				 f->min, f->max, f->deflt);
		else if (f->type == REQ_UINT)
			snprintf(words, sizeof(words), "%s; %.0f..%.0f", f->help, f->min, f->max);
		else
			snprintf(words, sizeof(words), "%s", f->help);
		if (n >= col - 1)
			fprintf(out, "%s\n%*s", head, col, "");
		else
			fprintf(out, "%-*s", col, head);
		help_words(out, words, col);
	}
}

void request_fields_json(FILE *out)
{
	static const char *const types[] = { "uint", "seconds", "text", "choice",
					     "list", "flag", "own" };
	json_t *all = json_array();
	for (size_t i = 0; i < request_nfields; i++) {
		const struct request_field *f = &request_fields[i];
		json_t *o = json_pack("{s:s?, s:s?, s:s, s:s}", "key", f->key, "flag", f->flag,
				      "type", types[f->type], "bind",
				      f->bind == REQ_AT_BOOT ? "boot" : "after_boot");
		if (f->type == REQ_UINT || f->type == REQ_SECONDS || f->type == REQ_LIST ||
		    (f->type == REQ_OWN && f->max > 0)) {
			json_object_set_new(o, "min", json_real(f->min));
			json_object_set_new(o, "max", json_real(f->max));
		}
		if (f->choices)
			json_object_set_new(o, "choices", json_string(f->choices));
		if (f->deflt)
			json_object_set_new(o, "default", json_integer(f->deflt));
		json_array_append_new(all, o);
	}
	json_dumpf(all, out, JSON_INDENT(1));
	fputc('\n', out);
	json_decref(all);
}
