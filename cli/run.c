/* cli/run.c: `bulkhead run` — parse options, check inputs, start the engine,
 * and hand the guest to the session loop. */
#include "cli/run.h"
#include "cli/broker_dev.h"
#include "jail/cgroup.h"
#include "jail/jail.h"
#include "cli/paths.h"
#include "jail/proc.h"
#include "cli/rundir.h"
#include "cli/share_fs.h"
#include "cli/vsock_dev.h"
#include "broker/rules.h"
#include "lib/agent_proto.h"
#include "lib/boot_args.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MEM_MIN_MIB 64
#define MEM_MAX_MIB (64 * 1024)
#define CPUS_MAX    32

static const char usage[] =
	"usage: bulkhead %s [OPTIONS]%s\n"
	"%s\n"
	"\n"
	"  --engine auto|kvm|qemu  which VMM runs the guest (default auto: see 'bulkhead doctor')\n"
	"  --mem MIB               guest memory, %d..%d (default 256)\n"
	"  --cpus N                vCPUs, 1..%d (default 1)\n"
	"  --timeout S             stop the VM after S seconds (exit 124)\n"
	"  --boot-timeout S        the guest must be up within S seconds, else the session\n"
	"                          fails (exit 125; default %d)\n"
	"  --work DIR[:ro]         share DIR with the guest at /work (CMD starts there);\n"
	"                          :ro makes it read-only, enforced on the host\n"
	"  --scope FILE            the session's network scope: broker rules (JSON); without\n"
	"                          it the guest reaches nothing\n"
	"  --vault FILE            secrets for the scope's rules (see 'bulkhead vault')\n"
	"  --ca-file FILE          trust only this CA for the broker's upstream TLS\n"
	"  --audit FILE            the broker's audit log (default: one per session under\n"
	"                          ~/.local/state/bulkhead/audit/; 'bulkhead audit verify')\n"
	"  --policy FILE           the global policy (default /etc/bulkhead/policy.json when it\n"
	"                          exists): what no session may do, limits, approval rules\n"
	"  --broker SOCK           register with a shared broker ('bulkhead broker') at its\n"
	"                          control socket SOCK instead of starting a private one\n"
	"                          (default: $BULKHEAD_BROKER when set)\n"
	"  -e, --env KEY=VALUE     set an environment variable for CMD (not for secrets)\n"
	"  -i, --interactive       forward our stdin to CMD (else CMD reads /dev/null)\n"
	"  -t, --tty               run CMD on a pseudo-terminal (with -i: an interactive shell)\n"
	"  --kernel PATH           guest kernel: ELF vmlinux or bzImage\n"
	"  --initrd PATH           guest initramfs\n"
	"  --console FILE          write the guest's whole serial console to FILE\n"
	"  -v, --verbose           show the guest's serial console on stderr\n"
	"  --mem-limit MIB         host memory the whole session may use: guest RAM, VMM and\n"
	"                          back ends (default: --mem + 512); over it, it ends\n"
	"  --no-jail               start the VM and its back ends unjailed (debugging only; a\n"
	"                          global policy may forbid it)\n"
	"  --jail-uid UID[:GID]    as root: the ids the jailed VM and back ends run as\n"
	"                          (default: a free one of the session's own, from %u)\n"
	"  --ram-file FILE         back guest RAM with FILE (new; qemu engine) and keep it\n"
	"                          after the session: what the guest held, for inspection\n"
	"\n"
	"Exit codes: CMD's own; 128+N if CMD died by signal N; 124 timeout; 125 bulkhead failed.\n";

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bulkhead run: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see 'bulkhead run --help')\n");
	va_end(ap);
	return EXIT_BULKHEAD;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct run_opts *o, bool detached)
{
	enum {
		OPT_ENGINE = 256,
		OPT_MEM,
		OPT_CPUS,
		OPT_TIMEOUT,
		OPT_BOOT_TIMEOUT,
		OPT_KERNEL,
		OPT_INITRD,
		OPT_CONSOLE,
		OPT_WORK,
		OPT_SCOPE,
		OPT_VAULT,
		OPT_CA_FILE,
		OPT_AUDIT,
		OPT_BROKER,
		OPT_RAM_FILE,
		OPT_POLICY,
		OPT_NO_JAIL,
		OPT_JAIL_UID,
		OPT_MEM_LIMIT
	};
	static const struct option longopts[] = {
		{ "engine", required_argument, NULL, OPT_ENGINE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "boot-timeout", required_argument, NULL, OPT_BOOT_TIMEOUT },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		{ "initrd", required_argument, NULL, OPT_INITRD },
		{ "console", required_argument, NULL, OPT_CONSOLE },
		{ "work", required_argument, NULL, OPT_WORK },
		{ "scope", required_argument, NULL, OPT_SCOPE },
		{ "vault", required_argument, NULL, OPT_VAULT },
		{ "ca-file", required_argument, NULL, OPT_CA_FILE },
		{ "audit", required_argument, NULL, OPT_AUDIT },
		{ "broker", required_argument, NULL, OPT_BROKER },
		{ "ram-file", required_argument, NULL, OPT_RAM_FILE },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "no-jail", no_argument, NULL, OPT_NO_JAIL },
		{ "jail-uid", required_argument, NULL, OPT_JAIL_UID },
		{ "mem-limit", required_argument, NULL, OPT_MEM_LIMIT },
		{ "env", required_argument, NULL, 'e' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option, which starts the guest command. */
	while ((c = getopt_long(argc, argv, "+e:vhit", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ENGINE:
			if (engine_parse(optarg, &o->engine) < 0)
				return bad("--engine '%s': expected auto, kvm or qemu", optarg);
			break;
		case OPT_MEM:
			if (parse_uint(optarg, MEM_MIN_MIB, MEM_MAX_MIB, &o->mem_mib) < 0)
				return bad("--mem '%s': expected MiB between %d and %d", optarg,
					   MEM_MIN_MIB, MEM_MAX_MIB);
			break;
		case OPT_CPUS:
			if (parse_uint(optarg, 1, CPUS_MAX, &o->cpus) < 0)
				return bad("--cpus '%s': expected 1 to %d", optarg, CPUS_MAX);
			break;
		case OPT_TIMEOUT:
			errno = 0;
			o->timeout_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->timeout_s > 0) ||
			    o->timeout_s > 1e7)
				return bad("--timeout '%s': expected seconds > 0", optarg);
			break;
		case OPT_BOOT_TIMEOUT:
			if (parse_uint(optarg, 1, 86400, &o->boot_timeout_s) < 0)
				return bad("--boot-timeout '%s': expected seconds, 1 to 86400",
					   optarg);
			break;
		case OPT_KERNEL:
			o->kernel = optarg;
			break;
		case OPT_INITRD:
			o->initrd = optarg;
			break;
		case OPT_CONSOLE:
			o->console_path = optarg;
			break;
		case OPT_SCOPE:
			o->broker.scope = optarg;
			break;
		case OPT_VAULT:
			o->broker.vault = optarg;
			break;
		case OPT_CA_FILE:
			o->broker.ca_file = optarg;
			break;
		case OPT_AUDIT:
			o->broker.audit = optarg;
			break;
		case OPT_BROKER:
			o->broker.shared = optarg;
			break;
		case OPT_POLICY:
			o->policy = optarg;
			break;
		case OPT_NO_JAIL:
			o->no_jail = true;
			break;
		case OPT_JAIL_UID:
			o->jail_uid = optarg;
			break;
		case OPT_MEM_LIMIT:
			if (parse_uint(optarg, 64, 1 << 22, &o->mem_limit_mib) < 0)
				return bad("--mem-limit '%s': expected MiB, 64 or more", optarg);
			break;
		case OPT_RAM_FILE:
			if (!*optarg || strchr(optarg, ','))
				return bad("--ram-file '%s': expected a path without commas",
					   optarg);
			o->ram_file = optarg;
			break;
		case OPT_WORK:
			o->work = optarg;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return bad("--env '%s': expected KEY=VALUE", optarg);
			if (o->nenv == RUN_MAX_ENV)
				return bad("--env: more than %d variables", RUN_MAX_ENV);
			o->env[o->nenv++] = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'i':
			o->interactive = true;
			break;
		case 't':
			o->tty = true;
			break;
		case 'h':
			printf(usage, detached ? "start" : "run",
			       detached ? "" : " [--] CMD [ARG...]",
			       detached ? "Starts a session in a fresh microVM and prints its id; "
					  "run "
					  "commands in it with\n'bulkhead exec ID -- CMD', stop it "
					  "with "
					  "'bulkhead stop ID'."
					: "Runs CMD in a fresh microVM; its stdout/stderr become "
					  "ours, "
					  "its exit code ours.",
			       MEM_MIN_MIB, MEM_MAX_MIB, CPUS_MAX, BOOT_TIMEOUT_DEFAULT_S,
			       JAIL_UID_FIRST);
			return 0;
		case ':':
			return bad("option '%s' needs a value", argv[optind - 1]);
		default:
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->no_jail && o->jail_uid)
		return bad("--jail-uid and --no-jail do not go together");
	if (!o->broker.shared && getenv("BULKHEAD_BROKER") && *getenv("BULKHEAD_BROKER"))
		o->broker.shared = getenv("BULKHEAD_BROKER");
	if (o->broker.shared && !o->broker.scope)
		o->broker.shared = NULL; /* no scope: no way out, so nothing to register */
	if (o->broker.shared && (o->broker.vault || o->broker.ca_file || o->broker.audit))
		return bad("--vault, --ca-file and --audit belong to the shared broker "
			   "(bulkhead broker) when --broker or BULKHEAD_BROKER is given");
	if (optind >= argc)
		return detached ? -1 : bad("no command given");
	if (detached)
		return bad(
			"bulkhead start takes no command; run one with 'bulkhead exec ID -- CMD'");
	o->argv = argv + optind;
	o->argc = (size_t)(argc - optind);
	return -1; /* parsed; go on */
}

/* Accepts an ELF vmlinux or a bzImage; anything else is a clear error. */
static int check_kernel(const char *path)
{
	unsigned char hdr[0x210];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bulkhead: kernel %s: %s (run 'make' or pass --kernel)\n", path,
			strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, hdr, sizeof(hdr));
	close(fd);
	bool elf = n >= 4 && memcmp(hdr, "\177ELF", 4) == 0;
	bool bz = n >= 0x206 && memcmp(hdr + 0x202, "HdrS", 4) == 0;
	if (!elf && !bz) {
		fprintf(stderr, "bulkhead: kernel %s: not an ELF vmlinux or a bzImage\n", path);
		return -1;
	}
	return 0;
}

