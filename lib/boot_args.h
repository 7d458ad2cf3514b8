/* lib/boot_args.h: how the host hands a command to bulkhead-init on the kernel
 * command line (v1), until the vsock exec agent takes over.
 *
 *   bulkhead.argv=HEX   the command: argv strings, each NUL-terminated, hex-encoded
 *   bulkhead.env=HEX    extra environment: "KEY=VALUE" strings, same encoding
 *   bulkhead.agent=1    no command here: start the vsock exec agent (lib/agent_proto.h)
 *                       and run what the host sends, until the host ends the session
 *   bulkhead.work=rw|ro the virtio-fs tag "work" is to be mounted at /work, and
 *                       the command starts there (ro is also enforced on the host)
 *
 * Hex keeps every byte (spaces, quotes, UTF-8) intact through the kernel's
 * parameter parser, which has no escaping. The x86 command line holds 2048
 * bytes, which bounds the command; the host refuses longer ones up front.
 */
#ifndef BULKHEAD_LIB_BOOT_ARGS_H
#define BULKHEAD_LIB_BOOT_ARGS_H

#include <stddef.h>

#define BOOT_ARGS_ARGV	      "bulkhead.argv="
#define BOOT_ARGS_ENV	      "bulkhead.env="
#define BOOT_ARGS_WORK	      "bulkhead.work="
#define BOOT_ARGS_AGENT	      "bulkhead.agent=1"
#define BOOT_ARGS_CMDLINE_MAX 2048 /* COMMAND_LINE_SIZE on x86, including the NUL */
#define BOOT_ARGS_MAX_STRINGS 256

/* Appends hex(strs[0] NUL strs[1] NUL ...) to out (NUL-terminated).
 * Returns 0, or -1 when it does not fit in outlen. */
int boot_args_encode(char *out, size_t outlen, char *const strs[], size_t n);

/* Decodes hex[0..len) into a freshly allocated block and a NULL-terminated
 * array pointing into it (free both with boot_args_free). Returns the number
 * of strings, or -1 on bad hex, a missing final NUL, an empty string list
 * entry count above BOOT_ARGS_MAX_STRINGS, or no memory. */
int boot_args_decode(const char *hex, size_t len, char ***strs_out);
void boot_args_free(char **strs);

#endif
