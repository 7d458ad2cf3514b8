// SPDX-License-Identifier: Apache-2.0
// The API's objects and request options, with the field names of docs/API.md.

/** A session as the daemon describes it. */
export interface SessionInfo {
  id: string;
  state: "running" | "paused" | "ended";
  pooled: boolean;
  pool_miss: string | null;
  image: string | null;
  work: string;
  work_ro: boolean;
  work_owned: boolean;
  broker: "private" | "shared" | null;
  audit_log: string | null;
  mem_mib: number;
  cpus: number;
  timeout_s: number;
  created_at: number;
  ready_ms: number;
  exit_code: number | null;
  end_reason: "deleted" | "timed_out" | "over_memory" | "exited" | "failed" | null;
  end_message: string | null;
}

/** What a create may ask; every field optional (POST /v1/sessions). */
export interface SessionOptions {
  image?: string;
  work?: string;
  work_ro?: boolean;
  /** A scope file, or the rules inline. */
  scope?: string | Record<string, unknown>;
  vault?: string;
  ca_file?: string;
  broker?: string;
  /** Where the session's broker writes its audit log (with a scope). */
  audit?: string;
  mem_mib?: number;
  cpus?: number;
  mem_limit_mib?: number;
  timeout_s?: number;
  env?: Record<string, string>;
  /** false asks for a cold boot (default true). */
  pool?: boolean;
}

/** A command: a string runs through the guest's shell, an array is the argv itself. */
export type Command = string | readonly string[];

/** How a command runs (POST /v1/sessions/{id}/exec). */
export interface RunOptions {
  /** Given to the command, then end of file (a string as UTF-8). */
  stdin?: string | Uint8Array;
  env?: Record<string, string>;
  cwd?: string;
  tty?: boolean;
  rows?: number;
  cols?: number;
}

export interface StreamOptions extends RunOptions {
  /** stdin stays open for Exec.sendStdin. */
  stdin_open?: boolean;
}

/** How a command ended: code is null when a signal ended it (signal 0: none); status is the
 * shell's number (code, or 128 + signal). */
export interface ExitStatus {
  code: number | null;
  signal: number;
  status: number;
}

/** A finished command: exitCode is the shell's status (128 + N for signal N). */
export interface Result {
  exitCode: number;
  signal: number;
  stdout: Buffer;
  stderr: Buffer;
  execId: string;
}

/** One piece of a command's output, as it came. */
export type Chunk = ["stdout" | "stderr", Buffer];

export type EventType =
  | "session.started"
  | "session.ended"
  | "session.deleted"
  | "session.timed_out"
  | "session.over_memory"
  | "approval.pending"
  | "pool.ready";

/** One line of /v1/events; type-dependent fields (end_reason, exit_code, pooled, an approval's
 * id, method and url) are there as the daemon sends them. */
export interface Event {
  seq: number;
  time: number;
  type: EventType;
  session?: string | null;
  [field: string]: unknown;
}

/** A request held for a human's decision (as `bulkhead approvals list --json`). */
export interface Approval {
  id: string;
  session: string | null;
  method: string | null;
  url: string | null;
  rule: string | null;
  secret: string | null;
  sha256: string | null;
  expires: number;
  [field: string]: unknown;
}

/** One pool: guests of one shape (`--pool N[:IMAGE][:mem=MIB][:cpus=N]`). */
export interface PoolShape {
  size: number;
  ready: number;
  booting: number;
  image: string | null;
  mem_mib: number;
  cpus: number;
}

/** Every pool together, and each pool. */
export interface PoolState {
  size: number;
  ready: number;
  booting: number;
  image: string | null;
  pools: PoolShape[];
}

export interface Health {
  ok: boolean;
  version: string;
  sessions: number;
  pool: PoolState;
}
