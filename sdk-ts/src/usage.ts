/**
 * Usage counts: which versions callers still speak, counted where the gate
 * decides, reported to the registry as registry/sdk/usage.py reports them
 * (the same wire format: `POST /v1/namespaces/{ns}/usage` with `{server,
 * toolset, counts: [{tool, version, decision, calls, reason?}], dropped}`,
 * counts sorted by tool, version, decision and reason).
 *
 *     const reporter = new UsageReporter(url, "billing", { server: "billing-ts@host-1", source: watcher, token });
 *     gateMcpServer(server, watcher, { onDecision: reporter.record });
 *     reporter.start();
 *     ...
 *     await reporter.stop();   // one last flush
 *
 * `record` adds one to a count keyed by (tool, version, decision, reason) in
 * a Map and returns: no I/O, no clock, no log line. The version is the one the
 * call declared (an alias call: its contract), or for a version-less call
 * current when it was accepted and the gate's `inferredVersion` when it was
 * refused (null when no version matched). Calls naming no tool are not
 * counted. Never an argument value. The counter is bounded (`maxKeys`,
 * 10,000 by default): a call with a new key past the bound is counted in
 * `dropped`, reported too.
 *
 * What a failed report loses, each said through the logger: the registry
 * down or answering 408/425/429/5xx (`usage.report.failed`, a warning once
 * per outage): nothing, the batch is merged back for the next report; a
 * report whose fate is unknown (a timeout once sent): that batch, dropped
 * rather than counted twice (`usage.report.lost`); a refused report (401,
 * 403, 404, 422): that batch (`usage.report.refused`, an error). The timer
 * never keeps the process alive.
 */

import type { Decision, Declared } from "./gate.js";
import { type Logger, stderrLogger } from "./logging.js";
import { byCodePoint } from "./refusals.js";
import type { Toolset } from "./toolset.js";

export const MAX_KEYS = 10_000;
/** The most entries one report may carry (the registry refuses more). */
export const MAX_COUNTS = 10_000;

export type Outcome = "accepted" | "converted" | "refused";

/** Calls of one (tool, version, decision, reason) since the last report. */
export interface UsageCount {
  readonly tool: string;
  readonly version: number | null;
  readonly decision: Outcome;
  readonly calls: number;
  /** Set on refusals only: the gate's `data.reason`. */
  readonly reason?: string;
}

/** The body of `POST /v1/namespaces/{ns}/usage`. */
export interface UsageReport {
  readonly server: string;
  readonly toolset: string;
  readonly counts: readonly UsageCount[];
  readonly dropped: number;
}

interface Key {
  readonly tool: string;
  readonly version: number | null;
  readonly decision: Outcome;
  readonly reason: string | null;
}

const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$/;
const RETRIED = new Set([408, 425, 429, 500, 502, 503, 504]);
/** Errors raised before the request left: the registry cannot have stored it. */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function wireVersion(value: unknown): number | null {
  return typeof value === "string" && /^v\d+$/.test(value) ? Number(value.slice(1)) : null;
}

function keyText(key: Key): string {
  return JSON.stringify([key.tool, key.version, key.decision, key.reason]);
}

/** A bounded in-memory count of gate decisions; `record` is the `onDecision` hook. */
export class UsageCounter {
  private counts = new Map<string, [Key, number]>();
  private droppedCalls = 0;

  constructor(private readonly maxKeys: number = MAX_KEYS) {
    if (!(maxKeys >= 1)) throw new RangeError("maxKeys must be at least 1");
  }

  /** Count one decision (see the module comment for the key). */
  readonly record = (decision: Decision, declared: Declared): void => {
    let key: Key;
    if (decision.accepted) {
      const version = declared.version;
      key =
        version === null || version === decision.version
          ? { tool: decision.tool, version: decision.version, decision: "accepted", reason: null }
          : { tool: decision.tool, version, decision: "converted", reason: null };
    } else {
      if (decision.version === null) return; // no tool of the toolset: nothing a version can be told of
      const data = decision.error.data;
      const present = (declared.schemaVersion !== undefined && declared.schemaVersion !== null) || declared.schemaHash !== null || Boolean(declared.alias);
      const reason = typeof data.reason === "string" ? data.reason : null;
      // a version never served is none the registry could be told of
      const version =
        reason === "schema_version_unknown" ? null : present ? declared.version : wireVersion(data.inferredVersion);
      key = { tool: decision.tool, version, decision: "refused", reason };
    }
    this.add(key, 1);
  };

