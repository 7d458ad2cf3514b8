/* SPDX-License-Identifier: Apache-2.0 */
/* image/image_cmd.c: `bulkhead image build|import|ls|rm` — the dispatch, and the two commands
 * that only read or unlink: ls lists names, rm removes one (and its image when no other name
 * points at it, moved out of sha256/ under the store lock before it is deleted). */
#include "image/image_internal.h"
#include "lib/errbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char image_usage[] =
	"usage: bulkhead image COMMAND\n"
	"\n"
	"  build NAME [--suite S] [--packages P,...] [--mirror FILE]\n"
	"                            a Debian root made with mmdebstrap (needs root)\n"
	"  import NAME FILE|DIR      a docker-archive, an OCI archive or an OCI layout\n"
	"  ls [--json]               name, digest, size, created, source of every image (--json:\n"
	"                            'bulkhead image ls --help')\n"
	"  rm NAME                   remove a name (and its image when no other name has it)\n"
	"\n"
	"The store: ${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-~/.cache}/bulkhead}/images. Images are\n"
	"made aside in its tmp/ and appear whole or not at all. A build or import may fill at\n"
	"most 16 GiB of its file system ($BULKHEAD_IMAGE_MAX_MIB to change) and leaves it\n"
	"512 MiB free: a hostile archive cannot fill the disk.\n"
	"'bulkhead image build --help' and 'bulkhead image import --help' say more.\n"
	"\n"
	"Exit status: 0 done; 125 failed (one line on stderr says why); 128+N interrupted by\n"
	"signal N (nothing is left half-made in the store).\n";

static const char ls_usage[] =
	"usage: bulkhead image ls [--json]\n"
	"\n"
	"One line per image name, sorted: NAME, DIGEST (sha256: and 12 hex digits), SIZE (MiB),\n"
	"CREATED (UTC), SOURCE (what it was built or imported from); or 'NAME damaged: why'.\n"
	"--json: one JSON array of the same, an object per name:\n"
	"  {\"name\", \"digest\": \"sha256:<64 hex>\", \"size\": bytes the root takes on disk "
	"(hard\n"
	"   links once), \"created\": \"YYYY-MM-DDTHH:MM:SSZ\", \"source\"}\n"
	"  or {\"name\", \"damaged\": why} for a name whose image cannot be read.\n"
	"An empty or missing store is [] (no line). Exit status: 0, or 125 when the store cannot "
	"be\n"
	"read.\n";

static int name_filter(const struct dirent *e)
{
	return image_name_check(e->d_name, NULL, 0) == 0;
}

static void ls_row(struct image_store *s, const char *name, json_t *out)
{
	struct image_meta m;
	struct image_config cfg;
	char hex[IMAGE_HEX_LEN + 1], why[512];
	int t = image_name_target(s, name, hex);

	if (t < 0)
		snprintf(why, sizeof(why), "names/%s: %s", name,
			 t == -EINVAL ? "not a link to ../sha256/<hex>" : strerror(-t));
	else if (image_load(s, hex, &m, &cfg, why, sizeof(why)) == 0)
		image_config_free(&cfg);
	else
		t = -1;
	if (out && t == 0)
		json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:s, s:s}", "name", name,
						     "digest", m.digest, "size", (json_int_t)m.size,
						     "created", m.created, "source", m.source));
	else if (out)
		json_array_append_new(out, json_pack("{s:s, s:s}", "name", name, "damaged", why));
	else if (t == 0)
		printf("%-20s %.19s  %9.1f MiB  %s  %s\n", name, m.digest,
		       (double)m.size / (1 << 20), m.created, m.source);
	else
		printf("%-20s damaged: %s\n", name, why);
}

