/* SPDX-License-Identifier: Apache-2.0 */
/* cli/vault_cmd.c: `bulkhead vault init|put|list|rm|rotate-key` — edits the broker's vault.
 * Secret values come only from stdin or --from-file, never argv or the environment. */
#include "cli/broker_cmds.h"
#include "broker/cred.h"
#include "broker/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define EXIT_VAULT_FAILED 125

static const char vault_usage[] =
	"usage: bulkhead vault COMMAND [OPTIONS]\n"
	"\n"
	"  init                 create an empty vault (and a new key file if there is none)\n"
	"  put NAME             store NAME; the value is read from stdin (hidden when it is a\n"
	"                       terminal) or --from-file FILE; one trailing newline is dropped\n"
	"                       unless --raw\n"
	"    --kind KIND        static (the default: the value is injected as it is), or an\n"
	"                       entry from which the broker obtains what it injects; its\n"
	"                       value is a JSON object (checked here) with the keys:\n"
	"                       oauth2-refresh: token_url client_id refresh_token, and\n"
	"                         client_secret scope client_auth allow_addresses if needed\n"
	"                       oauth2-client-credentials: token_url client_id client_secret,\n"
	"                         and scope client_auth allow_addresses if needed\n"
	"                       github-app: app_id installation_id private_key (PEM), and\n"
	"                         api_url (https://api.github.com) allow_addresses if needed\n"
	"                       aws-sigv4: access_key_id secret_access_key, and\n"
	"                         session_token if needed (the broker signs with it);\n"
	"                         with role_arn, and sts_url sts_region duration_seconds\n"
	"                         allow_addresses if needed, each session's own from STS\n"
	"                       (URLs https only; client_auth \"basic\" or \"body\")\n"
	"  list                 names, sizes, update times and kinds (never values); for an\n"
	"                       OAuth 2 entry, its token as the broker last said (VAULT.state)\n"
	"  rm NAME              remove NAME\n"
	"  rotate-key           re-encrypt under --new-key-file FILE (made if missing) or\n"
	"                       --new-passphrase-file FILE; the old key stops working\n"
	"\n"
	"  --vault FILE            default ${XDG_CONFIG_HOME:-~/.config}/bulkhead/vault\n"
	"  --key-file FILE         32 random bytes as 64 hex digits, mode 0600\n"
	"                          (default: the vault's path + \".key\")\n"
	"  --passphrase-file FILE  a mode-0600 file holding a passphrase (scrypt, N=2^17 r=8 p=1)\n"
	"\n"
	"NAME is 1-64 of A-Z a-z 0-9 _ . - (not starting with . or -). Values are never taken\n"
	"from the command line or the environment, and never printed.\n"
	"\n"
	"Exit status: 0 done; 125 failed (one line on stderr says what and what to do).\n";

struct vopts {
	const char *vault, *key_file, *pass_file, *new_key_file, *new_pass_file, *from_file;
	bool raw;
	int kind; /* enum vault_kind */
	char vault_buf[PATH_MAX], key_buf[PATH_MAX];
};

static int fail(const char *msg)
{
	fprintf(stderr, "bulkhead vault: %s\n", msg);
	return EXIT_VAULT_FAILED;
}

/* The default vault lives in the user's config directory, created private (0700). */
static int default_vault(struct vopts *o)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];
	int n;
	if (xdg && *xdg == '/')
		n = snprintf(dir, sizeof(dir), "%s", xdg);
	else if (home && *home == '/')
		n = snprintf(dir, sizeof(dir), "%s/.config", home);
	else
		return fail("neither XDG_CONFIG_HOME nor HOME is set; give --vault FILE");
	if (n < 0 || (size_t)n >= sizeof(dir) - 16)
		return fail("config directory path is too long; give --vault FILE");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "bulkhead vault: cannot create %s: %s\n", dir, strerror(errno));
		return EXIT_VAULT_FAILED;
	}
	strcat(dir, "/bulkhead");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "bulkhead vault: cannot create %s: %s\n", dir, strerror(errno));
		return EXIT_VAULT_FAILED;
	}
	snprintf(o->vault_buf, sizeof(o->vault_buf), "%s/vault", dir);
	o->vault = o->vault_buf;
	return 0;
}

