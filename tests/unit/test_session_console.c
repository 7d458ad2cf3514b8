/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/test_session_console.c: what a session says of its engine's end
 * (session/session_console.c): the engine's own last line, not a back end's complaint after it. */
#include "session/session_console.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The diagnostics pipe as the session reads it, holding TEXT. */
static void feed(struct session_console *c, const char *text)
{
	int p[2];
	bool open_ = true;
	memset(c, 0, sizeof(*c));
	c->file = -1;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
	close(p[1]);
	while (open_)
		console_read_diag(c, p[0], &open_);
	close(p[0]);
}

static void test_last_diag(void **state)
{
	(void)state;
	struct session_console c;
	feed(&c, "bulkhead-vmm: snapshot: the RAM's CRC does not match\n"
		 "virtio_loop: Unexpected poll revents 11\n");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"),
			    "bulkhead-vmm: snapshot: the RAM's CRC does not match");
	/* The VMM's notes after its reason are not the reason. */
	feed(&c, "bulkhead-vmm: guest shut down (triple fault) on vCPU 0\n"
		 "bulkhead-vmm: note: unknown accesses: port 1 reads, 0 writes\n");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"),
			    "bulkhead-vmm: guest shut down (triple fault) on vCPU 0");
	feed(&c, "bulkhead-vmm: first\nbulkhead-vmm: second\r\nother\n");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"), "bulkhead-vmm: second");
	/* QEMU's lines name the binary: "qemu-system-x86_64: ...". */
	feed(&c, "qemu-system-x86_64: -kernel: no such file\nvirtiofsd: gone\n");
	assert_string_equal(console_last_diag(&c, "qemu"),
			    "qemu-system-x86_64: -kernel: no such file");
	/* Nothing of the engine's, or no label: the last line. */
	feed(&c, "virtiofsd: one\nvirtiofsd: two\n");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"), "virtiofsd: two");
	feed(&c, "bulkhead-vmmx: not ours\nlast\n");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"), "last");
	feed(&c, "only\n");
	assert_string_equal(console_last_diag(&c, NULL), "only");
	feed(&c, "");
	assert_string_equal(console_last_diag(&c, "bulkhead-vmm"), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_last_diag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
