/* SPDX-License-Identifier: Apache-2.0 */
/* cli/audit_cmd.c: `bulkhead audit verify FILE` — checks that every line of an audit log
 * parses and that the hash chain links, and names the first line where it does not. */
#include "cli/broker_cmds.h"
#include "broker/audit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define EXIT_AUDIT_BROKEN 1
#define EXIT_AUDIT_FAILED 125

static const char audit_usage[] =
	"usage: bulkhead audit verify FILE\n"
	"\n"
	"Checks the broker's audit log: every line is a JSON object whose \"prev\" is the\n"
	"SHA-256 of the line before (the first line's, of \"" AUDIT_GENESIS "\").\n"
	"Prints 'FILE: N lines, chain intact, head HASH' or 'FILE:LINE: why' for the first\n"
	"broken line. Keep HASH somewhere else: the chain alone cannot show that lines were\n"
	"cut from the end, but a head that no longer appears can.\n"
	"\n"
	"Exit status: 0 intact; 1 the chain is broken (the line is named); 125 usage or I/O\n"
	"error (one line on stderr).\n";

int cmd_audit(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(audit_usage, stdout);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "verify") != 0) {
		fputs(audit_usage, stderr);
		return EXIT_AUDIT_FAILED;
	}
	const char *path = argv[2];
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "bulkhead audit: cannot open %s: %s\n", path, strerror(errno));
		return EXIT_AUDIT_FAILED;
	}
	size_t n, bad;
	char head[AUDIT_HASH_HEX + 1], why[256];
	int rc = audit_verify(f, &n, &bad, head, why, sizeof(why));
	fclose(f);
	if (rc < 0) {
		fprintf(stderr, "bulkhead audit: cannot read %s: %s\n", path, strerror(-rc));
		return EXIT_AUDIT_FAILED;
	}
	if (rc > 0) {
		printf("%s:%zu: chain broken: %s\n", path, bad, why);
		return EXIT_AUDIT_BROKEN;
	}
	printf("%s: %zu lines, chain intact, head %s\n", path, n, head);
	return 0;
}
