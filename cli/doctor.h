/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor.h: `bulkhead doctor` (and --json) and its jail check. */
#ifndef BULKHEAD_CLI_DOCTOR_H
#define BULKHEAD_CLI_DOCTOR_H

#include <jansson.h>

/* doctor.c: a string of one part of the facts, or dflt when it is null or missing. */
const char *doctor_str(const json_t *part, const char *key, const char *dflt);

/* doctor_jail.c: the "jail" part (a jailed process started for real) and the "cgroups" part
 * of the facts, and their text lines. The jail failing means sessions would fail here. */
void doctor_jail_find(json_t *facts);
void doctor_jail_say(const json_t *facts);

/* `bulkhead doctor [--json]`: one fact a line, or all as one JSON object; exit 0 when some
 * engine works and the jail runs. */
int cmd_doctor(int argc, char **argv);

#endif
