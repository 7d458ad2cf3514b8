// SPDX-License-Identifier: Apache-2.0
// The TypeScript client against a real `bulkhead serve` and real guests (run by
// tests/e2e/test_serve_clients.sh): sessions pooled and cold, exact bytes, streaming, stdin,
// exit codes and signals, files, archives, events, errors. One line per check: "ok - NAME",
// "not ok - NAME" (then "# detail" lines). Usage: node dist/test/e2e.js SOCKET HOST-TMP-DIR, or
// ... SOCKET HOST-TMP-DIR deny URL-SUFFIX: denies the one pending approval (held by a broker the
// suite runs) whose url ends so.
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { Bulkhead, BulkheadError, Session } from "../src/index";
import type { Chunk } from "../src/index";

let failed = 0;

function report(name: string, good: boolean, detail = ""): void {
  process.stdout.write(`${good ? "ok" : "not ok"} - ${name}\n`);
  if (!good) {
    failed++;
    for (const l of detail.split("\n")) process.stdout.write(`# ${l}\n`);
  }
}

async function check(name: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
    report(name, true);
  } catch (e) {
    report(name, false, e instanceof Error ? `${e.name}: ${e.message}\n${(e.stack ?? "").split("\n").slice(1, 4).join("\n")}` : String(e));
  }
}

function show(v: unknown): string {
  const s = Buffer.isBuffer(v) ? `<${v.length} bytes> ${JSON.stringify(v.subarray(0, 80).toString("latin1"))}` : JSON.stringify(v);
  return (s ?? String(v)).slice(0, 300);
}

function eq(want: unknown, got: unknown, what = ""): void {
  const same = Buffer.isBuffer(want) && Buffer.isBuffer(got) ? want.equals(got) : JSON.stringify(want) === JSON.stringify(got);
  if (!same) throw new Error(`${what} expected ${show(want)} got ${show(got)}`);
}

function assert(cond: unknown, what: string): void {
  if (!cond) throw new Error(what);
}

