// The TypeScript/JavaScript client of the convmem API: fetch only, no runtime dependencies.
// Types: index.d.ts (on top of schema.d.ts, generated from /api/v1/schema/ by openapi-typescript).
//
// Every write sends an Idempotency-Key (yours via `idempotencyKey`, else a random UUID), reuses
// it on each retry and exposes it on the result (`result.idempotencyKey`, not enumerable) and on
// the error (`error.idempotencyKey`): a retry can only replay or resume the first request.

export const VERSION = "0.2.0";

const API_PREFIX = "/api/v1";
const DEFAULT_BASE_URL = "http://127.0.0.1:8000";
const IN_FLIGHT = "idempotency_key_in_flight";
// Failures that kept a request from reaching the server: even a write the server keeps no key
// for may be sent again after one of these.
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);
// The HTTP status a non-streaming /respond answers for each `error` event's code.
const STREAM_ERROR_STATUS = {
  model_unavailable: 503,
  queue_unavailable: 503,
  run_lost: 503,
  run_cancelled: 409,
  service_unavailable: 503,
  model_error: 502,
  answer_too_long: 502,
  not_found: 404,
  internal_error: 500,
};

export class ConvmemError extends Error {
  constructor(message, { idempotencyKey, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = new.target.name;
    this.idempotencyKey = idempotencyKey;
  }
}

/** The server could not be reached, or the connection broke (after the retries). */
export class APIConnectionError extends ConvmemError {}

/** No answer within the timeout (after the retries). */
export class APITimeoutError extends APIConnectionError {}

/** An error answer: HTTP `status`, stable `code`, human `detail`, per-field `errors`, `body`. */
export class APIError extends ConvmemError {
  constructor(status, code, detail, { body, idempotencyKey } = {}) {
    super(`${status} ${code}: ${detail}`, { idempotencyKey });
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
    this.errors = body && typeof body === "object" ? body.errors : undefined;
  }
}

/** 429: throttled; `retryAfter` in seconds (or undefined). */
export class RateLimited extends APIError {
  constructor(status, code, detail, { retryAfter, ...rest } = {}) {
    super(status, code, detail, rest);
    this.retryAfter = retryAfter;
  }
}

export class Convmem {
  /**
   * `new Convmem({ baseUrl, apiKey })`; both default to CONVMEM_BASE_URL (else
   * http://127.0.0.1:8000) and CONVMEM_API_KEY. Retried with backoff: network errors and
   * timeouts, 429 (after Retry-After), 503, and 409 `idempotency_key_in_flight`.
   */
  constructor(options = {}) {
    const env = globalThis.process?.env ?? {};
    const base = (options.baseUrl ?? env.CONVMEM_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const apiKey = options.apiKey ?? env.CONVMEM_API_KEY;
    if (!apiKey) throw new TypeError("an API key is needed: pass apiKey or set CONVMEM_API_KEY");
    this.baseUrl = base.endsWith(API_PREFIX) ? base : base + API_PREFIX;
    this.timeout = options.timeout ?? 60_000;
    this.maxRetries = options.maxRetries ?? 5;
    this.backoff = options.backoff ?? 500;
    this.maxBackoff = options.maxBackoff ?? 20_000;
    this.headers = { Authorization: `Bearer ${apiKey}`, ...options.headers };
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  // --- threads ---------------------------------------------------------------------------------

  createThread(body, options) {
    return this.#write("POST", "/threads", body, options);
  }

  getThread(threadId, options) {
    return this.#read(`/threads/${threadId}`, undefined, options);
  }

  /** PATCH `title`, `metadata`, `system` (a new version; "" clears it), `active_leaf_id`. */
  updateThread(threadId, body, options) {
    return this.#send("PATCH", `/threads/${threadId}`, body, options);
  }

  /** Make `messageId` the active leaf (null: start over from the root). */
  switchBranch(threadId, messageId, options) {
    return this.updateThread(threadId, { active_leaf_id: messageId }, options);
  }

  /** Erase the thread now: the executed deletion request, with its proof. */
  deleteThread(threadId, options) {
    return this.#write("DELETE", `/threads/${threadId}`, undefined, options);
  }

  listThreads(query, options) {
    return this.#read("/threads", query, options);
  }

  iterThreads(query, options) {
    return this.#iterate("/threads", query, options);
  }

  // --- messages --------------------------------------------------------------------------------

  append(threadId, body, options) {
    return this.#write("POST", `/threads/${threadId}/messages`, body, options);
  }

  /** Several messages, all or nothing, under one key (an assistant turn with its tool results). */
  appendBatch(threadId, body, options) {
    return this.#write("POST", `/threads/${threadId}/messages:batch`, body, options);
  }

  edit(threadId, messageId, body, options) {
    return this.#write("POST", `/threads/${threadId}/messages/${messageId}/edit`, body, options);
  }

  redact(threadId, messageId, body, options) {
    return this.#write("POST", `/threads/${threadId}/messages/${messageId}/redact`, body ?? {}, options);
  }

  /** One page of the path ending at `leaf`; pages walk leaf → root, each lists root → leaf. */
  listMessages(threadId, query, options) {
    return this.#read(`/threads/${threadId}/messages`, query, options);
  }

  /** The path from the leaf back toward the root, newest first, a page at a time. */
  async *iterMessages(threadId, query, options) {
    for await (const page of this.#pages(`/threads/${threadId}/messages`, query, options)) {
      yield* [...page.results].reverse();
    }
  }

  /** The whole path root → leaf (the active leaf by default). */
  async messages(threadId, query, options) {
    const newestFirst = [];
    for await (const message of this.iterMessages(threadId, query, options)) newestFirst.push(message);
    return newestFirst.reverse();
  }

  tree(threadId, query, options) {
    return this.#read(`/threads/${threadId}/tree`, query, options);
  }

  iterTree(threadId, query, options) {
    return this.#iterate(`/threads/${threadId}/tree`, query, options);
  }

  // --- model input and answers -----------------------------------------------------------------

  /** Assemble the model input of the next turn within the budget (retried freely). */
  context(threadId, body, options) {
    return this.#send("POST", `/threads/${threadId}/context`, body ?? {}, options);
  }

  /**
   * One turn, answered. A 503 (the model down, `queue_unavailable`, `run_lost`: its worker
   * stopped), a lost answer or a 409 (still answering) are retried with the same key, which
   * resumes the stored turn; a 409 `thread_busy` (another answer is running on the thread) is
   * not. When the retries run out the error carries the key: `respond(…, { idempotencyKey:
   * error.idempotencyKey })` resumes it later.
   *
   * `background: true` (answers generated in a worker): the run at once (202); follow it with
   * `getRun` or `runEvents`.
   */
  respond(threadId, body, options) {
    return this.#write("POST", `/threads/${threadId}/respond`, { ...body, stream: false }, options);
  }

  /**
   * One turn, streamed: an async iterable of `{type, data, id, retry}` events (`turn`,
   * `token`…, `done`). A stream that ends early is re-opened with the same key and
   * `Last-Event-ID`, after a `restart` event: the answer starts over. `stream.runId` is known
   * after `turn` when the answer is generated in a worker (`runEvents` re-attaches to it).
   */
  respondStream(threadId, body, options = {}) {
    const key = options.idempotencyKey ?? crypto.randomUUID();
    const events = this.#stream(`/threads/${threadId}/respond`, { ...body, stream: true }, { ...options, idempotencyKey: key });
    return new ResponseStream(events, key);
  }

  // --- runs: answers generated in a worker -----------------------------------------------------

  /** A run's state (`queued` … `completed`), and its answer's id once stored. */
  getRun(threadId, runId, options) {
    return this.#read(`/threads/${threadId}/runs/${runId}`, undefined, options);
  }

  /** Stop a run: what was generated is stored as `interrupted`. 409 `run_finished` (not
   * retried) when it is not running any more. */
  cancelRun(threadId, runId, options) {
    return this.#send("POST", `/threads/${threadId}/runs/${runId}/cancel`, undefined, options);
  }

  /**
   * A run's events (`turn`, `token`…, `done`), from the start or after `lastEventId`. A dropped
   * connection is re-opened after the last `id:` seen, so every token comes once; a `restart`
   * comes only before a `turn` with `resumed: true` after events were shown (a takeover asked
   * the model again: drop the text shown before it);
   * an `error` event (`run_cancelled`, `run_lost`, the model's error) is thrown: `run_lost` is
   * resumed by `respond` with the run's Idempotency-Key.
   */
  runEvents(threadId, runId, options = {}) {
    const { lastEventId, ...rest } = options;
    const events = this.#relay(`/threads/${threadId}/runs/${runId}/events`, lastEventId, rest);
    return new ResponseStream(events, undefined);
  }

  // --- imports and webhook endpoints -----------------------------------------------------------

  /**
   * Import exported conversations (`data`: the parsed file; ChatGPT's or Claude's
   * `conversations.json`, or a convmem JSON export), one thread each; `user_ref` is needed for
   * ChatGPT and Claude. Safe to retry: a conversation imported before is `skipped`.
   */
  importConversations(body, options) {
    return this.#send("POST", "/imports", body, options);
  }

  /** Every active endpoint of the tenant, oldest first (one list, not paged). */
  listWebhookEndpoints(options) {
    return this.#read("/webhook-endpoints", undefined, options);
  }

  /**
   * Subscribe `url` to `events`; the result has the signing `secret`, shown only now. The server
   * keeps no Idempotency-Key for it: not retried once it may have been carried out (a connection
   * lost after sending is an `APIConnectionError`; list the endpoints before creating again).
   */
  createWebhookEndpoint(body, options) {
    return this.#once("POST", "/webhook-endpoints", body, options);
  }

  getWebhookEndpoint(endpointId, options) {
    return this.#read(`/webhook-endpoints/${endpointId}`, undefined, options);
  }

  /** Change `url` or `events` (checked as at creation); the secret stays. */
  updateWebhookEndpoint(endpointId, body, options) {
    return this.#send("PATCH", `/webhook-endpoints/${endpointId}`, body, options);
  }

  /** Unsubscribe (not retried once it may have been carried out: a repeat is a 404). */
  async deleteWebhookEndpoint(endpointId, options) {
    await this.#once("DELETE", `/webhook-endpoints/${endpointId}`, undefined, options);
  }

  /** A new signing secret; the old one keeps signing beside it for a while (24 h by default).
   * Not retried once it may have been carried out. */
  rotateWebhookSecret(endpointId, options) {
    return this.#once("POST", `/webhook-endpoints/${endpointId}/rotate-secret`, undefined, options);
  }

  /** One page of the endpoint's delivery log, newest first (event ids, states, attempts). */
  webhookDeliveries(endpointId, query, options) {
    return this.#read(`/webhook-endpoints/${endpointId}/deliveries`, query, options);
  }

  iterWebhookDeliveries(endpointId, query, options) {
    return this.#iterate(`/webhook-endpoints/${endpointId}/deliveries`, query, options);
  }

  // --- memos, replay, search -------------------------------------------------------------------

  summaries(threadId, query, options) {
    return this.#read(`/threads/${threadId}/summaries`, query, options);
  }

  iterSummaries(threadId, query, options) {
    return this.#iterate(`/threads/${threadId}/summaries`, query, options);
  }

  replay(assemblyId, options) {
    return this.#read(`/assemblies/${assemblyId}/replay`, undefined, options);
  }

  search(query, options) {
    return this.#read("/search", query, options);
  }

  iterSearch(query, options) {
    return this.#iterate("/search", query, options);
  }

  searchThread(threadId, query, options) {
    return this.#read(`/threads/${threadId}/search`, query, options);
  }

  // --- exports, erasure, usage -----------------------------------------------------------------

  /** The thread's full history: parsed JSON, or the text of `format: "jsonl" | "html"`. */
  exportThread(threadId, query, options) {
    return this.#read(`/threads/${threadId}/export`, query, options);
  }

  exportUser(userRef, query, options) {
    return this.#read("/exports", { ...query, user_ref: userRef }, options);
  }

  createDeletionRequest(body, options) {
    return this.#write("POST", "/deletion-requests", body, options);
  }

  getDeletionRequest(requestId, options) {
    return this.#read(`/deletion-requests/${requestId}`, undefined, options);
  }

  /** Tokens and cost per day or month (`from`/`to`: ISO dates, both included). */
  usage(query, options) {
    return this.#read("/usage", query, options);
  }

  // --- plumbing --------------------------------------------------------------------------------

  #read(path, query, options = {}) {
    return this.#request("GET", this.#url(path, query), undefined, options, undefined);
  }

  /** A request without a key that is safe to repeat. */
  #send(method, path, body, options = {}) {
    return this.#request(method, this.#url(path), body, options, undefined);
  }