static int load_cred(const char *key_file, const char *pass_file, struct vault_cred **c)
{
	char err[512];
	int rc = pass_file ? vault_cred_load(VAULT_CRED_PASSPHRASE, pass_file, c, err, sizeof(err))
			   : vault_cred_load(VAULT_CRED_KEY_FILE, key_file, c, err, sizeof(err));
	return rc < 0 ? fail(err) : 0;
}

/* Reads a value into locked memory: from a terminal one hidden line, else to end of file.
 * read(2) straight into the locked buffer, so no stdio buffer holds a copy. */
static int read_value(int fd, bool tty, unsigned char *buf, size_t *len)
{
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, VAULT_VALUE_MAX + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > VAULT_VALUE_MAX)
			return -EFBIG;
		if (tty && buf[got - 1] == '\n')
			break;
	}
	*len = got;
	return 0;
}

static int get_value(const struct vopts *o, const char *name, unsigned char *buf, size_t *len)
{
	int fd = 0, rc;
	bool tty = false;
	struct termios saved;
	if (o->from_file) {
		fd = open(o->from_file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "bulkhead vault: cannot open %s: %s\n", o->from_file,
				strerror(errno));
			return EXIT_VAULT_FAILED;
		}
	} else if (isatty(0) && tcgetattr(0, &saved) == 0) {
		struct termios quiet = saved;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		quiet.c_lflag |= ECHONL;
		fprintf(stderr, "value for %s (not shown; end with Enter): ", name);
		tty = tcsetattr(0, TCSAFLUSH, &quiet) == 0;
	}
	rc = read_value(fd, tty, buf, len);
	if (tty)
		tcsetattr(0, TCSAFLUSH, &saved);
	if (o->from_file)
		close(fd);
	if (rc < 0) {
		fprintf(stderr, "bulkhead vault: cannot read the value from %s: %s\n",
			o->from_file ? o->from_file : "stdin",
			rc == -EFBIG ? "longer than 65536 bytes" : strerror(-rc));
		return EXIT_VAULT_FAILED;
	}
	if (!o->raw && *len && buf[*len - 1] == '\n')
		(*len)--;
	if (!o->raw && *len && buf[*len - 1] == '\r')
		(*len)--;
	if (*len == 0)
		return fail("the value is empty; pipe it on stdin or give --from-file FILE");
	return 0;
}

static int do_init(struct vopts *o)
{
	char err[512];
	struct stat st;
	if (lstat(o->vault, &st) == 0) {
		fprintf(stderr,
			"bulkhead vault: %s already exists; remove it first to start anew\n",
			o->vault);
		return EXIT_VAULT_FAILED;
	}
	if (!o->pass_file && lstat(o->key_file, &st) < 0 && errno == ENOENT) {
		if (vault_key_file_create(o->key_file, err, sizeof(err)) < 0)
			return fail(err);
		fprintf(stderr,
			"bulkhead vault: made key file %s; keep a copy apart from the vault\n",
			o->key_file);
	}
	struct vault_cred *c;
	if (load_cred(o->key_file, o->pass_file, &c))
		return EXIT_VAULT_FAILED;
	int rc = vault_create(o->vault, c, NULL, err, sizeof(err));
	vault_cred_free(c);
	if (rc < 0)
		return fail(err);
	printf("created vault %s\n", o->vault);
	return 0;
}