async function raises(status: number, fn: () => Promise<unknown>): Promise<BulkheadError> {
  try {
    await fn();
  } catch (e) {
    if (!(e instanceof BulkheadError)) throw new Error(`expected BulkheadError(${status}), got ${String(e)}`);
    if (e.status !== status) throw new Error(`expected status ${status}, got ${e.status}: ${e.message}`);
    assert(e.message && !e.message.includes("\n"), `the error is not one line: ${e.message}`);
    return e;
  }
  throw new Error(`expected BulkheadError(${status}), nothing thrown`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitUntil(what: string, cond: () => Promise<boolean>, seconds = 120): Promise<void> {
  const end = Date.now() + seconds * 1000;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`);
    await sleep(200);
  }
}

const ALL = Buffer.concat([Buffer.from([...Array(256).keys()]), Buffer.from([0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a])]);

async function pooled(b: Bulkhead): Promise<void> {
  await waitUntil("a ready pool guest", async () => (await b.pool()).ready >= 1);
  let id = "";
  let work = "";
  await b.withSession({ env: { SV: "from-session" } }, async (s) => {
    id = s.id;
    work = s.info.work;
    eq([true, "running", true], [s.info.pooled, s.info.state, s.info.work_owned], "pooled, state, work_owned");
    const r = await s.run("echo $SV");
    eq([0, "from-session\n", ""], [r.exitCode, r.stdout.toString(), r.stderr.toString()]);
    assert((await b.sessions()).some((x) => x.id === id), "listed");
  });
  await raises(404, () => b.getSession(id));
  assert(!fs.existsSync(work), `${work} is left after delete`);
}

// A scope is bound to a pooled guest when it is taken: its broker answers the guest.
async function pooledScope(b: Bulkhead): Promise<void> {
  await waitUntil("a ready pool guest", async () => (await b.pool()).ready >= 1);
  const shapes = (await b.pool()).pools.map((p) => [p.mem_mib, p.cpus]);
  eq([[256, 1]], shapes, "the pool's shape");
  await b.withSession({ scope: { allow: [] } }, async (s) => {
    eq([true, null, "private"], [s.info.pooled, s.info.pool_miss, s.info.broker], "pooled, pool_miss, broker");
    const r = await s.run("curl -s -o /dev/null -w '%{http_code}' http://example.com/");
    eq("403", r.stdout.toString(), "the bound broker refuses what the scope does not allow");
  });
}

async function cold(b: Bulkhead, tmp: string): Promise<void> {
  const host = path.join(tmp, "ts-work");
  fs.mkdirSync(host);
  fs.writeFileSync(path.join(host, "from-host"), ALL);
  const s = await b.session({ work: host, pool: false });
  try {
    eq([false, host, false], [s.info.pooled, s.info.work, s.info.work_owned], "pooled, work, work_owned");
    eq(ALL, (await s.run(["cat", "/work/from-host"])).stdout, "a host file in the guest");
    await s.run("echo made-in-guest > /work/from-guest");
  } finally {
    const last = await s.delete();
    eq(["ended", "deleted"], [last.state, last.end_reason], "last state");
  }
  eq("made-in-guest\n", fs.readFileSync(path.join(host, "from-guest"), "utf8"), "the guest's file on the host");
}

async function exactBytes(s: Session): Promise<void> {
  eq(ALL.length, await s.putFile("all.bin", ALL), "size");
  const r = await s.run("cat /work/all.bin; cat /work/all.bin >&2; exit 3");
  eq(3, r.exitCode, "exit");
  eq(ALL, r.stdout, "stdout");
  eq(ALL, r.stderr, "stderr");
  eq(ALL, (await s.run(["cat"], { stdin: ALL })).stdout, "stdin_b64");
  eq(Buffer.from("héllo\n"), (await s.run("cat", { stdin: "héllo\n" })).stdout, "stdin as text");
}

async function large(s: Session): Promise<void> {
  const n = 5 * 1024 * 1024 + 3;
  const r = await s.run(`head -c ${n} /dev/urandom > /work/big; sha256sum < /work/big >&2; cat /work/big`);
  eq([0, n], [r.exitCode, r.stdout.length], "exit, length");
  eq(r.stderr.toString().split(" ")[0], createHash("sha256").update(r.stdout).digest("hex"), "SHA-256");
  eq(r.stdout, await s.getFile("big"), "the same bytes through getFile");
}

async function order(s: Session): Promise<void> {
  const ex = await s.stream("i=0; while [ $i -lt 300 ]; do echo out $i; echo err $i >&2; i=$((i+1)); done");
  const got: Record<string, Buffer[]> = { stdout: [], stderr: [] };
  for await (const [name, data] of ex) got[name]!.push(data);
  const lines = (p: string): string => [...Array(300).keys()].map((i) => `${p} ${i}\n`).join("");
  eq(0, ex.exit?.status, "exit");
  eq(lines("out"), Buffer.concat(got.stdout!).toString(), "stdout in order");
  eq(lines("err"), Buffer.concat(got.stderr!).toString(), "stderr in order");
}

async function asWritten(s: Session): Promise<void> {
  // The command goes on only once the client has seen its first line (else it gives up: 9).
  await s.run("rm -f /work/go");
  const ex = await s.stream("echo ready; i=0; while [ ! -e /work/go ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.1; done; echo done");
  let seen = "";
  for await (const [, data] of ex) {
    seen += data.toString();
    if (seen === "ready\n") await s.putFile("go", "");
  }
  eq(["ready\ndone\n", 0], [seen, ex.exit?.status]);
}

async function stdinOpen(s: Session): Promise<void> {
  const ex = await s.stream("cat", { stdin_open: true });
  await ex.sendStdin(Buffer.from([0x66, 0x00, 0xff]));
  const first = await ex.next();
  eq(["stdout", Buffer.from([0x66, 0x00, 0xff])], first.value as Chunk, "echoed before stdin ends");
  await ex.sendStdin("second", true);
  const r = await ex.wait();
  eq([0, "second"], [r.exitCode, r.stdout.toString()]);
}

async function exits(s: Session): Promise<void> {
  for (const code of [0, 1, 42, 255]) eq(code, (await s.run(`exit ${code}`)).exitCode, `exit ${code}`);
  const r = await s.run("kill -TERM $$");
  eq([143, 15], [r.exitCode, r.signal], "killed by TERM");
  eq(127, (await s.run(["/no/such/program"])).exitCode, "a missing program");
  for (const [sig, want] of [["TERM", 143], [9, 137]] as const) {
    const ex = await s.stream("echo up; exec sleep 60");
    eq("up\n", (await ex.next()).value?.[1].toString());
    await ex.signal(sig);
    eq(want, (await ex.wait()).exitCode, `signal(${sig})`);
  }
}

async function tty(s: Session): Promise<void> {
  eq("x y\n/tmp\n", (await s.run("echo $A; pwd", { env: { A: "x y" }, cwd: "/tmp" })).stdout.toString());
  assert((await s.run("tty", { tty: true })).stdout.toString().startsWith("/dev/pts/"), "a pty");
  const ex = await s.stream("echo ready; read x; stty size", { tty: true, rows: 24, cols: 80, stdin_open: true });
  let seen = "";
  for await (const [, data] of ex) {
    seen += data.toString();
    if (/ready\r?\n/.test(seen)) break;
  }
  await ex.resize(40, 120);
  await ex.sendStdin("\n");
  seen += (await ex.wait()).stdout.toString();
  assert(seen.includes("40 120"), `no "40 120" in ${JSON.stringify(seen)}`);
}

async function files(s: Session): Promise<void> {
  eq(19, await s.putFile("run.sh", "#!/bin/sh\necho ran\n", 0o755), "size");
  eq("755\nran\n", (await s.run("stat -c %a /work/run.sh; /work/run.sh")).stdout.toString());
  await s.run("mkdir -p /work/d/e && printf 'in guest' > /work/d/e/f");
  eq("in guest", (await s.getFile("d/e/f")).toString());
  await raises(404, () => s.getFile("no-such-file"));
  await raises(400, () => s.getFile("../../../../etc/passwd"));
  await s.run("ln -sf /etc /work/out");
  await raises(400, () => s.getFile("out/passwd"));
  await raises(400, () => s.putFile("out/evil", "x"));
}

async function uploads(s: Session, tmp: string): Promise<void> {
  const data = randomBytes(8 * 1024 * 1024 + 7);
  const file = path.join(tmp, "ts-upload");
  fs.writeFileSync(file, data);
  eq(data.length, await s.putFile("up-stream", fs.createReadStream(file)), "size sent chunked");
  const want = createHash("sha256").update(data).digest("hex");
  eq(`${want}\n`, (await s.run("sha256sum /work/up-stream | cut -d' ' -f1")).stdout.toString(), "in the guest");
  eq(data, await s.getFile("up-stream"), "read back");
}

async function archives(s: Session, tmp: string): Promise<void> {
  await s.run("mkdir -p /work/src/pkg && cp /work/all.bin /work/src/pkg/data.bin && ln -sf data.bin /work/src/pkg/link");
  const tar = await s.getArchive("src");
  const out = path.join(tmp, "ts-untar");
  fs.mkdirSync(out);
  execFileSync("tar", ["-xf", "-", "-C", out], { input: tar });
  eq(ALL, fs.readFileSync(path.join(out, "pkg", "data.bin")), "a file's bytes in the tar");
  eq("data.bin", fs.readlinkSync(path.join(out, "pkg", "link")), "the link in the tar");
  await s.run("mkdir -p /work/copy");
  const n = await s.putArchive("copy", tar);
  assert(n >= 3, `entries: ${n}`);
  eq(ALL, (await s.run("cat /work/copy/pkg/link")).stdout, "unpacked through the link");
  const root = await s.getArchive("");
  const names = execFileSync("tar", ["-tf", "-"], { input: root }).toString();
  assert(/(^|\/)copy\/pkg\/data\.bin$/m.test(names), `the root archive lists: ${names.slice(0, 300)}`);
  const evil = execFileSync("tar", ["-cf", "-", "-C", out, "--transform", "s,^,../,", "pkg/data.bin"]);
  await raises(400, () => s.putArchive("", evil));
}

async function errors(b: Bulkhead, s: Session): Promise<void> {
  const e = await raises(400, () => b.session({ mem_mib: 1 }));
  assert(e.message.includes("mem_mib"), e.message);
  const u = await raises(400, () => b.transport.json("POST", "/v1/sessions", { bogus: 1 }));
  assert(u.message.includes("bogus"), u.message);
  await raises(400, () => b.transport.call("POST", "/v1/sessions", Buffer.from("{not json"), "application/json"));
  await raises(404, () => b.getSession("0123456789abcdef"));
  await raises(400, () => b.transport.json("POST", `/v1/sessions/${s.id}/exec`, { cmd: [] }));
  await raises(404, () => b.approve("no-such-approval", "test"));
  await raises(404, () => b.deny("no-such-approval"));
  eq([], await b.approvals(), "no approval pending");
  await raises(405, () => b.transport.call("DELETE", "/v1/health"));
  await raises(0, () => new Bulkhead({ socket: "/nonexistent/serve.sock" }).health());
  let threw = false;
  try {
    await s.run([]);
  } catch (x) {
    threw = x instanceof TypeError;
  }
  assert(threw, "an empty cmd is refused before it is sent");
}

async function ended(b: Bulkhead): Promise<void> {
  const s = await b.session({ timeout_s: 1 });
  try {
    await waitUntil("the session to time out", async () => (await s.refresh()).state === "ended", 60);
    eq("timed_out", s.info.end_reason, "end_reason");
    await raises(409, () => s.run("true"));
  } finally {
    await s.delete();
  }
}

async function events(b: Bulkhead, id: string): Promise<void> {
  const want = new Set(["session.started", "session.ended"]);
  const seqs: number[] = [];
  for await (const e of new Bulkhead({ socket: b.socket, timeoutMs: 30000 }).events(0)) {
    seqs.push(e.seq);
    if (e.session === id) want.delete(e.type);
    if (!want.size) break;
  }
  eq([], [...want], "events seen");
  eq([...seqs].sort((x, y) => x - y), seqs, "seq increases");
}

async function denyPending(b: Bulkhead, suffix: string): Promise<void> {
  let id = "";
  await waitUntil(`a pending POST ...${suffix}`, async () => {
    id = (await b.approvals()).find((a) => a.method === "POST" && (a.url ?? "").endsWith(suffix))?.id ?? "";
    return id !== "";
  }, 60);
  const a = (await b.approvals()).find((x) => x.id === id)!;
  assert(a.sha256?.length === 64 && a.expires * 1000 > Date.now() && a.secret === "TOK", JSON.stringify(a));
  await b.deny(id, "denied by the TypeScript client");
  assert(!(await b.approvals()).some((x) => x.id === id), "still pending after deny");
  await raises(404, () => b.deny(id));
}

async function main(): Promise<number> {
  const [sock, tmp, mode, suffix] = process.argv.slice(2) as [string, string, string?, string?];
  const b = new Bulkhead({ socket: sock });
  if (mode === "deny") {
    await check("approvals(): the held request listed; deny(); used once", () => denyPending(b, suffix ?? ""));
    return failed ? 1 : 0;
  }
  await check("health: ok, version", async () => {
    const h = await b.health();
    eq([true, true], [h.ok, typeof h.version === "string" && h.version.length > 0]);
  });
  await check("pool: size 1", async () => eq(1, (await b.pool()).size));
  await check("pooled session: env, listed, work removed with it", () => pooled(b));
  await check("a pooled session with an inline scope, bound when taken", () => pooledScope(b));
  await check("cold session on a host work directory", () => cold(b, tmp));
  const s = await b.session();
  try {
    await check("run: exact bytes (all 256 values) on stdout, stderr and stdin", () => exactBytes(s));
    await check("run: 5 MiB of output with a matching SHA-256", () => large(s));
    await check("stream: each stream in order", () => order(s));
    await check("stream: output arrives while the command runs", () => asWritten(s));
    await check("stream: stdin_open, sendStdin, eof", () => stdinOpen(s));
    await check("exit codes and signals (in the command, and sent)", () => exits(s));
    await check("env, cwd, tty and resize", () => tty(s));
    await check("putFile/getFile: modes, 404, paths confined", () => files(s));
    await check("putFile: 8 MiB streamed (chunked)", () => uploads(s, tmp));
    await check("putArchive/getArchive round trip; escapes refused", () => archives(s, tmp));
    await check("errors reject with BulkheadError and the status", () => errors(b, s));
  } finally {
    await s.delete();
  }
  await check("a timed-out session: ended, then 409", () => ended(b));
  await check("events: started and ended for a session, in order", () => events(b, s.id));
  return failed ? 1 : 0;
}

main().then(
  (rc) => process.exit(rc),
  (e) => {
    report("the TypeScript client suite ran to its end", false, String(e instanceof Error ? e.stack : e));
    process.exit(1);
  },
);
