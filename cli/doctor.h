/* SPDX-License-Identifier: Apache-2.0 */
/* cli/doctor.h: `bulkhead doctor` and its jail check. */
#ifndef BULKHEAD_CLI_DOCTOR_H
#define BULKHEAD_CLI_DOCTOR_H

#include <stdbool.h>

/* doctor_jail.c: prints the "jail:" line (a jailed process started for real) and the
 * "cgroups:" line. Returns -1 when the jail cannot run here (sessions would fail). */
int doctor_print_jail(void);

/* `bulkhead doctor`: one fact a line; exit 0 when some engine works and the jail runs. */
int cmd_doctor(int argc, char **argv);

#endif