static int check_readable(const char *what, const char *path)
{
	if (access(path, R_OK) == 0)
		return 0;
	fprintf(stderr, "bulkhead: %s %s: %s (run 'make' or pass --%s)\n", what, path,
		strerror(errno), what);
	return -1;
}

/* Kernel parameters: console on ttyS0, panic -> reboot -> VM exit, the command.
 * The reboot method is the engine's exit path: QEMU (-no-reboot) exits on a triple fault,
 * bulkhead-vmm on the i8042 reset (reboot=k). Hosts that emulate guest kernel mode need the
 * kvm engine quirks of docs/ENVIRONMENT.md (QEMU's TCG has no such gaps). */
int run_kernel_cmdline(const struct engine_choice *c, bool quiet, const char *work_mode, char *buf,
		       size_t len)
{
	bool kvm = c->kind == ENGINE_KVM;
	/* reboot=k for bulkhead-vmm (its i8042 reset is the clean exit), a triple
	 * fault for QEMU (-no-reboot turns it into an exit; microvm has no i8042). */
	int n = snprintf(buf, len,
			 "console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=%s rdinit=/init "
			 "tsc=reliable no_timer_check%s%s%s%s",
			 kvm ? "k" : "t",
			 kvm && c->kvm_emulated ? " noxsave clearcpuid=smap,smep,pku,umip,popcnt"
						: "",
			 quiet ? " quiet" : "", work_mode ? " " BOOT_ARGS_WORK : "",
			 work_mode ? work_mode : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A shared back end whose connection ends the session when it closes: FD becomes readable
 * (end of file) then. The guest's copy is a duplicate, closed with the backends. */
static void add_backend_fd(struct guest *g, const char *name, int fd)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd >= 0 && g->nbackends < GUEST_MAX_BACKENDS) {
		g->backends[g->nbackends].name = name;
		g->backends[g->nbackends++].pidfd = dfd;
	} else if (dfd >= 0) {
		close(dfd);
	}
}

