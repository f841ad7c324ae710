/**
 * Boot sync, the toolset cache and the watcher that keeps a toolset current,
 * as the Python SDK does them (registry/sdk/sync.py: same endpoint, headers,
 * retries, cache file format and log events).
 *
 *     const toolset = await syncToolset(url, "billing", { cache: ".cache/billing.json", token });
 *     const watcher = watchToolset(toolset, { onChange });   // started; watcher.current
 *     ...
 *     await watcher.stop();
 *
 * Boot sync: `GET {url}/v1/namespaces/{ns}/toolset`; the body must load with
 * `Toolset.fromJson` (digest-checked), be the namespace asked for, and the
 * `ETag` must be the payload digest in double quotes (`W/` tolerated).
 * Connection errors, timeouts, invalid answers, 429 and 5xx are retried
 * `retries` times with full-jitter backoff (never less than `Retry-After`,
 * capped); other 4xx fail at once (a configuration error, no cache fallback).
 * When every attempt fails, a cache file whose digest checks out is served
 * and an error is logged (`toolset.sync.from_cache`); with a usable cache the
 * request carries its ETag in `If-None-Match` and a 304 confirms it.
 *
 * The watcher long-polls `?wait=S` with `If-None-Match`; on 200 it verifies,
 * swaps `current`, writes the cache and calls every change callback; on any
 * failure it keeps the last good toolset, logs, backs off and retries until
 * stopped. Cache file (shared with the Python SDK):
 * `{"format": "mcp-tool-registry/toolset-cache@1", "url", "namespace",
 * "digest", "fetchedAt", "payload"}`, written atomically with mode 0600.
 */

import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

import { type Logger, stderrLogger } from "./logging.js";
import { Toolset, ToolsetError } from "./toolset.js";

export const CACHE_FORMAT = "mcp-tool-registry/toolset-cache@1";
export const MAX_WAIT = 60;
export const MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
const NAMESPACE = /^[a-z0-9][a-z0-9-]{0,62}$/;
const USER_AGENT = "mcp-tool-registry-sdk-ts";

/** Boot sync failed: refused (4xx), or no valid answer and no usable cache. */
export class SyncError extends ToolsetError {
  override name = "SyncError";
  constructor(
    message: string,
    readonly url: string,
    readonly namespace: string,
    readonly cause_: string,
    readonly status: number | null = null,
    readonly cacheProblem: string | null = null,
  ) {
    super(message);
  }
}

/** Exponential backoff with full jitter (seconds). */
export class Backoff {
  constructor(
    readonly base = 0.5,
    readonly cap = 5,
    readonly retryAfterCap = 10,
  ) {}

  delay(attempt: number, retryAfter: number | null = null): number {
    const ceiling = Math.min(this.cap, this.base * 2 ** Math.min(attempt, 62));
    let value = Math.random() * ceiling;
    if (retryAfter !== null) value = Math.max(value, Math.min(retryAfter, this.retryAfterCap));
    return value;
  }
}

export const BOOT_BACKOFF = new Backoff(0.5, 5, 10);
export const WATCH_BACKOFF = new Backoff(1, 30, 60);

export function toolsetUrl(url: string, namespace: string): string {
  return `${url.replace(/\/+$/, "")}/v1/namespaces/${encodeURIComponent(namespace)}/toolset`;
}

function checkNamespace(namespace: string): void {
  if (!NAMESPACE.test(namespace)) {
    throw new RangeError(`invalid namespace '${namespace}': must match ${NAMESPACE.source}`);
  }
}

function rfc3339(moment: Date): string {
  return moment.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, seconds * 1000);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

// ------------------------------------------------------------------ the cache

export interface CachedToolset {
  toolset: Toolset;
  fetchedAt: Date;
  url: string | null;
  namespace: string;
  path: string;
}

