/* SPDX-License-Identifier: Apache-2.0 */
/* oci/bundle.c: config.json and process.json into struct oci_bundle (see bundle.h). Every
 * field is checked for its type and bounds here, so that nothing downstream sees a value the
 * session could not hold. */
#include "oci/bundle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IDS_MAX 65536 /* the ids the root's server maps (session/share_image.c) */

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

bool oci_id_valid(const char *id)
{
	size_t n = strlen(id);
	/* Not starting with '-' (every command must be able to name it after its options) or
	 * '.' (hidden, and "." and ".."). */
	if (n == 0 || n > OCI_ID_MAX || id[0] == '-' || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("_.+-", c)))
			return false;
	}
	return true;
}

/* An optional id field of USER: 0..IDS_MAX-1. */
static int get_id(json_t *user, const char *key, unsigned *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(user, key);
	*out = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= IDS_MAX)
		return bad(err, errlen, "process.user.%s: an id from 0 to %d", key, IDS_MAX - 1);
	*out = (unsigned)json_integer_value(v);
	return 0;
}

static int parse_user(json_t *user, struct image_config *c, char *err, size_t errlen)
{
	unsigned uid, gid;
	if (user && !json_is_object(user))
		return bad(err, errlen, "process.user: not an object");
	if (get_id(user, "uid", &uid, err, errlen) < 0 ||
	    get_id(user, "gid", &gid, err, errlen) < 0)
		return -1;
	c->uid = uid;
	c->gid = gid;
	json_t *g = json_object_get(user, "additionalGids"), *v;
	size_t i;
	if (!g)
		return 0;
	if (!json_is_array(g) || json_array_size(g) > IMAGE_GIDS_MAX)
		return bad(err, errlen, "process.user.additionalGids: at most %d ids",
			   IMAGE_GIDS_MAX);
	json_array_foreach(g, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= IDS_MAX)
			return bad(err, errlen, "process.user.additionalGids: ids from 0 to %d",
				   IDS_MAX - 1);
		c->gids[c->ngids++] = (gid_t)json_integer_value(v);
	}
	return 0;
}

/* args and env: arrays of strings within the image limits (no newline in env: the exec
 * protocol's and the run directory's format). */
static int parse_strings(json_t *a, const char *what, char **out, size_t max, size_t *n, char *err,
			 size_t errlen)
{
	json_t *v;
	size_t i, bytes = 0;
	if (!json_is_array(a) || json_array_size(a) > max)
		return bad(err, errlen, "process.%s: an array of at most %zu strings", what, max);
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || strlen(s) > OCI_PROCESS_BYTES || strlen(s) != json_string_length(v))
			return bad(err, errlen, "process.%s[%zu]: a string of at most %d bytes",
				   what, i, OCI_PROCESS_BYTES);
		bytes += strlen(s) + 1;
		if (strcmp(what, "env") == 0 &&
		    (strchr(s, '\n') || !strchr(s, '=') || s[0] == '=' || bytes > IMAGE_ENV_BYTES))
			return bad(err, errlen,
				   "process.env[%zu]: KEY=VALUE without a newline, all within %d "
				   "bytes",
				   i, IMAGE_ENV_BYTES);
		out[i] = (char *)s;
	}
	*n = json_array_size(a);
	out[*n] = NULL;
	return 0;
}