  private add(key: Key, calls: number): void {
    const text = keyText(key);
    const seen = this.counts.get(text);
    if (seen !== undefined) seen[1] += calls;
    else if (this.counts.size < this.maxKeys) this.counts.set(text, [key, calls]);
    else this.droppedCalls += calls;
  }

  /** The counts and the dropped calls so far; the counter starts again from zero. */
  take(): [Array<[Key, number]>, number] {
    const counts = [...this.counts.values()];
    const dropped = this.droppedCalls;
    this.counts = new Map();
    this.droppedCalls = 0;
    return [counts, dropped];
  }

  /** Merge counts that could not be reported into the counter (its bound applies). */
  giveBack(counts: ReadonlyArray<[Key, number]>, dropped: number): void {
    for (const [key, calls] of counts) this.add(key, calls);
    this.droppedCalls += dropped;
  }

  /** Calls counted and not yet taken (dropped ones included). */
  get pending(): number {
    let calls = this.droppedCalls;
    for (const [, n] of this.counts.values()) calls += n;
    return calls;
  }
}

/** Python's ordering of (tool, version or 0, decision, reason or ""), strings by code point. */
function compare(a: Key, b: Key): number {
  return (
    byCodePoint(a.tool, b.tool) ||
    (a.version ?? 0) - (b.version ?? 0) ||
    byCodePoint(a.decision, b.decision) ||
    byCodePoint(a.reason ?? "", b.reason ?? "")
  );
}

/** The wire report of a batch (sorted, so equal batches encode alike). */
export function reportOf(server: string, toolset: string, counts: ReadonlyArray<[Key, number]>, dropped: number): UsageReport {
  const sorted = [...counts].sort(([a], [b]) => compare(a, b));
  return {
    server,
    toolset,
    counts: sorted.map(([key, calls]) => ({
      tool: key.tool,
      version: key.version,
      decision: key.decision,
      calls,
      ...(key.reason !== null ? { reason: key.reason } : {}),
    })),
    dropped,
  };
}

/** `{url}/v1/namespaces/{namespace}/usage` (`url` is the registry's base URL). */
export function usageUrl(url: string, namespace: string): string {
  return `${url.replace(/\/+$/, "")}/v1/namespaces/${encodeURIComponent(namespace)}/usage`;
}

export interface UsageReporterOptions {
  /** The reporting server's name, as it sets it (host, pod, service). */
  server: string;
  /** The toolset served: a Toolset, a source with `.current` (the watcher), or a function answering its digest. */
  source: Toolset | { readonly current: Toolset } | (() => string);
  token?: string;
  /** Seconds between reports (> 0); default 10. */
  interval?: number;
  /** Seconds one report may take; default 5. */
  timeout?: number;
  maxKeys?: number;
  logger?: Logger;
}

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

/** Counts gate decisions and reports them to the registry in the background. */
export class UsageReporter {
  readonly url: string;
  readonly server: string;
  readonly interval: number;
  readonly counter: UsageCounter;
  /** The counter's hook, for `onDecision`. */
  readonly record: UsageCounter["record"];
  /** Reports the registry took. */
  sent = 0;
  /** Calls given up on (unknown fate or refused reports). */
  lostCalls = 0;
  private readonly source: UsageReporterOptions["source"];
  private readonly headers: Record<string, string>;
  private readonly timeout: number;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  private flushing: Promise<boolean> | null = null;

  constructor(url: string, namespace: string, options: UsageReporterOptions) {
    const interval = options.interval ?? 10;
    const timeout = options.timeout ?? 5;
    if (!(interval > 0)) throw new RangeError("interval must be a positive number of seconds");
    if (!(timeout > 0)) throw new RangeError("timeout must be a positive number of seconds");
    if (!SERVER_NAME.test(options.server)) {
      throw new RangeError(`server ${JSON.stringify(options.server)} is not a name the registry takes (${SERVER_NAME.source})`);
    }
    this.url = usageUrl(url, namespace);
    this.server = options.server;
    this.interval = interval;
    this.timeout = timeout;
    this.source = options.source;
    this.headers = options.token ? { authorization: `Bearer ${options.token}` } : {};
    this.logger = options.logger ?? stderrLogger;
    this.counter = new UsageCounter(options.maxKeys ?? MAX_KEYS);
    this.record = this.counter.record;
  }