static int cmd_ls(int argc, char **argv)
{
	int json = argc == 2 && strcmp(argv[1], "--json") == 0;
	struct image_store s;
	struct dirent **names = NULL;
	char err[512];
	int n = 0;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(ls_usage, stdout);
		return 0;
	}
	if (argc > 2 || (argc == 2 && !json)) {
		fputs("usage: bulkhead image ls [--json] (see 'bulkhead image ls --help')\n",
		      stderr);
		return 125;
	}
	/* A store that does not exist yet holds no images: not an error. */
	int o = image_store_open(&s, 0, err, sizeof(err));
	if (o == 0) {
		int nfd = openat(s.fd, "names", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (nfd >= 0) {
			n = scandirat(nfd, ".", &names, name_filter, alphasort);
			close(nfd);
		}
	} else if (o != -ENOENT) {
		fprintf(stderr, "bulkhead image ls: %s\n", err);
		return 125;
	}
	json_t *out = json ? json_array() : NULL;
	if (!json && n > 0)
		printf("%-20s %-19s  %13s  %-20s  %s\n", "NAME", "DIGEST", "SIZE", "CREATED",
		       "SOURCE");
	for (int i = 0; i < n; i++) {
		ls_row(&s, names[i]->d_name, out);
		free(names[i]);
	}
	free(names);
	if (out) {
		char *text = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", text ? text : "[]");
		free(text);
		json_decref(out);
	}
	image_store_close(&s);
	return 0;
}

/* Whether any name but the removed one still points at HEX. */
static int still_named(struct image_store *s, const char *hex)
{
	int nfd = openat(s->fd, "names", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = nfd < 0 ? NULL : fdopendir(nfd);
	struct dirent *e;
	char other[IMAGE_HEX_LEN + 1];
	int found = d ? 0 : 1; /* when in doubt, keep the image */

	while (d && !found && (e = readdir(d)))
		found = name_filter(e) && image_name_target(s, e->d_name, other) == 0 &&
			strcmp(other, hex) == 0;
	if (d)
		closedir(d);
	else if (nfd >= 0)
		close(nfd);
	return found;
}

static int rm_locked(struct image_store *s, const char *name, struct image_work *w, char *err,
		     size_t errlen)
{
	char hex[IMAGE_HEX_LEN + 1], path[IMAGE_HEX_LEN + 16];
	int t = image_name_target(s, name, hex);

	if (t == -ENOENT)
		return errbuf_fail(err, errlen, -1, "no image named '%s' (see 'bulkhead image ls')",
				   name);
	snprintf(path, sizeof(path), "names/%s", name);
	if (unlinkat(s->fd, path, 0) < 0)
		return errbuf_fail(err, errlen, -1, "cannot remove %s/%s: %s", s->dir, path,
				   strerror(errno));
	if (t < 0 || still_named(s, hex))
		return 0;
	snprintf(path, sizeof(path), "sha256/%s", hex);
	if (image_work_begin(s, "rm", w, err, errlen) < 0)
		return -1;
	if (renameat(s->fd, path, w->fd, "img") < 0 && errno != ENOENT)
		return errbuf_fail(err, errlen, -1, "cannot remove %s/%s: %s", s->dir, path,
				   strerror(errno));
	return 0;
}

static int cmd_rm(int argc, char **argv)
{
	struct image_store s = { .fd = -1 };
	struct image_work w = { .fd = -1, .lockfd = -1 };
	char err[1024] = "";
	int rc = -1, lock = -1;

	if (argc != 2) {
		fputs("usage: bulkhead image rm NAME\n", stderr);
		return 125;
	}
	if (image_name_check(argv[1], err, sizeof(err)) < 0)
		goto out;
	int o = image_store_open(&s, 0, err, sizeof(err));
	if (o == -ENOENT)
		snprintf(err, sizeof(err), "no image named '%s' (there is no image store yet)",
			 argv[1]);
	if (o < 0 || (lock = image_store_lock(&s, err, sizeof(err))) < 0)
		goto out;
	rc = rm_locked(&s, argv[1], &w, err, sizeof(err));
	close(lock);
	if (w.dir[0])
		image_work_end(&w); /* the image's files go after the lock is released */
out:
	image_store_close(&s);
	if (rc < 0)
		fprintf(stderr, "bulkhead image rm: %s\n", err);
	return rc < 0 ? 125 : 0;
}

int image_cmd(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(image_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 125 : 0;
	}
	image_signals_catch();
	if (strcmp(argv[1], "build") == 0)
		return image_build_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "import") == 0)
		return image_import_cmd(argc - 1, argv + 1);
	if (strcmp(argv[1], "ls") == 0)
		return cmd_ls(argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0)
		return cmd_rm(argc - 1, argv + 1);
	fprintf(stderr, "bulkhead image: unknown command '%s' (see 'bulkhead image --help')\n",
		argv[1]);
	return 125;
}
