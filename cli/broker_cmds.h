/* SPDX-License-Identifier: Apache-2.0 */
/* cli/broker_cmds.h: the CLI's commands for the credential broker's state: the vault and
 * the audit log. */
#ifndef BULKHEAD_CLI_BROKER_CMDS_H
#define BULKHEAD_CLI_BROKER_CMDS_H

/* `bulkhead vault init|put|list|rm|rotate-key` (cli/vault_cmd.c): 0, or 125 with one line. */
int cmd_vault(int argc, char **argv);
/* `bulkhead audit verify FILE` (cli/audit_cmd.c): 0 intact, 1 broken, 125 failed. */
int cmd_audit(int argc, char **argv);
/* `bulkhead broker [--control PATH] [bulkhead-broker options]` (cli/broker_cmd.c): runs the
 * shared broker in the foreground; sessions register with `bulkhead run --broker PATH`. */
int cmd_broker(int argc, char **argv);
/* broker_cmd.c: `bulkhead serve`: runs bulkhead-serve (serve/). */
int cmd_serve(int argc, char **argv);
/* `bulkhead policy check|explain` (cli/policy_cmd.c). */
int cmd_policy(int argc, char **argv);
/* cli/policy_share.c: `bulkhead policy share`, what a session sharing a directory would get. */
int policy_share(int argc, char **argv);
/* `bulkhead approvals list|show|approve|deny` (cli/approvals_cmd.c). */
int cmd_approvals(int argc, char **argv);

#endif