  private digest(): string {
    const source = this.source;
    if (typeof source === "function") return String(source());
    if ("current" in source && source.current !== undefined && "digest" in source.current) return source.current.digest;
    return (source as Toolset).digest;
  }

  /** Start reporting every `interval` seconds (the timer never keeps the process alive). */
  start(): this {
    if (this.timer === null) {
      this.timer = setInterval(() => {
        void this.flush().catch((error: unknown) => this.logger.error("usage.report.crashed", { url: this.url, error: String(error) }));
      }, this.interval * 1000);
      this.timer.unref();
    }
    return this;
  }

  /** Stop the timer; with `flush` (default), report what is left, waiting at most `timeout` seconds. */
  async stop(options: { flush?: boolean; timeout?: number } = {}): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.flushing !== null) await this.flushing;
    if (options.flush ?? true) await this.flush(options.timeout);
  }

  /** Report the counts gathered since the last report; true when the registry took them (or there was nothing). Never throws for a failed report. */
  flush(timeout?: number): Promise<boolean> {
    const run = this.report(timeout ?? this.timeout).finally(() => {
      if (this.flushing === run) this.flushing = null;
    });
    this.flushing = run;
    return run;
  }

  private async report(timeout: number): Promise<boolean> {
    const [counts, dropped] = this.counter.take();
    if (counts.length === 0 && dropped === 0) return true;
    let calls = 0;
    for (const [, n] of counts) calls += n;
    const body = JSON.stringify(reportOf(this.server, this.digest(), counts, dropped));
    let response: Response;
    try {
      response = await fetch(this.url, {
        method: "POST",
        headers: { ...this.headers, "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(timeout * 1000),
      });
    } catch (error) {
      const code = causeCode(error);
      if (code !== undefined && NOT_SENT.has(code)) return this.keep(counts, dropped, `${code}: ${String(error)}`);
      // the request may have reached the registry: counting it again could double it
      return this.lose(
        calls,
        "usage.report.lost",
        `a report of ${calls} calls may or may not have been stored (${String(error)}); it is dropped rather than counted twice`,
      );
    }
    const text = await response.text().catch(() => "");
    if (RETRIED.has(response.status)) return this.keep(counts, dropped, `HTTP ${response.status}`);
    if (response.status !== 200 && response.status !== 201) {
      return this.lose(
        calls,
        "usage.report.refused",
        `the registry refused a report of ${calls} calls: HTTP ${response.status}: ${detail(text)}`,
        { status: response.status },
      );
    }
    this.sent += 1;
    if (this.failing) {
      this.failing = false;
      this.logger.warn("usage.report.recovered", { url: this.url, lost_calls: this.lostCalls });
    }
    return true;
  }

  private lose(calls: number, event: string, message: string, fields: Record<string, unknown> = {}): boolean {
    this.lostCalls += calls;
    this.failing = true;
    const log = event === "usage.report.refused" ? this.logger.error : this.logger.warn;
    log.call(this.logger, event, { message, url: this.url, calls, ...fields });
    return false;
  }

  private keep(counts: ReadonlyArray<[Key, number]>, dropped: number, cause: string): boolean {
    let calls = 0;
    for (const [, n] of counts) calls += n;
    this.counter.giveBack(counts, dropped);
    const log = this.failing ? this.logger.info : this.logger.warn;
    this.failing = true;
    log.call(this.logger, "usage.report.failed", {
      message: `usage not reported (${cause}); ${calls} calls kept for the next report`,
      url: this.url,
      calls,
    });
    return false;
  }
}

function detail(text: string): string {
  try {
    const problem = JSON.parse(text) as { detail?: unknown };
    if (typeof problem.detail === "string") return problem.detail;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 300);
}