/* A device back end whose death ends the session. */
static void add_backend(struct guest *g, const char *name, pid_t pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0 && g->nbackends < GUEST_MAX_BACKENDS) {
		g->backends[g->nbackends].name = name;
		g->backends[g->nbackends++].pidfd = pfd;
	}
}

/* Everything after option parsing, for `run` and `start` alike. notify_fd (or
 * -1): where a detached session writes its id once the guest is ready. */
static int session_main(struct run_opts *o_, int notify_fd)
{
	struct run_opts o = *o_;
	char kernel[PATH_MAX], initrd[PATH_MAX];
	if (!o.kernel) {
		/* The ELF vmlinux boots faster than the bzImage (no decompression): QEMU enters
		 * it through its PVH note, bulkhead-vmm loads it directly. */
		paths_join(kernel, sizeof(kernel), paths_libdir(), "vmlinux");
		o.kernel = kernel;
	}
	if (!o.initrd) {
		paths_join(initrd, sizeof(initrd), paths_libdir(), "initramfs.cpio");
		o.initrd = initrd;
	}
	if (check_kernel(o.kernel) < 0 || check_readable("initrd", o.initrd) < 0)
		return EXIT_BULKHEAD;

	struct share_fs fs = { .pid = 0 };
	struct rules scope;
	char err[512];
	/* The scope's grants, then the organisation's backstop, before anything starts. */
	int gate = scope_grant_apply(&o, &scope, err, sizeof(err));
	if (!gate && o.work)
		gate = share_fs_parse(o.work, &fs, err, sizeof(err));
	if (!gate)
		gate = policy_gate(&o, &fs, &scope, err, sizeof(err));
	if (!gate)
		gate = scope_grant_lifetime(&o, err, sizeof(err));
	rules_free(&scope); /* the broker reads its own copy */
	if (gate < 0) {
		fprintf(stderr, "bulkhead: %s\n", err);
		return EXIT_BULKHEAD;
	}
	o.broker.policy = o.policy;
	struct engine_choice choice;
	if (engine_choose(o.engine, &choice) < 0) {
		fprintf(stderr, "bulkhead: engine %s: %s\n", engine_name(o.engine), choice.why);
		return EXIT_BULKHEAD;
	}
	char cmdline[BOOT_ARGS_CMDLINE_MAX];
	cmdline[0] = '\0';
	if (o.tty && o.interactive && !isatty(0)) {
		fprintf(stderr,
			"bulkhead: -it needs a terminal on stdin (use -i alone for a pipe)\n");
		return EXIT_BULKHEAD;
	}
	/* With a broker, init installs its session CA before any command runs. */
	if (run_kernel_cmdline(&choice, !o.verbose && !o.console_path,
			       o.work ? (fs.ro ? "ro" : "rw") : NULL, cmdline,
			       sizeof(cmdline)) < 0 ||
	    (o.broker.scope &&
	     strlen(cmdline) + sizeof(" " BOOT_ARGS_BROKER "1") > sizeof(cmdline))) {
		fprintf(stderr, "bulkhead: internal error: kernel command line too long\n");
		return EXIT_BULKHEAD;
	}
	if (o.broker.scope)
		strcat(cmdline, " " BOOT_ARGS_BROKER "1");

	if (o.verbose)
		fprintf(stderr, "bulkhead: engine: %s\n", choice.why);

	/* Signals that end the session are read from a signalfd by the session loop;
	 * block them before anything starts so none is lost in between. */
	int sigfd = proc_signalfd();
	/* What a helper leaves behind is ours to wait for, so that nothing of the session
	 * outlives our return (a caller may remove the share or the cgroup right after). */
	proc_adopt_orphans();

	/* Acquire in order, release in reverse: run directory, diagnostics pipe,
	 * back ends, then the engine (stopped by session_watch). */
	int code = EXIT_BULKHEAD;
	struct rundir rd = { .path = "" };
	int diag[2] = { -1, -1 };
	struct guest g = { .pid = 0, .diag_fd = -1, .signal_fd = sigfd };
	struct vsock_dev vs = { .pid = 0, .ready_lfd = -1 };
	struct broker_dev br = { .pid = 0, .ctl_fd = -1 };
	struct session_cgroup cg = { .version = 0 };
	struct jail_ids ids = JAIL_IDS_INIT;
	char vsock_dir[PATH_MAX];
	struct agent_link link = { .ready_fd = -1 };
	char *env[RUN_MAX_ENV + 1];
	struct termios saved_tty;
	bool raw = false;
	if (rundir_create(&rd, err, sizeof(err)) < 0)
		goto fail;
	if (rundir_file(&rd, RUNDIR_VSOCK, 0, vsock_dir, sizeof(vsock_dir)) < 0) {
		snprintf(err, sizeof(err), "run directory path too long");
		goto fail;
	}
	if (!o.no_jail && jail_ids_acquire(&ids, o.jail_uid, err, sizeof(err)) < 0)
		goto fail;
	/* Every process of the session joins its cgroups (memory, pids, CPU) before it runs. */
	struct cgroup_limits lim = {
		.mem_bytes = (unsigned long long)(o.mem_limit_mib ? o.mem_limit_mib
								  : o.mem_mib + CGROUP_OVERHEAD_MIB)
			     << 20,
		.pids = CGROUP_DEFAULT_PIDS,
		.cpus = o.cpus,
	};
	if (cgroup_create(&cg, rd.id, &lim, err, sizeof(err)) == 0)
		proc_set_cgroup(&cg);
	else if (o.verbose)
		fprintf(stderr, "bulkhead: no resource limits for this session: %s\n", err);
	/* `bulkhead exec` starts its commands where this session's main one would. */
	if (rundir_put(&rd, "cwd", o.work ? "/work" : "/") < 0) {
		snprintf(err, sizeof(err), "cannot write to %.300s: %s", rd.path, strerror(errno));
		goto fail;
	}
	if (pipe2(diag, O_CLOEXEC) < 0) {
		snprintf(err, sizeof(err), "pipe: %s", strerror(errno));
		goto fail;
	}
	if (o.work) {
		if (share_fs_start(&fs, &rd, diag[1], err, sizeof(err)) < 0)
			goto fail;
		add_backend(&g, "virtiofsd", fs.pid);
	}
	if (vsock_dev_start(&vs, &rd, diag[1], o.no_jail ? NULL : &ids, err, sizeof(err)) < 0)
		goto fail;
	add_backend(&g, "bulkhead-vsock", vs.pid);
	/* The guest's only way out: with no scope, nothing listens on the broker port and
	 * every connection from the guest is refused. */
	if (o.broker.scope) {
		if (broker_dev_start(&br, &o.broker, &rd, diag[1], err, sizeof(err)) < 0)
			goto fail;
		if (br.pid)
			add_backend(&g, "bulkhead-broker", br.pid);
		else
			add_backend_fd(&g, "the shared broker", br.ctl_fd);
	}
	/* Every socket the guest may reach is there now: the jailed back end may connect. */
	int grc = o.no_jail ? 0 : jail_ids_give_dir(&ids, vsock_dir);
	if (grc < 0) {
		snprintf(err, sizeof(err), "%.300s: %s", vsock_dir, strerror(-grc));
		goto fail;
	}
	memcpy(env, o.env, o.nenv * sizeof(char *));
	env[o.nenv] = NULL;
	struct winsize ws = { .ws_row = 0 };
	if (o.tty)
		ioctl(0, TIOCGWINSZ, &ws);
	link = (struct agent_link){
		.ready_lfd = vs.ready_lfd,
		.uds = vs.uds,
		.flags = (o.tty ? AGENT_EXEC_TTY : 0) | (o.interactive ? AGENT_EXEC_STDIN : 0),
		.rows = ws.ws_row,
		.cols = ws.ws_col,
		.cwd = o.work ? "/work" : "/",
		.argv = o.argv,
		.env = env,
		.in_fd = o.interactive ? 0 : -1,
		.ready_fd = -1,
		.notify_fd = notify_fd,
		.session_id = rd.id,
	};
	g.agent = &link;
	/* A terminal session: our terminal passes every key through (Ctrl-C
	 * included, which the guest's terminal turns into SIGINT). */
	if (o.tty && o.interactive && tcgetattr(0, &saved_tty) == 0) {
		struct termios t = saved_tty;
		cfmakeraw(&t);
		raw = tcsetattr(0, TCSANOW, &t) == 0;
	}
	struct launch l = {
		.kernel = o.kernel,
		.initrd = o.initrd,
		.cmdline = cmdline,
		.mem_mib = o.mem_mib,
		.ram_file = o.ram_file,
		.jail = o.no_jail ? NULL : &ids,
		.cpus = o.cpus,
		.verbose = o.verbose,
		.fs_sock = o.work ? fs.sock : NULL,
		.diag_w = diag[1],
		.vsock_sock = vs.vhost_sock,
		.guest_cid = VSOCK_GUEST_CID,
	};
	if ((choice.kind == ENGINE_KVM ? kvm_start(&l, &choice, &g, err, sizeof(err))
				       : qemu_start(&l, &choice, &g, err, sizeof(err))) < 0)
		goto fail;
	close(diag[1]);
	diag[1] = -1;
	g.diag_fd = diag[0];
	diag[0] = -1;
	code = session_watch(&o, &g);
	if (code == EXIT_BULKHEAD && cgroup_oom_kills(&cg))
		fprintf(stderr,
			"bulkhead: the session went over its memory limit (%llu MiB: guest RAM and "
			"overhead; see --mem-limit) and was stopped\n",
			lim.mem_bytes >> 20);
	goto out;
fail:
	fprintf(stderr, "bulkhead: %s\n", err);
out:
	if (raw)
		tcsetattr(0, TCSANOW, &saved_tty);
	agent_link_close(&link);
	for (unsigned i = 0; i < g.nbackends; i++)
		close(g.backends[i].pidfd);
	broker_dev_stop(&br);
	vsock_dev_stop(&vs);
	share_fs_stop(&fs);
	for (int i = 0; i < 2; i++)
		if (diag[i] >= 0)
			close(diag[i]);
	proc_set_cgroup(NULL);
	proc_reap_all();
	cgroup_destroy(&cg);
	/* Guest RAM written by the jail's uid is the caller's to inspect. */
	if (o.ram_file && !o.no_jail && ids.uid != geteuid() && !access(o.ram_file, F_OK))
		if (chown(o.ram_file, geteuid(), getegid()) < 0)
			fprintf(stderr, "bulkhead: --ram-file %s: %s\n", o.ram_file,
				strerror(errno));
	jail_ids_release(&ids);
	rundir_remove(&rd);
	if (sigfd >= 0)
		close(sigfd);
	return code;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = { .engine = ENGINE_AUTO, .mem_mib = 256, .cpus = 1 };
	int rc = parse_opts(argc, argv, &o, false);
	if (rc >= 0)
		return rc;
	return session_main(&o, -1);
}

