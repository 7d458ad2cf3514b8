// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 over the daemon's Unix socket with Node's own http module (socketPath), the default
// socket path, error answers as BulkheadError, and NDJSON streams read line by line.
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { Readable } from "node:stream";

/** The daemon answered an error ({"error": ...} with an HTTP status); status 0: it could not
 * be reached or broke a stream; 500 also for an exec that ended with an error frame. */
export class BulkheadError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "BulkheadError";
    this.status = status;
  }
}

/** Where `bulkhead serve` listens by default: $BULKHEAD_SOCKET, else serve.sock in the run
 * directory base the CLI uses ($BULKHEAD_RUNDIR, /run/bulkhead as root,
 * $XDG_RUNTIME_DIR/bulkhead, /tmp/bulkhead-UID). */
export function defaultSocket(): string {
  const env = process.env;
  if (env.BULKHEAD_SOCKET) return env.BULKHEAD_SOCKET;
  const uid = process.geteuid ? process.geteuid() : os.userInfo().uid;
  let base = env.BULKHEAD_RUNDIR;
  if (!base) {
    if (uid === 0) base = "/run/bulkhead";
    else if (env.XDG_RUNTIME_DIR) base = path.join(env.XDG_RUNTIME_DIR, "bulkhead");
    else base = `/tmp/bulkhead-${uid}`;
  }
  return path.join(base, "serve.sock");
}

export type Body = Buffer | Uint8Array | string | Readable | null | undefined;

/** A path under the work directory as URL path segments (slashes kept). */
export function quotePath(p: string): string {
  return p.split("/").map(encodeURIComponent).join("/");
}

/** An id as one URL path segment. */
export function quoteId(id: string): string {
  return encodeURIComponent(id);
}

/** The "error" of an error answer; its raw text (or the HTTP reason) if it has none. */
export function errorMessage(data: Buffer, reason: string): string {
  try {
    const o: unknown = JSON.parse(data.toString("utf8"));
    if (o && typeof o === "object" && typeof (o as { error?: unknown }).error === "string")
      return (o as { error: string }).error;
  } catch {
    // not JSON: the text itself
  }
  const text = data.toString("utf8").trim();
  return text || reason;
}

export async function readAll(res: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of res) parts.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(parts);
}

/** Opens one connection per request (no keep-alive pool: a stream holds its own), sends the
 * request, and turns error answers into BulkheadError. */
export class Transport {
  constructor(
    readonly socket: string,
    readonly timeoutMs: number | undefined,
  ) {}

  /** The response with its body unread (the caller reads or destroys it). */
  open(method: string, url: string, body?: Body, contentType?: string): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = {};
      if (contentType) headers["Content-Type"] = contentType;
      const fixed = body === undefined || body === null ? Buffer.alloc(0)
        : typeof body === "string" ? Buffer.from(body)
        : body instanceof Uint8Array ? body : null;
      if (fixed) headers["Content-Length"] = fixed.length;
      const req = http.request({ socketPath: this.socket, method, path: url, headers, agent: false });
      const fail = (e: Error): void =>
        reject(e instanceof BulkheadError ? e : new BulkheadError(0, `bulkhead serve at ${this.socket}: ${e.message}`));
      if (this.timeoutMs !== undefined)
        req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer in ${this.timeoutMs} ms`)));
      req.on("error", fail);
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        if (status < 400) {
          resolve(res);
          return;
        }
        readAll(res).then(
          (data) => reject(new BulkheadError(status, errorMessage(data, res.statusMessage ?? ""))),
          fail,
        );
      });
      if (fixed) req.end(fixed);
      else {
        const src = body as Readable;
        src.on("error", (e) => req.destroy(e)); // a failed source ends the upload, not the daemon
        src.pipe(req);
      }
    });
  }

  /** A whole request: the answer's body. */
  async call(method: string, url: string, body?: Body, contentType?: string): Promise<Buffer> {
    const res = await this.open(method, url, body, contentType);
    try {
      return await readAll(res);
    } catch (e) {
      throw new BulkheadError(0, `bulkhead serve at ${this.socket}: ${(e as Error).message}`);
    }
  }

  /** A JSON request and its JSON answer (undefined for an empty body, as 204 has). */
  async json(method: string, url: string, obj?: unknown): Promise<unknown> {
    const body = obj === undefined ? undefined : Buffer.from(JSON.stringify(obj));
    const data = await this.call(method, url, body, body ? "application/json" : undefined);
    if (!data.length) return undefined;
    try {
      return JSON.parse(data.toString("utf8"));
    } catch (e) {
      throw new BulkheadError(0, `${method} ${url}: the answer is not JSON: ${(e as Error).message}`);
    }
  }
}

/** The lines of a chunked NDJSON answer as they come, read only as fast as they are taken. */
export async function* ndjsonLines(res: Readable): AsyncGenerator<unknown, void, undefined> {
  let rest: Buffer = Buffer.alloc(0);
  const parse = (line: Buffer): unknown => {
    try {
      return JSON.parse(line.toString("utf8"));
    } catch {
      throw new BulkheadError(0, `a stream line is not JSON: ${line.subarray(0, 200).toString()}`);
    }
  };
  try {
    for await (const c of res) {
      rest = rest.length ? Buffer.concat([rest, c as Buffer]) : (c as Buffer);
      let nl: number;
      while ((nl = rest.indexOf(10)) >= 0) {
        const line = rest.subarray(0, nl);
        rest = rest.subarray(nl + 1);
        if (line.toString("utf8").trim()) yield parse(line);
      }
    }
  } catch (e) {
    if (e instanceof BulkheadError) throw e;
    throw new BulkheadError(0, `the stream broke: ${(e as Error).message}`);
  }
  if (rest.toString("utf8").trim()) yield parse(rest);
}
