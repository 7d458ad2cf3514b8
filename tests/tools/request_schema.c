/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tools/request_schema.c: prints the table of a session request's fields
 * (session/request_fields.h) as JSON, for tests/e2e/test_request_schema.sh to check the
 * API's documents against. */
#include "session/request_fields.h"

#include <stdio.h>

int main(void)
{
	request_fields_json(stdout);
	return ferror(stdout) ? 1 : 0;
}