int cmd_start(int argc, char **argv)
{
	struct run_opts o = { .engine = ENGINE_AUTO, .mem_mib = 256, .cpus = 1 };
	int rc = parse_opts(argc, argv, &o, true);
	if (rc >= 0)
		return rc;
	if (o.interactive || o.tty) {
		fprintf(stderr, "bulkhead start: -i and -t belong to 'bulkhead exec'\n");
		return EXIT_BULKHEAD;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "bulkhead: pipe: %s\n", strerror(errno));
		return EXIT_BULKHEAD;
	}
	/* Until the guest is ready, interrupting us stops the session: nothing may be left
	 * running that nobody has the id of. */
	int sfd = proc_signalfd();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "bulkhead: fork: %s\n", strerror(errno));
		return EXIT_BULKHEAD;
	}
	if (pid == 0) {
		/* The session's supervisor: detached from our terminal and session, and stopped
		 * if we die before it is ready (notify_started clears that). */
		close(p[0]);
		close(sfd);
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(EXIT_BULKHEAD);
		_exit(session_main(&o, p[1]));
	}
	close(p[1]);
	char id[64];
	ssize_t n = -1;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = p[0], .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;
			int sig = read(sfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo
									   : SIGTERM;
			if (sig == SIGWINCH)
				continue;
			kill(pid, SIGTERM);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			fprintf(stderr,
				"bulkhead: %s; the session was stopped before it was ready\n",
				strsignal(sig));
			return 128 + sig;
		}
		if (pfd[0].revents) {
			n = read(p[0], id, sizeof(id) - 1);
			break;
		}
	}
	close(p[0]);
	close(sfd);
	if (n <= 0) {
		/* It failed before the guest was ready and said why on stderr. */
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : EXIT_BULKHEAD;
	}
	id[n] = '\0';
	fputs(id, stdout);
	return 0;
}
