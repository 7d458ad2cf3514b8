// SPDX-License-Identifier: Apache-2.0
// A session (deleted by `await using` or Bulkhead.withSession) and a running command in it: an
// async iterator of its output as it comes, with stdin, signals and window size on the side.
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";

import { BulkheadError, Transport, ndjsonLines, quoteId, quotePath } from "./http";
import type { Chunk, Command, ExitStatus, Result, RunOptions, SessionInfo, StreamOptions } from "./types";

export function commandArgv(cmd: Command): string[] {
  if (typeof cmd === "string") return ["/bin/sh", "-c", cmd];
  if (!Array.isArray(cmd) || cmd.length === 0 || !cmd.every((a) => typeof a === "string"))
    throw new TypeError("cmd: a string, or a non-empty array of strings");
  return [...cmd];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A command running in a session. `for await (const [stream, data] of exec)` yields its
 * output in the order written (breaking out keeps it running: iterate again, or wait());
 * when it ends, `exit` holds how. close() disconnects, which ends the command. */
export class Exec implements AsyncIterable<Chunk> {
  exit: ExitStatus | null = null;
  private done = false;

  private constructor(
    private readonly t: Transport,
    private readonly res: IncomingMessage,
    private readonly frames: AsyncGenerator<unknown, void, undefined>,
    readonly id: string,
  ) {}

  /** Reads the first frame (the exec's id) of a started exec's answer. */
  static async start(t: Transport, res: IncomingMessage): Promise<Exec> {
    const frames = ndjsonLines(res);
    let first: IteratorResult<unknown, void>;
    try {
      first = await frames.next();
    } catch (e) {
      res.destroy();
      throw e;
    }
    const v = first.done ? undefined : first.value;
    if (!isObject(v) || typeof v.exec !== "string") {
      res.destroy();
      throw new BulkheadError(0, `exec: the stream did not start with its id: ${JSON.stringify(v)}`);
    }
    return new Exec(t, res, frames, v.exec);
  }

  /** The next chunk of output, or done once the command has exited. */
  async next(): Promise<IteratorResult<Chunk, undefined>> {
    if (this.done) return { done: true, value: undefined };
    let r: IteratorResult<unknown, void>;
    try {
      r = await this.frames.next();
    } catch (e) {
      this.close();
      throw e;
    }
    if (r.done) {
      this.close();
      throw new BulkheadError(0, "exec: the stream ended before the command's exit");
    }
    const f = r.value;
    if (isObject(f)) {
      for (const name of ["stdout", "stderr"] as const)
        if (typeof f[name] === "string") return { done: false, value: [name, Buffer.from(f[name] as string, "base64")] };
      if (isObject(f.exit)) {
        const x = f.exit;
        this.exit = { code: x.code === null || x.code === undefined ? null : Number(x.code), signal: Number(x.signal ?? 0), status: Number(x.status ?? 0) };
        await this.drain();
        return { done: true, value: undefined };
      }
      if ("error" in f) {
        this.close();
        throw new BulkheadError(500, String(f.error));
      }
    }
    this.close();
    throw new BulkheadError(0, `exec: unknown frame ${JSON.stringify(f)}`);
  }

  /** Reads to the stream's end after the last frame, so the daemon ends its answer cleanly
   * (closing at once would cut it short); then closes. */
  private async drain(): Promise<void> {
    let extra: unknown;
    try {
      for (let r = await this.frames.next(); !r.done; r = await this.frames.next()) extra ??= r.value;
    } catch {
      // the answer's end is all that was left to read
    }
    this.close();
    if (extra !== undefined) throw new BulkheadError(0, `exec: frames after the exit: ${JSON.stringify(extra)}`);
  }

  [Symbol.asyncIterator](): AsyncIterator<Chunk, undefined> {
    // No return(): a `break` leaves the command running and the rest readable.
    return { next: () => this.next() };
  }

  /** Reads the rest of the output and the exit (what was iterated already is not in it). */
  async wait(): Promise<Result> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    for await (const [name, data] of this) (name === "stdout" ? out : err).push(data);
    const x = this.exit as ExitStatus | null;
    if (!x) throw new BulkheadError(0, "exec: closed before its exit");
    return { exitCode: x.status, signal: x.signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), execId: this.id };
  }

  /** Writes to the command's stdin (an exec started with stdin_open). */
  async sendStdin(data: string | Uint8Array, eof = false): Promise<void> {
    const url = `/v1/execs/${quoteId(this.id)}/stdin${eof ? "?eof=1" : ""}`;
    await this.t.call("POST", url, typeof data === "string" ? Buffer.from(data) : data, "application/octet-stream");
  }

  closeStdin(): Promise<void> {
    return this.sendStdin(Buffer.alloc(0), true);
  }

  /** Sends a signal by name ("TERM") or number. */
  async signal(sig: string | number): Promise<void> {
    await this.t.json("POST", `/v1/execs/${quoteId(this.id)}/signal`, { signal: sig });
  }

  /** Sets the pseudo-terminal's size (an exec started with tty). */
  async resize(rows: number, cols: number): Promise<void> {
    await this.t.json("POST", `/v1/execs/${quoteId(this.id)}/resize`, { rows, cols });
  }

  close(): void {
    this.done = true;
    this.res.destroy();
  }
}