/* "1h2m", "40s": an interval for people. */
static void span(long long s, char *out, size_t n)
{
	if (s >= 3600)
		snprintf(out, n, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(out, n, "%lldm%02llds", s / 60, s % 60);
	else
		snprintf(out, n, "%llds", s);
}

/* What the broker last said of NAME's token (VAULT.state, written by bulkhead-broker): never a
 * value, only its id, expiry, last refresh and last error. */
static void token_state(json_t *state, const char *name)
{
	const char *key;
	json_t *e;
	long long now = (long long)time(NULL);

	json_object_foreach(state, key, e)
	{
		size_t nl = strlen(name);
		long long exp = json_integer_value(json_object_get(e, "expires_at"));
		long long last = json_integer_value(json_object_get(e, "last_refresh"));
		const char *id = json_string_value(json_object_get(e, "token_id"));
		const char *err = json_string_value(json_object_get(e, "last_error"));
		const char *scope = json_string_value(json_object_get(e, "scope"));
		char a[32], b[32];

		if (strncmp(key, name, nl) || (key[nl] && key[nl] != ' '))
			continue;
		printf("    token%s%s: ", scope ? " for scope " : "", scope ? scope : "");
		span(exp - now, a, sizeof(a));
		span(now - last, b, sizeof(b));
		if (!id)
			printf("none held");
		else if (exp > now)
			printf("%s, expires in %s", id, a);
		else if (exp)
			printf("%s, expired", id);
		else
			printf("%s, no expiry given", id);
		if (last)
			printf(", refreshed %s ago", b);
		if (err)
			printf(", last error: %s", err);
		printf("\n");
	}
}

static int do_list(struct vault *v, const char *vault_path)
{
	char state_path[PATH_MAX + 8];
	json_t *state = NULL;

	if (snprintf(state_path, sizeof(state_path), "%s.state", vault_path) <
	    (int)sizeof(state_path))
		state = json_load_file(state_path, 0, NULL);
	for (size_t i = 0; i < vault_count(v); i++) {
		struct vault_entry_info e;
		vault_entry(v, i, &e);
		char when[32];
		time_t t = (time_t)e.updated;
		struct tm tm;
		if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(when, sizeof(when), "?");
		printf("%-32s %6zu bytes  updated %s  %s\n", e.name, e.size, when,
		       cred_kind_name(e.kind));
		if (e.kind != VAULT_KIND_STATIC && e.kind != VAULT_KIND_AWS_SIGV4 &&
		    json_is_object(state))
			token_state(state, e.name);
	}
	json_decref(state);
	return 0;
}

static int run(const char *sub, const char *name, struct vopts *o)
{
	char err[512];
	struct vault_cred *c = NULL, *nc = NULL;
	struct vault *v = NULL;
	unsigned char *val = NULL;
	size_t len = 0;
	int rc = EXIT_VAULT_FAILED;
	bool put = strcmp(sub, "put") == 0, list = strcmp(sub, "list") == 0;
	bool rotate = strcmp(sub, "rotate-key") == 0;

	if (rotate && !o->new_key_file == !o->new_pass_file)
		return fail(
			"rotate-key needs one of --new-key-file FILE, --new-passphrase-file FILE");
	if (rotate && o->new_key_file && !o->pass_file && strcmp(o->new_key_file, o->key_file) == 0)
		return fail("the new key file must differ from the current one");
	if (load_cred(o->key_file, o->pass_file, &c))
		return EXIT_VAULT_FAILED;
	if (put) {
		/* The value first, so the vault is not locked while someone types. */
		val = vault_secret_alloc(VAULT_VALUE_MAX + 1);
		if (!val) {
			rc = fail("out of memory for the value");
			goto out;
		}
		if (get_value(o, name, val, &len))
			goto out;
		if (o->kind != VAULT_KIND_STATIC) {
			struct cred_doc d;

			if (cred_doc_parse((enum vault_kind)o->kind, val, len, &d, err,
					   sizeof(err))) {
				rc = fail(err);
				goto out;
			}
			cred_doc_free(&d);
		}
	}
	if (vault_open(o->vault, c, list ? VAULT_RDONLY : VAULT_RDWR, &v, err, sizeof(err)) < 0) {
		rc = fail(err);
		goto out;
	}
	if (list) {
		rc = do_list(v, o->vault);
	} else if (put) {
		if (vault_put_kind(v, name, (enum vault_kind)o->kind, val, len, err, sizeof(err)) <
		    0)
			rc = fail(err);
		else
			rc = printf("stored %s (%zu bytes, %s)\n", name, len,
				    cred_kind_name((enum vault_kind)o->kind)) < 0
				     ? EXIT_VAULT_FAILED
				     : 0;
	} else if (rotate) {
		struct stat st;
		if (o->new_key_file && lstat(o->new_key_file, &st) < 0 && errno == ENOENT) {
			/* The new key is on disk (fsynced) before the vault depends on it. */
			if (vault_key_file_create(o->new_key_file, err, sizeof(err)) < 0) {
				rc = fail(err);
				goto out;
			}
			fprintf(stderr, "bulkhead vault: made key file %s\n", o->new_key_file);
		}
		if (load_cred(o->new_key_file, o->new_pass_file, &nc))
			goto out;
		if (vault_rekey(v, nc, NULL, err, sizeof(err)) < 0)
			rc = fail(err);
		else
			rc = printf("vault %s now opens with %s only\n", o->vault,
				    o->new_key_file ? o->new_key_file : o->new_pass_file) < 0
				     ? EXIT_VAULT_FAILED
				     : 0;
	} else {
		if (vault_rm(v, name, err, sizeof(err)) < 0)
			rc = fail(err);
		else
			rc = printf("removed %s\n", name) < 0 ? EXIT_VAULT_FAILED : 0;
	}
out:
	vault_close(v);
	vault_secret_free(val, VAULT_VALUE_MAX + 1);
	vault_cred_free(c);
	vault_cred_free(nc);
	return rc;
}

int cmd_vault(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "vault", required_argument, NULL, 'v' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "passphrase-file", required_argument, NULL, 'p' },
		{ "new-key-file", required_argument, NULL, 'K' },
		{ "new-passphrase-file", required_argument, NULL, 'P' },
		{ "from-file", required_argument, NULL, 'f' },
		{ "raw", no_argument, NULL, 'r' },
		{ "kind", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vopts o = { 0 };
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(vault_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_VAULT_FAILED : 0;
	}
	const char *sub = argv[1];
	/* Our own messages: getopt's would echo a mistyped option, which may hold a value. */
	opterr = 0;
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v':
			o.vault = optarg;
			break;
		case 'k':
			o.key_file = optarg;
			break;
		case 'p':
			o.pass_file = optarg;
			break;
		case 'K':
			o.new_key_file = optarg;
			break;
		case 'P':
			o.new_pass_file = optarg;
			break;
		case 'f':
			o.from_file = optarg;
			break;
		case 'r':
			o.raw = true;
			break;
		case 'i':
			if ((o.kind = cred_kind_of(optarg)) < 0)
				return fail("--kind is static, oauth2-refresh, "
					    "oauth2-client-credentials, github-app or aws-sigv4");
			break;
		case 'h':
			fputs(vault_usage, stdout);
			return 0;
		default:
			return fail(
				"unknown option or missing argument (see 'bulkhead vault --help')");
		}
	}
	int npos = argc - 1 - optind;
	char **pos = argv + 1 + optind;
	bool named = strcmp(sub, "put") == 0 || strcmp(sub, "rm") == 0;
	if (!named && strcmp(sub, "init") != 0 && strcmp(sub, "list") != 0 &&
	    strcmp(sub, "rotate-key") != 0)
		return fail("unknown command (see 'bulkhead vault --help')");
	if (named && npos != 1)
		/* Extra words are not echoed: they may be a value typed where it does not belong.
		 */
		return fail("put and rm take exactly one NAME; a value is read from stdin or "
			    "--from-file, never from the command line");
	if (!named && npos != 0)
		return fail("this command takes no arguments (see 'bulkhead vault --help')");
	if (named && !vault_name_valid(pos[0]))
		return fail("secret name not allowed: use 1-64 of A-Z a-z 0-9 _ . - (not starting "
			    "with . or -)");
	if (o.key_file && o.pass_file)
		return fail("give --key-file or --passphrase-file, not both");
	if ((o.from_file || o.raw || o.kind) && strcmp(sub, "put") != 0)
		return fail("--from-file, --raw and --kind go with put");
	if ((o.new_key_file || o.new_pass_file) && strcmp(sub, "rotate-key") != 0)
		return fail("--new-key-file and --new-passphrase-file go with rotate-key");
	if (!o.vault && default_vault(&o))
		return EXIT_VAULT_FAILED;
	if (!o.key_file && !o.pass_file) {
		if (snprintf(o.key_buf, sizeof(o.key_buf), "%s.key", o.vault) >=
		    (int)sizeof(o.key_buf))
			return fail("vault path is too long");
		o.key_file = o.key_buf;
	}
	if (strcmp(sub, "init") == 0)
		return do_init(&o);
	cred_json_wipe_on_free(); /* a typed entry's document is parsed with jansson */
	return run(sub, named ? pos[0] : NULL, &o);
}