int oci_process_parse(json_t *o, struct oci_process *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (!json_is_object(o))
		return bad(err, errlen, "process: missing or not an object");
	json_t *args = json_object_get(o, "args"), *env = json_object_get(o, "env");
	if (!args ||
	    parse_strings(args, "args", p->cfg.cmd, IMAGE_CMD_MAX, &p->cfg.ncmd, err, errlen) < 0)
		return args ? -1 : bad(err, errlen, "process.args: missing");
	if (p->cfg.ncmd == 0)
		return bad(err, errlen, "process.args: empty (no command to run)");
	if (env &&
	    parse_strings(env, "env", p->cfg.env, IMAGE_ENV_MAX, &p->cfg.nenv, err, errlen) < 0)
		return -1;
	const char *cwd = json_string_value(json_object_get(o, "cwd"));
	if (!cwd || cwd[0] != '/' || strlen(cwd) >= sizeof(p->cfg.cwd))
		return bad(err, errlen, "process.cwd: an absolute path is required");
	snprintf(p->cfg.cwd, sizeof(p->cfg.cwd), "%s", cwd);
	json_t *t = json_object_get(o, "terminal");
	if (t && !json_is_boolean(t))
		return bad(err, errlen, "process.terminal: not a boolean");
	p->terminal = json_is_true(t);
	json_t *cs = json_object_get(o, "consoleSize");
	if (cs) {
		json_t *h = json_object_get(cs, "height"), *w = json_object_get(cs, "width");
		if (!json_is_integer(h) || !json_is_integer(w) || json_integer_value(h) < 0 ||
		    json_integer_value(h) > 65535 || json_integer_value(w) < 0 ||
		    json_integer_value(w) > 65535)
			return bad(err, errlen, "process.consoleSize: height and width 0..65535");
		p->rows = (unsigned)json_integer_value(h);
		p->cols = (unsigned)json_integer_value(w);
	}
	size_t bytes = strlen(p->cfg.cwd);
	for (size_t i = 0; i < p->cfg.ncmd; i++)
		bytes += strlen(p->cfg.cmd[i]) + 1;
	for (size_t i = 0; i < p->cfg.nenv; i++)
		bytes += strlen(p->cfg.env[i]) + 1;
	if (bytes > OCI_PROCESS_BYTES)
		return bad(
			err, errlen,
			"process: args, env and cwd take %zu bytes; the guest's exec request holds "
			"%d",
			bytes, OCI_PROCESS_BYTES);
	return parse_user(json_object_get(o, "user"), &p->cfg, err, errlen);
}

int oci_process_load(const char *path, json_t **doc, struct oci_process *p, char *err,
		     size_t errlen)
{
	json_error_t je;
	*doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!*doc)
		return bad(err, errlen, "%s: line %d: %s", path, je.line, je.text);
	if (oci_process_parse(*doc, p, err, errlen) < 0) {
		json_decref(*doc);
		*doc = NULL;
		return -1;
	}
	return 0;
}

/* linux.resources: memory.limit into guest RAM, cpu quota/period or cpuset into vCPUs. */
static int parse_resources(struct oci_bundle *b, json_t *res, char *err, size_t errlen)
{
	b->mem_mib = OCI_MEM_DFLT_MIB;
	b->cpus = 1;
	if (!res)
		return 0;
	json_t *limit = json_object_get(json_object_get(res, "memory"), "limit");
	if (limit && (!json_is_integer(limit)))
		return bad(err, errlen, "linux.resources.memory.limit: not an integer");
	if (limit && json_integer_value(limit) > 0) {
		json_int_t mib = json_integer_value(limit) >> 20;
		if (mib < OCI_MEM_MIN_MIB || mib > OCI_MEM_MAX_MIB)
			return bad(err, errlen,
				   "linux.resources.memory.limit: %lld MiB; a microVM takes %d to "
				   "%d MiB",
				   (long long)mib, OCI_MEM_MIN_MIB, OCI_MEM_MAX_MIB);
		b->mem_mib = (unsigned)mib;
	}
	json_t *cpu = json_object_get(res, "cpu");
	json_t *quota = json_object_get(cpu, "quota"), *period = json_object_get(cpu, "period");
	if (json_is_integer(quota) && json_integer_value(quota) > 0 && json_is_integer(period) &&
	    json_integer_value(period) > 0) {
		json_int_t q = json_integer_value(quota), per = json_integer_value(period);
		json_int_t n = q / per + (q % per ? 1 : 0);
		b->cpus = n > OCI_CPUS_MAX ? OCI_CPUS_MAX : (unsigned)n;
	}
	return 0;
}

/* Whether DEST is the guest's own: its kernel's file systems and /run. */
static bool guest_provides(const char *dest, const char *type)
{
	static const char *const kernel_fs[] = { "proc",   "sysfs",   "devpts", "mqueue",
						 "cgroup", "cgroup2", NULL };
	for (size_t i = 0; kernel_fs[i]; i++)
		if (strcmp(type, kernel_fs[i]) == 0)
			return true;
	return strcmp(dest, "/dev") == 0 || strncmp(dest, "/dev/", 5) == 0 ||
	       strcmp(dest, "/run") == 0 || strcmp(dest, "/sys") == 0 ||
	       strncmp(dest, "/sys/", 5) == 0 || strcmp(dest, "/proc") == 0;
}