/** A session of the daemon. */
export class Session {
  constructor(
    private readonly t: Transport,
    public info: SessionInfo,
  ) {}

  get id(): string {
    return this.info.id;
  }

  private url(tail = ""): string {
    return `/v1/sessions/${quoteId(this.id)}${tail}`;
  }

  async refresh(): Promise<SessionInfo> {
    this.info = (await this.t.json("GET", this.url())) as SessionInfo;
    return this.info;
  }

  /** Saves the session's guest to disk and stops its VM (state "paused"); execs are refused
   *  until resume(). Its work directory stays where it is. */
  async pause(): Promise<SessionInfo> {
    this.info = (await this.t.json("POST", this.url("/pause"))) as SessionInfo;
    return this.info;
  }

  /** Brings a paused session back in a new VM, its processes and memory as they were. */
  async resume(): Promise<SessionInfo> {
    this.info = (await this.t.json("POST", this.url("/resume"))) as SessionInfo;
    return this.info;
  }

  /** Stops the session if it runs and removes it; its last state. */
  async delete(): Promise<SessionInfo> {
    this.info = (await this.t.json("DELETE", this.url())) as SessionInfo;
    return this.info;
  }

  /** For `await using`: deletes the session (already deleted is fine). */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.delete();
    } catch (e) {
      if (!(e instanceof BulkheadError && e.status === 404)) throw e;
    }
  }

  /** Starts a command; resolves once it runs (its id known). */
  async stream(cmd: Command, opts: StreamOptions = {}): Promise<Exec> {
    const req: Record<string, unknown> = { cmd: commandArgv(cmd) };
    if (opts.env !== undefined) req.env = opts.env;
    if (opts.cwd !== undefined) req.cwd = opts.cwd;
    if (opts.tty) req.tty = true;
    if (opts.rows !== undefined) req.rows = opts.rows;
    if (opts.cols !== undefined) req.cols = opts.cols;
    if (typeof opts.stdin === "string") req.stdin = opts.stdin;
    else if (opts.stdin !== undefined) req.stdin_b64 = Buffer.from(opts.stdin).toString("base64");
    if (opts.stdin_open) req.stdin_open = true;
    const res = await this.t.open("POST", this.url("/exec"), Buffer.from(JSON.stringify(req)), "application/json");
    return Exec.start(this.t, res);
  }

  /** Runs a command to its end: its exit code and every byte it wrote. */
  async run(cmd: Command, opts: RunOptions = {}): Promise<Result> {
    const ex = await this.stream(cmd, opts);
    try {
      return await ex.wait();
    } finally {
      ex.close();
    }
  }

  /** Writes a file under the work directory (its directory must exist); its size. */
  async putFile(path: string, data: string | Uint8Array | Readable, mode?: number): Promise<number> {
    const q = mode === undefined ? "" : `?mode=${mode.toString(8).padStart(4, "0")}`;
    const body = typeof data === "string" ? Buffer.from(data) : data;
    const raw = await this.t.call("PUT", this.url(`/files/${quotePath(path)}${q}`), body, "application/octet-stream");
    return answerInt(raw, "size");
  }

  getFile(path: string): Promise<Buffer> {
    return this.t.call("GET", this.url(`/files/${quotePath(path)}`));
  }

  /** Unpacks a tar stream under dir ("" is the work directory); its entry count. */
  async putArchive(dir: string, tar: Uint8Array | Readable): Promise<number> {
    const raw = await this.t.call("PUT", this.url(`/archive/${quotePath(dir)}`), tar, "application/x-tar");
    return answerInt(raw, "entries");
  }

  /** dir ("" is the work directory) as a tar stream. */
  getArchive(dir = ""): Promise<Buffer> {
    return this.t.call("GET", this.url(`/archive/${quotePath(dir)}`));
  }
}

function answerInt(raw: Buffer, key: string): number {
  let v: unknown;
  try {
    v = (JSON.parse(raw.toString("utf8")) as Record<string, unknown>)[key];
  } catch {
    v = undefined;
  }
  if (typeof v !== "number" || !Number.isInteger(v))
    throw new BulkheadError(0, `the answer has no integer "${key}": ${raw.subarray(0, 200).toString()}`);
  return v;
}
