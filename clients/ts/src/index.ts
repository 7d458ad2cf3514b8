// SPDX-License-Identifier: Apache-2.0
// TypeScript client of `bulkhead serve` (docs/API.md): sessions in fresh microVMs, commands
// with streamed output, files, events and approvals, over the daemon's Unix socket with Node's
// own http module.
//
//   const b = new Bulkhead();
//   await b.withSession({ work: "." }, async (s) => {
//     const r = await s.run("python3 x.py");
//     for await (const [stream, data] of await s.stream("make")) process.stdout.write(data);
//   });
import type { IncomingMessage } from "node:http";

import { BulkheadError, Transport, defaultSocket, ndjsonLines, quoteId } from "./http";
import { Exec, Session, commandArgv } from "./session";
import type { Approval, Event, Health, PoolState, SessionInfo, SessionOptions } from "./types";

export { BulkheadError, Exec, Session, commandArgv, defaultSocket };
export type * from "./types";

export interface BulkheadOptions {
  /** The daemon's socket (default: defaultSocket()). */
  socket?: string;
  /** Bounds each request's silence in ms (default: none, as a boot or a long command may take). */
  timeoutMs?: number;
}

/** An async generator that also closes its connection when the caller returns early. */
export type EventStream = AsyncGenerator<Event, void, undefined>;

export class Bulkhead {
  readonly socket: string;
  /** @internal the transport, for requests the typed surface does not make */
  readonly transport: Transport;

  constructor(opts: BulkheadOptions = {}) {
    this.socket = opts.socket ?? defaultSocket();
    this.transport = new Transport(this.socket, opts.timeoutMs);
  }

  /** Creates a session; resolves once its guest is ready (from the pool unless pool is false
   * or what it asks cannot be bound to a booted guest). */
  async session(opts: SessionOptions = {}): Promise<Session> {
    const req: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(opts)) if (v !== undefined && !(k === "pool" && v === true)) req[k] = v;
    const info = (await this.transport.json("POST", "/v1/sessions", req)) as SessionInfo;
    return new Session(this.transport, info);
  }

  /** Runs fn with a new session and deletes it after, whatever fn does. */
  async withSession<T>(opts: SessionOptions, fn: (s: Session) => Promise<T>): Promise<T> {
    const s = await this.session(opts);
    try {
      return await fn(s);
    } finally {
      await s[Symbol.asyncDispose]();
    }
  }

  async getSession(id: string): Promise<Session> {
    return new Session(this.transport, (await this.transport.json("GET", `/v1/sessions/${quoteId(id)}`)) as SessionInfo);
  }

  /** Every session the daemon knows (ended ones too, until deleted). */
  async sessions(): Promise<Session[]> {
    const o = (await this.transport.json("GET", "/v1/sessions")) as { sessions: SessionInfo[] };
    return o.sessions.map((i) => new Session(this.transport, i));
  }

  /** Lifecycle events as they happen, after the kept ones newer than since. The connection
   * stays open until the loop ends (break, return or throw close it). */
  async *events(since?: number): EventStream {
    const res: IncomingMessage = await this.transport.open("GET", since === undefined ? "/v1/events" : `/v1/events?since=${since}`);
    try {
      for await (const e of ndjsonLines(res)) yield e as Event;
    } finally {
      res.destroy();
    }
  }

  async approvals(): Promise<Approval[]> {
    return ((await this.transport.json("GET", "/v1/approvals")) as { approvals: Approval[] }).approvals;
  }

  async approve(id: string, reason?: string): Promise<void> {
    await this.transport.json("POST", `/v1/approvals/${quoteId(id)}/approve`, reason === undefined ? {} : { reason });
  }

  async deny(id: string, reason?: string): Promise<void> {
    await this.transport.json("POST", `/v1/approvals/${quoteId(id)}/deny`, reason === undefined ? {} : { reason });
  }

  async health(): Promise<Health> {
    return (await this.transport.json("GET", "/v1/health")) as Health;
  }

  async pool(): Promise<PoolState> {
    return (await this.transport.json("GET", "/v1/pool")) as PoolState;
  }
}