/* The caller's plumbing for a networked container, meaningless in a guest without network. */
static bool network_file(const char *dest)
{
	static const char *const files[] = { "/etc/resolv.conf", "/etc/hosts", "/etc/hostname",
					     "/run/.containerenv", NULL };
	for (size_t i = 0; files[i]; i++)
		if (strcmp(dest, files[i]) == 0)
			return true;
	return false;
}

static bool has_option(json_t *m, const char *opt)
{
	json_t *opts = json_object_get(m, "options"), *v;
	size_t i;
	json_array_foreach(opts, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), opt) == 0)
			return true;
	}
	return false;
}

static void note(struct oci_bundle *b, const char *dest, const char *why)
{
	if (b->nnotes == OCI_NOTES_MAX)
		return;
	snprintf(b->note_buf[b->nnotes], sizeof(b->note_buf[0]), "%.*s: %s", PATH_MAX - 1, dest,
		 why);
	b->notes[b->nnotes] = b->note_buf[b->nnotes];
	b->nnotes++;
}

static int parse_mount(struct oci_bundle *b, json_t *m, size_t i, char *err, size_t errlen)
{
	const char *dest = json_string_value(json_object_get(m, "destination"));
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *src = json_string_value(json_object_get(m, "source"));
	if (!dest || dest[0] != '/' || strlen(dest) >= PATH_MAX)
		return bad(err, errlen, "mounts[%zu].destination: an absolute path is required", i);
	bool bind = (type && strcmp(type, "bind") == 0) || has_option(m, "bind") ||
		    has_option(m, "rbind");
	if (!type)
		type = bind ? "bind" : "";
	if (!bind && guest_provides(dest, type)) {
		note(b, dest, "the guest's own");
		return 0;
	}
	if (!bind && strcmp(type, "tmpfs") == 0 && strcmp(dest, "/tmp") == 0) {
		note(b, dest, "the root's own /tmp");
		return 0;
	}
	if (!bind)
		return bad(
			err, errlen,
			"mounts[%zu]: %s (type %s) is not supported: bulkhead-oci serves bind "
			"mounts of a directory and leaves /proc, /sys, /dev and /run to the guest",
			i, dest, type[0] ? type : "none");
	if (network_file(dest)) {
		note(b, dest, "not used: the guest has no network");
		return 0;
	}
	if (strncmp(dest, "/dev/", 5) == 0) { /* /dev/shm, Kubernetes' /dev/termination-log */
		note(b, dest, "not used: the guest's own /dev");
		return 0;
	}
	struct stat st;
	if (!src || src[0] != '/' || stat(src, &st) < 0)
		return bad(err, errlen, "mounts[%zu]: %s: source %s: %s", i, dest,
			   src ? src : "(none)",
			   src && src[0] == '/' ? strerror(errno) : "an absolute path is required");
	if (!S_ISDIR(st.st_mode))
		return bad(err, errlen,
			   "mounts[%zu]: %s: a bind mount of a file (%s) is not supported: only "
			   "directories are shared with the guest",
			   i, dest, src);
	if (b->nbinds == OCI_BINDS_MAX)
		return bad(
			err, errlen,
			"mounts[%zu]: %s: at most %d directories may be bind-mounted (a virtio-fs "
			"device each)",
			i, dest, OCI_BINDS_MAX);
	b->binds[b->nbinds].src = src;
	b->binds[b->nbinds].dest = dest;
	b->binds[b->nbinds].ro = has_option(m, "ro");
	b->nbinds++;
	return 0;
}