/** Load and verify a cache file; ENOENT errors pass through, ToolsetError otherwise. */
export async function readCache(path: string): Promise<CachedToolset> {
  const text = await readFile(path, "utf8");
  let envelope: Record<string, unknown>;
  try {
    envelope = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new ToolsetError(`not a toolset cache file: ${(error as Error).message}`);
  }
  if (envelope === null || typeof envelope !== "object" || Array.isArray(envelope)) {
    throw new ToolsetError("not a toolset cache file: not a JSON object");
  }
  if (envelope.format !== CACHE_FORMAT) {
    throw new ToolsetError(`unknown cache format '${String(envelope.format)}', expected '${CACHE_FORMAT}'`);
  }
  if (envelope.payload === undefined || envelope.payload === null) throw new ToolsetError("the cache file holds no payload");
  const fetchedAt = new Date(String(envelope.fetchedAt));
  if (typeof envelope.fetchedAt !== "string" || Number.isNaN(fetchedAt.getTime())) {
    throw new ToolsetError(`bad fetchedAt ${JSON.stringify(envelope.fetchedAt)} in the cache file`);
  }
  const toolset = Toolset.fromPayload(envelope.payload);
  if (toolset.digest !== envelope.digest) {
    throw new ToolsetError(
      `the cache file records digest '${String(envelope.digest)}' but holds payload '${toolset.digest}'`,
    );
  }
  return {
    toolset,
    fetchedAt,
    url: typeof envelope.url === "string" ? envelope.url : null,
    namespace: toolset.namespace,
    path,
  };
}