  /** A write the server keeps no key for: not repeated once it may have been carried out. */
  #once(method, path, body, options = {}) {
    return this.#request(method, this.#url(path), body, options, undefined, { repeatable: false });
  }

  /** A write: one Idempotency-Key for every attempt. */
  #write(method, path, body, options = {}) {
    return this.#request(method, this.#url(path), body, options, options.idempotencyKey ?? crypto.randomUUID());
  }

  async #request(method, url, body, options, key, { repeatable = true } = {}) {
    for (let attempt = 0; ; attempt++) {
      let response;
      let text;
      const timer = this.#timer(options);
      try {
        response = await this.fetch(url, {
          method,
          headers: this.#headers(options, key, body !== undefined),
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: timer.signal,
        });
        text = await response.text();
      } catch (error) {
        if (options.signal?.aborted) throw error;
        const again = repeatable || (!timer.timedOut() && NOT_SENT.has(error?.cause?.code));
        if (!again || attempt >= this.maxRetries) throw connectionError(error, timer.timedOut(), key);
        await sleep(this.#delay(attempt + 1));
        continue;
      } finally {
        timer.clear();
      }
      if (response.ok) return withKey(parseBody(response, text), key);
      const error = apiError(response, text, key);
      if (!retryable(error) || attempt >= this.maxRetries) throw error;
      await sleep(this.#delay(attempt + 1, error.retryAfter ?? retryAfter(response)));
    }
  }

  async *#stream(path, body, options) {
    const key = options.idempotencyKey;
    let lastId;
    let serverRetry;
    // The highest event number a connection brought. A connection cut after it brought newer
    // events does not count against `maxRetries`: the answer moved on, so a long one outlives
    // any number of cuts. A resumable `error` event (`run_lost`) counts.
    let furthest = 0;
    for (let attempt = 0; ; attempt++) {
      let shown = false;
      let wait;
      let reached = furthest;
      let toldToResume = false;
      const timer = this.#timer(options);
      try {
        const headers = { ...this.#headers(options, key, true), Accept: "text/event-stream" };
        if (lastId) headers["Last-Event-ID"] = lastId;
        const response = await this.fetch(this.#url(path), {
          method: "POST",
          headers,
          body: JSON.stringify(body),
          signal: timer.signal,
        });
        timer.clear(); // the timeout covers the answer's start; an answer may stream for long
        if (!response.ok) {
          const error = apiError(response, await response.text(), key);
          if (!retryable(error) || attempt >= this.maxRetries) throw error;
          wait = error.retryAfter ?? retryAfter(response);
        } else {
          for await (const event of sseEvents(response.body)) {
            lastId = event.id ?? lastId;
            reached = Math.max(reached, eventSeq(event.id));
            serverRetry = event.retry ?? serverRetry;
            if (event.type === "error") {
              const error = streamError(event.data, key);
              if (error.status === 503 && attempt < this.maxRetries) {
                toldToResume = true; // resumable
                break;
              }
              throw error;
            }
            if (event.type === "turn" && shown && event.data?.resumed) {
              // A takeover asked the model again: the answer starts over.
              yield { type: "restart", data: { attempt: attempt + 1 }, idempotencyKey: key };
            }
            yield { ...event, idempotencyKey: key };
            shown = true;
            if (event.type === "done") return;
          }
        }
      } catch (error) {
        if (error instanceof ConvmemError || options.signal?.aborted) throw error;
        if (attempt >= this.maxRetries && reached <= furthest) {
          throw connectionError(error, timer.timedOut(), key);
        }
      } finally {
        timer.clear();
      }
      if (reached > furthest && !toldToResume) attempt = 0; // this re-open is the first again
      furthest = Math.max(furthest, reached);
      if (attempt >= this.maxRetries) {
        throw new APIConnectionError("the stream kept ending before `done`", { idempotencyKey: key });
      }
      if (shown) yield { type: "restart", data: { attempt: attempt + 1 }, idempotencyKey: key };
      await sleep(this.#delay(attempt + 1, wait ?? (serverRetry === undefined ? undefined : serverRetry / 1000)));
    }
  }

  /** A run's events relayed: a re-opened connection continues after the last id seen. A `turn`
   * with `resumed: true` after events were shown (on this connection or an earlier one: they
   * are one sequence) means a takeover asked the model again: a `restart` comes before it. */
  async *#relay(path, lastEventId, options) {
    let lastId = lastEventId === undefined ? undefined : String(lastEventId);
    let serverRetry;
    let shown = false;
    let furthest = eventSeq(lastId); // as in #stream: a cut after newer events is not counted
    for (let attempt = 0; ; attempt++) {
      let wait;
      let reached = furthest;
      const timer = this.#timer(options);
      try {
        const headers = { ...this.#headers(options, undefined, false), Accept: "text/event-stream" };
        if (lastId) headers["Last-Event-ID"] = lastId;
        const response = await this.fetch(this.#url(path), { method: "GET", headers, signal: timer.signal });
        timer.clear();
        if (!response.ok) {
          const error = apiError(response, await response.text(), undefined);
          if (!retryable(error) || attempt >= this.maxRetries) throw error;
          wait = error.retryAfter ?? retryAfter(response);
        } else {
          for await (const event of sseEvents(response.body)) {
            lastId = event.id ?? lastId;
            reached = Math.max(reached, eventSeq(event.id));
            serverRetry = event.retry ?? serverRetry;
            if (event.type === "error") throw streamError(event.data, undefined);
            if (event.type === "turn" && shown && event.data?.resumed) {
              // A takeover asked the model again: the answer starts over.
              yield { type: "restart", data: { attempt: attempt + 1 }, idempotencyKey: undefined };
            }
            yield { ...event, idempotencyKey: undefined };
            shown = true;
            if (event.type === "done") return;
          }
        }
      } catch (error) {
        if (error instanceof ConvmemError || options.signal?.aborted) throw error;
        if (attempt >= this.maxRetries && reached <= furthest) {
          throw connectionError(error, timer.timedOut(), undefined);
        }
      } finally {
        timer.clear();
      }
      if (reached > furthest) attempt = 0; // this re-open is the first again
      furthest = Math.max(furthest, reached);
      if (attempt >= this.maxRetries) throw new APIConnectionError("the run's events kept ending before `done`");
      await sleep(this.#delay(attempt + 1, wait ?? (serverRetry === undefined ? undefined : serverRetry / 1000)));
    }
  }

  async *#pages(path, query, options) {
    let url = this.#url(path, query);
    while (url) {
      const page = await this.#request("GET", url, undefined, options ?? {}, undefined);
      yield page;
      url = page.next; // holds the query
    }
  }

  async *#iterate(path, query, options) {
    for await (const page of this.#pages(path, query, options)) yield* page.results;
  }

  #url(path, query) {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  #headers(options, key, json) {
    const headers = { ...this.headers, ...options.headers };
    if (json) headers["Content-Type"] = "application/json";
    if (key) headers["Idempotency-Key"] = key;
    return headers;
  }

  /** An abort signal for one attempt: the caller's, and the timeout. */
  #timer(options) {
    const controller = new AbortController();
    const timeout = options.timeout ?? this.timeout;
    let timedOut = false;
    const handle = timeout == null ? undefined : setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${timeout} ms`));
    }, timeout);
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    return { signal, timedOut: () => timedOut, clear: () => clearTimeout(handle) };
  }

  #delay(attempt, retryAfterSeconds) {
    if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, this.maxBackoff);
    return Math.min(this.backoff * 2 ** (attempt - 1) * (0.5 + Math.random() / 2), this.maxBackoff);
  }
}

/** The events of one streamed /respond, or of a run (`runEvents`, without a key);
 * `idempotencyKey` is known before the first event, `runId` after `turn` (answers generated in a
 * worker). */
export class ResponseStream {
  constructor(events, idempotencyKey) {
    this.events = events;
    this.idempotencyKey = idempotencyKey;
    this.runId = undefined;
    this.result = undefined;
  }

  async *[Symbol.asyncIterator]() {
    for await (const event of this.events) {
      if (event.type === "turn") this.runId = event.data.run_id ?? this.runId;
      if (event.type === "done") this.result = withKey(event.data, this.idempotencyKey);
      yield event;
    }
  }

  /** Read every event; the stored turn. */
  async untilDone() {
    for await (const _ of this) {
      // reading
    }
    return this.result;
  }
}

/** An event's number (its `id:`; the server numbers a run's events 1, 2, …), 0 without one. */
function eventSeq(id) {
  return id !== undefined && /^\d+$/.test(id) ? Number(id) : 0;
}

/** Server-Sent Events from a byte stream: `{type, data (parsed JSON), id, retry}`. */
export async function* sseEvents(body) {
  let buffer = "";
  let event = { type: "message", data: [], id: undefined, retry: undefined };
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (event.data.length) {
          yield { type: event.type, data: JSON.parse(event.data.join("\n")), id: event.id, retry: event.retry };
        }
        event = { type: "message", data: [], id: undefined, retry: undefined };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event.type = value;
      else if (field === "data") event.data.push(value);
      else if (field === "id" && !value.includes("\0")) event.id = value;
      else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
    }
  }
}

function withKey(result, key) {
  if (key && result && typeof result === "object") {
    Object.defineProperty(result, "idempotencyKey", { value: key, enumerable: false });
  }
  return result;
}

function parseBody(response, text) {
  if (response.status === 204) return undefined;
  const type = response.headers.get("content-type") ?? "";
  return type.includes("application/json") ? JSON.parse(text) : text;
}

function apiError(response, text, key) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = { code: "http_error", detail: text.slice(0, 500) };
  }
  const code = String(body?.code ?? "http_error");
  const detail = String(body?.detail ?? "");
  if (response.status === 429) {
    return new RateLimited(429, code, detail, { body, idempotencyKey: key, retryAfter: retryAfter(response) });
  }
  return new APIError(response.status, code, detail, { body, idempotencyKey: key });
}

function streamError(data, key) {
  const code = String(data?.code ?? "internal_error");
  return new APIError(data?.status ?? STREAM_ERROR_STATUS[code] ?? 502, code, String(data?.detail ?? ""), { body: data, idempotencyKey: key });
}

function retryable(error) {
  return error.status === 429 || error.status === 503 || (error.status === 409 && error.code === IN_FLIGHT);
}

function retryAfter(response) {
  const seconds = Number(response.headers.get("retry-after"));
  return response.headers.has("retry-after") && Number.isFinite(seconds) ? Math.max(seconds, 0) : undefined;
}

function connectionError(error, timedOut, key) {
  const Kind = timedOut ? APITimeoutError : APIConnectionError;
  return new Kind(`${timedOut ? "timed out" : "connection failed"}: ${error?.message ?? error}`, { idempotencyKey: key, cause: error });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