static int parse_annotations(struct oci_bundle *b, json_t *a, char *err, size_t errlen)
{
	if (!a)
		return 0;
	if (!json_is_object(a))
		return bad(err, errlen, "annotations: not an object");
	static const char *const keys[] = { "io.bulkhead.scope", "io.bulkhead.broker",
					    "io.bulkhead.vault", "io.bulkhead.ca-file",
					    "io.bulkhead.audit" };
	const char **out[] = { &b->scope, &b->broker, &b->vault, &b->ca_file, &b->audit };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(a, keys[i]);
		if (v && (!json_is_string(v) || json_string_length(v) == 0 ||
			  strlen(json_string_value(v)) != json_string_length(v)))
			return bad(err, errlen, "annotation %s: a non-empty string", keys[i]);
		*out[i] = json_string_value(v);
		/* Files and sockets of the host: absolute, as the caller's working directory is
		 * not the bundle's. The scope may also be the JSON itself. */
		if (*out[i] && (*out[i])[0] != '/' && !(i == 0 && (*out[i])[0] == '{'))
			return bad(err, errlen, "annotation %s: an absolute path%s", keys[i],
				   i == 0 ? " or inline JSON" : "");
	}
	json_t *v = json_object_get(a, "io.bulkhead.share-secrets");
	if (v && (!json_is_string(v) || (strcmp(json_string_value(v), "refuse") &&
					 strcmp(json_string_value(v), "hide"))))
		return bad(err, errlen, "annotation io.bulkhead.share-secrets: refuse or hide");
	b->share_secrets = json_string_value(v);
	return 0;
}

static int parse_root(struct oci_bundle *b, json_t *root, char *err, size_t errlen)
{
	const char *path = json_string_value(json_object_get(root, "path"));
	if (!path || !path[0])
		return bad(err, errlen, "root.path: missing");
	char given[PATH_MAX];
	int n = path[0] == '/' ? snprintf(given, sizeof(given), "%s", path)
			       : snprintf(given, sizeof(given), "%s/%s", b->dir, path);
	if (n < 0 || (size_t)n >= sizeof(given))
		return bad(err, errlen, "root.path: too long");
	/* Resolved here, as runc resolves it: the root is served by what it names. */
	struct stat st;
	if (!realpath(given, b->root) || stat(b->root, &st) < 0)
		return bad(err, errlen, "root.path %s: %s", given, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return bad(err, errlen, "root.path %s: not a directory", b->root);
	json_t *ro = json_object_get(root, "readonly");
	if (ro && !json_is_boolean(ro))
		return bad(err, errlen, "root.readonly: not a boolean");
	b->root_ro = json_is_true(ro);
	return 0;
}

int oci_bundle_load(struct oci_bundle *b, const char *dir, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	char path[PATH_MAX + 16];
	if (!realpath(dir, b->dir))
		return bad(err, errlen, "bundle %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/config.json", b->dir);
	struct stat st;
	if (stat(path, &st) < 0)
		return bad(err, errlen, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return bad(err, errlen, "%s: not a regular file", path);
	json_error_t je;
	b->doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!b->doc)
		return bad(err, errlen, "%s: line %d: %s", path, je.line, je.text);
	json_t *c = b->doc, *mounts = json_object_get(c, "mounts"), *m;
	if (!json_is_object(c))
		return bad(err, errlen, "%s: not a JSON object", path);
	if (!json_is_string(json_object_get(c, "ociVersion")))
		return bad(err, errlen, "%s: ociVersion: missing", path);
	if (parse_root(b, json_object_get(c, "root"), err, errlen) < 0 ||
	    oci_process_parse(json_object_get(c, "process"), &b->proc, err, errlen) < 0 ||
	    parse_resources(b, json_object_get(json_object_get(c, "linux"), "resources"), err,
			    errlen) < 0 ||
	    parse_annotations(b, json_object_get(c, "annotations"), err, errlen) < 0)
		return -1;
	json_t *h = json_object_get(c, "hostname");
	if (h && !json_is_string(h))
		return bad(err, errlen, "hostname: not a string");
	b->hostname = json_string_length(h) ? json_string_value(h) : NULL;
	if (mounts && !json_is_array(mounts))
		return bad(err, errlen, "mounts: not an array");
	size_t i;
	json_array_foreach(mounts, i, m)
	{
		if (!json_is_object(m))
			return bad(err, errlen, "mounts[%zu]: not an object", i);
		if (parse_mount(b, m, i, err, errlen) < 0)
			return -1;
	}
	return 0;
}

void oci_bundle_free(struct oci_bundle *b)
{
	json_decref(b->doc);
	b->doc = NULL;
}