/** Write the cache file atomically: a temp file in the same directory, fsync, rename, fsync of the directory. */
export async function writeCache(path: string, toolset: Toolset, url: string | null, fetchedAt = new Date()): Promise<void> {
  const header = JSON.stringify({
    format: CACHE_FORMAT,
    url,
    namespace: toolset.namespace,
    digest: toolset.digest,
    fetchedAt: rfc3339(fetchedAt),
  });
  const data = `${header.slice(0, -1)},"payload":${toolset.toJson().trim()}}\n`;
  const directory = dirname(path);
  await mkdir(directory, { recursive: true });
  const temp = join(directory, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const handle = await open(temp, "w", 0o600);
    try {
      await handle.writeFile(data, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  try {
    const dir = await open(directory, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch {
    // best effort: not every platform syncs a directory
  }
}

async function writeCacheLogged(
  path: string,
  toolset: Toolset,
  url: string,
  fetchedAt: Date,
  during: string,
  logger: Logger,
): Promise<void> {
  try {
    await writeCache(path, toolset, url, fetchedAt);
  } catch (error) {
    logger.error("toolset.cache.write_failed", {
      message: `could not write the toolset cache ${path}: ${String(error)}`,
      cache: path,
      digest: toolset.digest,
      during,
    });
  }
}

// ------------------------------------------------------------------ one HTTP exchange

class Failure extends Error {
  constructor(
    readonly cause_: string,
    readonly retryable = true,
    readonly status: number | null = null,
    readonly retryAfter: number | null = null,
  ) {
    super(cause_);
  }
}

const NOT_MODIFIED = Symbol("not modified");

function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const moment = Date.parse(text);
  return Number.isNaN(moment) ? null : Math.max(0, (moment - Date.now()) / 1000);
}

function etagDigest(value: string | null): string | null {
  if (value === null) return null;
  let text = value.trim();
  if (text.startsWith("W/")) text = text.slice(2);
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : null;
}

function problemText(status: number, reason: string, body: Uint8Array): string {
  const text = `HTTP ${status} ${reason}`.trimEnd();
  const decoded = new TextDecoder().decode(body);
  try {
    const problem = JSON.parse(decoded) as Record<string, unknown>;
    const parts = [problem.title, problem.detail].filter((p): p is string => typeof p === "string" && p !== "");
    if (parts.length > 0) return `${text}: ${parts.join(": ")}`;
  } catch {
    // not a problem document
  }
  const snippet = decoded.slice(0, 200).trim();
  return snippet ? `${text}: ${snippet}` : text;
}

async function readCapped(response: Response, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body === null) return new Uint8Array();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw new Failure(`the answer is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

interface FetchOptions {
  token: string | null;
  etag: string | null;
  wait: number | null;
  timeout: number;
  signal?: AbortSignal;
}

async function fetchToolset(endpoint: string, namespace: string, options: FetchOptions): Promise<Toolset | typeof NOT_MODIFIED> {
  const headers: Record<string, string> = { Accept: "application/json", "User-Agent": USER_AGENT };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.etag !== null) headers["If-None-Match"] = options.etag;
  const target = options.wait ? `${endpoint}?wait=${options.wait}` : endpoint;
  const budget = options.timeout + (options.wait ?? 0);
  const timer = AbortSignal.timeout(budget * 1000);
  const signal = options.signal ? AbortSignal.any([timer, options.signal]) : timer;
  let body: Uint8Array;
  let etagHeader: string | null;
  try {
    const response = await fetch(target, { headers, signal, redirect: "follow" });
    const status = response.status;
    if (status === 304) {
      await response.body?.cancel();
      if (options.etag === null) throw new Failure("HTTP 304 Not Modified to a request without If-None-Match");
      return NOT_MODIFIED;
    }
    if (status !== 200) {
      const text = problemText(status, response.statusText, await readCapped(response, MAX_ERROR_BYTES));
      if (status === 429 || status >= 500) {
        throw new Failure(text, true, status, parseRetryAfter(response.headers.get("Retry-After")));
      }
      throw new Failure(text, !(status >= 400 && status < 500), status);
    }
    body = await readCapped(response, MAX_PAYLOAD_BYTES);
    etagHeader = response.headers.get("ETag");
  } catch (error) {
    if (error instanceof Failure) throw error;
    if (options.signal?.aborted) throw error;
    if (timer.aborted) throw new Failure(`no complete answer within ${budget} s`);
    const cause = (error as { cause?: unknown }).cause;
    throw new Failure(`${(error as Error).name}: ${(error as Error).message}${cause ? ` (${String(cause)})` : ""}`);
  }
  let toolset: Toolset;
  try {
    toolset = Toolset.fromJson(body);
  } catch (error) {
    throw new Failure(`invalid toolset payload (${body.byteLength} bytes): ${(error as Error).message}`);
  }
  if (toolset.namespace !== namespace) {
    throw new Failure(`the registry answered the toolset of namespace '${toolset.namespace}', not '${namespace}'`);
  }
  if (etagDigest(etagHeader) !== toolset.digest) {
    throw new Failure(`the ETag header ${JSON.stringify(etagHeader)} does not name the payload digest '${toolset.digest}'`);
  }
  return toolset;
}

// ------------------------------------------------------------------ boot sync

/** Where a synced toolset came from; `watchToolset` defaults to it. */
export interface SyncSource {
  url: string;
  namespace: string;
  token: string | null;
  cache: string | null;
  timeout: number;
  fetchedAt: Date;
  fromCache: boolean;
}

const origins = new WeakMap<Toolset, SyncSource>();

/** Where `toolset` came from, if `syncToolset` or a watcher fetched it. */
export function originOf(toolset: Toolset): SyncSource | undefined {
  return origins.get(toolset);
}

export interface SyncOptions {
  cache?: string;
  token?: string;
  /** Seconds each attempt (body included) may take. */
  timeout?: number;
  retries?: number;
  backoff?: Backoff;
  logger?: Logger;
}

/** Boot sync from the registry at `url`, falling back to a digest-checked cache on an outage. */
export async function syncToolset(url: string, namespace: string, options: SyncOptions = {}): Promise<Toolset> {
  checkNamespace(namespace);
  const timeout = options.timeout ?? 10;
  const retries = options.retries ?? 3;
  if (!(timeout > 0)) throw new RangeError("timeout must be positive");
  if (!(retries >= 0)) throw new RangeError("retries must be >= 0");
  const backoff = options.backoff ?? BOOT_BACKOFF;
  const logger = options.logger ?? stderrLogger;
  const token = options.token ?? null;
  const cachePath = options.cache ?? null;
  const endpoint = toolsetUrl(url, namespace);

  let cached: CachedToolset | null = null;
  let cacheProblem: string | null = null;
  if (cachePath !== null) {
    try {
      cached = await readCache(cachePath);
      if (cached.namespace !== namespace) {
        cacheProblem = `the cache file ${cachePath} holds namespace '${cached.namespace}', not '${namespace}'`;
        cached = null;
      }
    } catch (error) {
      cacheProblem =
        (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `no cache file at ${cachePath}`
          : `the cache file ${cachePath} is unusable: ${(error as Error).message}`;
    }
  }
  const source = (fetchedAt: Date, fromCache: boolean): SyncSource => ({
    url,
    namespace,
    token,
    cache: cachePath,
    timeout,
    fetchedAt,
    fromCache,
  });

  let failure: Failure | null = null;
  const attempts = retries + 1;
  for (let attempt = 0; attempt < attempts; attempt++) {
    let result: Toolset | typeof NOT_MODIFIED;
    try {
      result = await fetchToolset(endpoint, namespace, { token, etag: cached?.toolset.etag ?? null, wait: null, timeout });
    } catch (error) {
      if (!(error instanceof Failure)) throw error;
      failure = error;
      if (!error.retryable) break;
      if (attempt + 1 < attempts) {
        const delay = backoff.delay(attempt, error.retryAfter);
        logger.warn("toolset.sync.retry", { url, namespace, attempt: attempt + 1, attempts, cause: error.cause_, delay });
        await sleep(delay);
      }
      continue;
    }
    const now = new Date();
    const toolset = result === NOT_MODIFIED ? cached!.toolset : result;
    if (cachePath !== null) await writeCacheLogged(cachePath, toolset, url, now, "sync", logger);
    logger.info("toolset.sync.ok", { url, namespace, digest: toolset.digest, notModified: result === NOT_MODIFIED });
    origins.set(toolset, source(now, false));
    return toolset;
  }
  const cause = failure!.cause_;
  if (!failure!.retryable) {
    throw new SyncError(
      `registry ${url} refused the toolset of namespace '${namespace}': ${cause}`,
      url,
      namespace,
      cause,
      failure!.status,
    );
  }
  if (cached !== null) {
    const age = Math.max(0, Math.round((Date.now() - cached.fetchedAt.getTime()) / 1000));
    logger.error("toolset.sync.from_cache", {
      message:
        `RUNNING FROM CACHE: registry ${url} gave no valid toolset for namespace '${namespace}' after ` +
        `${attempts} attempts (${cause}); serving the cached toolset ${cached.toolset.digest} fetched at ` +
        `${rfc3339(cached.fetchedAt)} (${age} s ago) from ${cached.path}`,
      url,
      namespace,
      cause,
      fetchedAt: rfc3339(cached.fetchedAt),
      ageSeconds: age,
      cache: cached.path,
      digest: cached.toolset.digest,
    });
    origins.set(cached.toolset, source(cached.fetchedAt, true));
    return cached.toolset;
  }
  let message = `cannot sync the toolset of namespace '${namespace}' from registry ${url} after ${attempts} attempts: ${cause}`;
  message +=
    cacheProblem !== null
      ? `; ${cacheProblem}`
      : "; no cache configured (pass cache: PATH to boot from the last good toolset)";
  throw new SyncError(message, url, namespace, cause, failure!.status, cacheProblem);
}

// ------------------------------------------------------------------ watching

export type OnChange = (toolset: Toolset) => void | Promise<void>;

export interface WatchOptions {
  onChange?: OnChange;
  /** Defaults to the registry `syncToolset` fetched the toolset from. */
  url?: string;
  token?: string;
  cache?: string;
  /** Seconds the registry may hold each long-poll, 1..60. */
  wait?: number;
  timeout?: number;
  backoff?: Backoff;
  /** Seconds: a 304 sooner than this after the poll began is followed by a pause. */
  minInterval?: number;
  logger?: Logger;
}

/** Keeps a toolset current by long-polling the registry. `current` is the latest good snapshot. */
export class ToolsetWatcher {
  readonly url: string;
  readonly namespace: string;
  readonly endpoint: string;
  readonly waitSeconds: number;
  readonly timeout: number;
  readonly backoff: Backoff;
  readonly minInterval: number;
  readonly cache: string | null;
  lastError: string | null = null;
  failures = 0;
  private currentToolset: Toolset;
  private readonly token: string | null;
  private readonly callbacks: OnChange[] = [];
  private readonly logger: Logger;
  private controller: AbortController | null = null;
  private loop: Promise<void> | null = null;

  constructor(url: string, namespace: string, toolset: Toolset, options: Omit<WatchOptions, "url"> = {}) {
    checkNamespace(namespace);
    if (toolset.namespace !== namespace) {
      throw new RangeError(`the toolset is of namespace '${toolset.namespace}', not '${namespace}'`);
    }
    const wait = options.wait ?? 30;
    if (!Number.isInteger(wait) || wait < 1 || wait > MAX_WAIT) {
      throw new RangeError(`wait must be a whole number of seconds in 1..${MAX_WAIT}`);
    }
    const timeout = options.timeout ?? 10;
    if (!(timeout > 0)) throw new RangeError("timeout must be positive");
    this.url = url;
    this.namespace = namespace;
    this.endpoint = toolsetUrl(url, namespace);
    this.waitSeconds = wait;
    this.timeout = timeout;
    this.backoff = options.backoff ?? WATCH_BACKOFF;
    this.minInterval = options.minInterval ?? 1;
    this.cache = options.cache ?? null;
    this.token = options.token ?? null;
    this.logger = options.logger ?? stderrLogger;
    this.currentToolset = toolset;
    if (options.onChange) this.callbacks.push(options.onChange);
  }

  /** The latest good toolset (an immutable snapshot). */
  get current(): Toolset {
    return this.currentToolset;
  }

  get running(): boolean {
    return this.loop !== null;
  }

  /** Add a change callback; returns a function that removes it. */
  subscribe(callback: OnChange): () => void {
    this.callbacks.push(callback);
    return () => {
      const at = this.callbacks.indexOf(callback);
      if (at >= 0) this.callbacks.splice(at, 1);
    };
  }

  /** Run the watch loop in the background. */
  start(): this {
    if (this.loop === null) {
      const controller = new AbortController();
      this.controller = controller;
      this.loop = this.run(controller.signal);
    }
    return this;
  }

  /** Stop the loop; an in-flight poll is abandoned. */
  async stop(): Promise<void> {
    const loop = this.loop;
    this.controller?.abort();
    this.loop = null;
    this.controller = null;
    if (loop !== null) await loop;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const started = Date.now();
      let changed: boolean;
      try {
        changed = await this.poll(signal);
      } catch (error) {
        if (signal.aborted) return;
        const failure = error instanceof Failure ? error : null;
        await this.failed(
          failure?.cause_ ?? `${(error as Error).name}: ${(error as Error).message}`,
          failure?.retryAfter ?? null,
          failure?.status ?? null,
          signal,
        );
        continue;
      }
      if (!changed) {
        // a 304 long before `wait` ran out: a registry or proxy not holding the request; never spin
        const rest = this.minInterval - (Date.now() - started) / 1000;
        if (rest > 0) await sleep(rest, signal);
      }
    }
  }

  /** One long-poll; true when the toolset changed. Throws on a failure. */
  async poll(signal?: AbortSignal): Promise<boolean> {
    const toolset = this.currentToolset;
    const result = await fetchToolset(this.endpoint, this.namespace, {
      token: this.token,
      etag: toolset.etag,
      wait: this.waitSeconds,
      timeout: this.timeout,
      ...(signal ? { signal } : {}),
    });
    const now = new Date();
    if (this.failures > 0) {
      this.logger.info("toolset.watch.recovered", { url: this.url, namespace: this.namespace, failures: this.failures });
    }
    this.failures = 0;
    this.lastError = null;
    if (result === NOT_MODIFIED || result.digest === toolset.digest) return false;
    origins.set(result, {
      url: this.url,
      namespace: this.namespace,
      token: this.token,
      cache: this.cache,
      timeout: this.timeout,
      fetchedAt: now,
      fromCache: false,
    });
    this.currentToolset = result;
    this.logger.info("toolset.watch.changed", {
      url: this.url,
      namespace: this.namespace,
      digest: result.digest,
      previous: toolset.digest,
    });
    if (this.cache !== null) await writeCacheLogged(this.cache, result, this.url, now, "watch", this.logger);
    for (const callback of [...this.callbacks]) {
      try {
        await callback(result);
      } catch (error) {
        this.logger.error("toolset.watch.callback_failed", { namespace: this.namespace, digest: result.digest, error: String(error) });
      }
    }
    return true;
  }

  private async failed(cause: string, retryAfter: number | null, status: number | null, signal: AbortSignal): Promise<void> {
    this.failures += 1;
    this.lastError = cause;
    const delay = this.backoff.delay(this.failures - 1, retryAfter);
    const log = status !== null && status >= 400 && status < 500 ? this.logger.error : this.logger.warn;
    log.call(this.logger, "toolset.watch.failed", {
      message:
        `toolset watch on registry ${this.url} failed (${cause}); keeping toolset ` +
        `${this.currentToolset.digest}, retrying in ${delay.toFixed(2)} s`,
      url: this.url,
      namespace: this.namespace,
      cause,
      status,
      failures: this.failures,
      delay,
    });
    await sleep(delay, signal);
  }
}

/** A started ToolsetWatcher; url, token and cache default to those of the `syncToolset` that fetched `toolset`. */
export function watchToolset(toolset: Toolset, options: WatchOptions = {}): ToolsetWatcher {
  const origin = origins.get(toolset);
  const url = options.url ?? origin?.url;
  if (url === undefined) {
    throw new RangeError("this toolset did not come from syncToolset: pass url (the registry URL)");
  }
  const same = origin !== undefined && origin.url === url;
  const token = options.token ?? (same ? origin.token ?? undefined : undefined);
  const cache = options.cache ?? (same ? origin.cache ?? undefined : undefined);
  const timeout = options.timeout ?? (same ? origin.timeout : undefined);
  return new ToolsetWatcher(url, toolset.namespace, toolset, {
    ...options,
    ...(token !== undefined ? { token } : {}),
    ...(cache !== undefined ? { cache } : {}),
    ...(timeout !== undefined ? { timeout } : {}),
  }).start();
}
