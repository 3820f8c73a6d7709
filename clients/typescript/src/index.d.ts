// Types of the convmem client (index.js). Resource and request shapes come from schema.d.ts,
// generated from the API's OpenAPI schema by openapi-typescript (`npm run generate`).
import type { components, operations } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

type Schemas = components["schemas"];
type Query<Operation extends keyof operations> = NonNullable<operations[Operation]["parameters"]["query"]>;

export type Thread = Schemas["Thread"];
export type Message = Schemas["Message"];
export type TreeNode = Schemas["TreeNode"];
export type MessageBatch = Schemas["MessageBatch"];
export type ChatMessage = Schemas["ChatMessage"];
export type Context = Schemas["ContextResponse"];
export type Summary = Schemas["Summary"];
export type Replay = Schemas["Replay"];
export type RespondResult = Schemas["RespondResult"];
export type DeletionRequest = Schemas["DeletionRequest"];
export type SearchHit = Schemas["SearchHit"];
export type UsageRollup = Schemas["UsageRollup"];
export type ErrorBody = Schemas["Error"];
export type Run = Schemas["Run"];
export type ImportReport = Schemas["ImportReport"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookEndpointWithSecret = Schemas["WebhookEndpointWithSecret"];
export type WebhookDelivery = Schemas["WebhookDelivery"];

type RespondBody = Omit<Schemas["RespondRequestRequest"], "stream">;

export interface Page<T> {
  results: T[];
  next: string | null;
}

/** A write's result: the Idempotency-Key it was sent with (not enumerable). */
export type WithKey<T> = T & { readonly idempotencyKey: string };

export const VERSION: string;

export interface ClientOptions {
  /** Default: CONVMEM_BASE_URL, else http://127.0.0.1:8000 (with or without /api/v1). */
  baseUrl?: string;
  /** Default: CONVMEM_API_KEY. */
  apiKey?: string;
  /** Milliseconds per attempt (for a stream: until the answer starts). Default 60000. */
  timeout?: number | null;
  maxRetries?: number;
  /** First backoff in ms (doubled per attempt, with jitter). Default 500. */
  backoff?: number;
  maxBackoff?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export interface CallOptions {
  timeout?: number | null;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface WriteOptions extends CallOptions {
  /** Default: a random UUID, reused on every retry. */
  idempotencyKey?: string;
}

export interface StreamEvent {
  /** `turn`, `token` (`data.text`), `done` (`data`: the stored turn), or `restart` (made by the
   * client: the answer starts over, drop the text shown before it). A `restart` comes before a
   * `turn` with `resumed: true` after events were shown (a takeover asked the model again), and,
   * for `respondStream` only, when the stream ended early and is re-opened with the same key (a
   * run's events continue after the last id seen). */
  type: "turn" | "token" | "done" | "restart" | string;
  data: any;
  /** The event's sequence number (its SSE `id:`), when the server sends one. */
  id?: string;
  retry?: number;
  /** The key of the /respond call (undefined for `runEvents`). */
  idempotencyKey: string | undefined;
}

export interface RunEventsOptions extends CallOptions {
  /** Relay the events after this sequence number (an event's `id`). */
  lastEventId?: string | number;
}

export class ResponseStream implements AsyncIterable<StreamEvent> {
  /** The /respond call's key (undefined for `runEvents`). */
  readonly idempotencyKey: string | undefined;
  /** The run, once `turn` was read (answers generated in a worker). */
  runId: string | undefined;
  /** The stored turn, once `done` was read. */
  result: WithKey<RespondResult> | undefined;
  [Symbol.asyncIterator](): AsyncIterator<StreamEvent>;
  untilDone(): Promise<WithKey<RespondResult>>;
}

export class ConvmemError extends Error {
  idempotencyKey: string | undefined;
}
export class APIConnectionError extends ConvmemError {}
export class APITimeoutError extends APIConnectionError {}
export class APIError extends ConvmemError {
  status: number;
  code: string;
  detail: string;
  errors: Record<string, unknown> | undefined;
  body: unknown;
}
export class RateLimited extends APIError {
  /** Seconds, from Retry-After. */
  retryAfter: number | undefined;
}

export function sseEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ type: string; data: any; id?: string; retry?: number }>;

export class Convmem {
  constructor(options?: ClientOptions);
  readonly baseUrl: string;

  createThread(body: Schemas["ThreadCreateRequest"], options?: WriteOptions): Promise<WithKey<Thread>>;
  getThread(threadId: string, options?: CallOptions): Promise<Thread>;
  updateThread(threadId: string, body: Schemas["PatchedThreadUpdateRequest"], options?: CallOptions): Promise<Thread>;
  switchBranch(threadId: string, messageId: string | null, options?: CallOptions): Promise<Thread>;
  deleteThread(threadId: string, options?: WriteOptions): Promise<WithKey<DeletionRequest>>;
  listThreads(query?: Query<"threads_list">, options?: CallOptions): Promise<Page<Thread>>;
  iterThreads(query?: Query<"threads_list">, options?: CallOptions): AsyncGenerator<Thread>;

  append(threadId: string, body: Schemas["MessageCreateRequest"], options?: WriteOptions): Promise<WithKey<Message>>;
  appendBatch(threadId: string, body: Schemas["MessageBatchCreateRequest"], options?: WriteOptions): Promise<WithKey<MessageBatch>>;
  edit(threadId: string, messageId: string, body: Schemas["MessageEditRequest"], options?: WriteOptions): Promise<WithKey<Message>>;
  redact(threadId: string, messageId: string, body?: Schemas["RedactRequestRequest"], options?: WriteOptions): Promise<WithKey<DeletionRequest>>;
  listMessages(threadId: string, query?: Query<"messages_path">, options?: CallOptions): Promise<Page<Message>>;
  iterMessages(threadId: string, query?: Query<"messages_path">, options?: CallOptions): AsyncGenerator<Message>;
  messages(threadId: string, query?: Query<"messages_path">, options?: CallOptions): Promise<Message[]>;
  tree(threadId: string, query?: Query<"threads_tree">, options?: CallOptions): Promise<Page<TreeNode>>;
  iterTree(threadId: string, query?: Query<"threads_tree">, options?: CallOptions): AsyncGenerator<TreeNode>;

  context(threadId: string, body?: Schemas["ContextRequestRequest"], options?: CallOptions): Promise<Context>;
  /** `background: true`: the run at once (202), generated in a worker. */
  respond(threadId: string, body: RespondBody & { background: true }, options?: WriteOptions): Promise<WithKey<Run>>;
  respond(threadId: string, body: RespondBody & { background?: false }, options?: WriteOptions): Promise<WithKey<RespondResult>>;
  respondStream(threadId: string, body: Omit<RespondBody, "background">, options?: WriteOptions): ResponseStream;

  getRun(threadId: string, runId: string, options?: CallOptions): Promise<Run>;
  cancelRun(threadId: string, runId: string, options?: CallOptions): Promise<Run>;
  runEvents(threadId: string, runId: string, options?: RunEventsOptions): ResponseStream;

  importConversations(body: Schemas["ImportRequestRequest"], options?: CallOptions): Promise<ImportReport>;
  listWebhookEndpoints(options?: CallOptions): Promise<WebhookEndpoint[]>;
  createWebhookEndpoint(body: Schemas["WebhookEndpointCreateRequest"], options?: CallOptions): Promise<WebhookEndpointWithSecret>;
  getWebhookEndpoint(endpointId: string, options?: CallOptions): Promise<WebhookEndpoint>;
  updateWebhookEndpoint(endpointId: string, body: Schemas["PatchedWebhookEndpointUpdateRequest"], options?: CallOptions): Promise<WebhookEndpoint>;
  deleteWebhookEndpoint(endpointId: string, options?: CallOptions): Promise<void>;
  rotateWebhookSecret(endpointId: string, options?: CallOptions): Promise<WebhookEndpointWithSecret>;
  webhookDeliveries(endpointId: string, query?: Query<"webhook_endpoints_deliveries">, options?: CallOptions): Promise<Page<WebhookDelivery>>;
  iterWebhookDeliveries(endpointId: string, query?: Query<"webhook_endpoints_deliveries">, options?: CallOptions): AsyncGenerator<WebhookDelivery>;

  summaries(threadId: string, query?: Query<"threads_summaries">, options?: CallOptions): Promise<Page<Summary>>;
  iterSummaries(threadId: string, query?: Query<"threads_summaries">, options?: CallOptions): AsyncGenerator<Summary>;
  replay(assemblyId: string, options?: CallOptions): Promise<Replay>;
  search(query: Query<"search">, options?: CallOptions): Promise<Page<SearchHit>>;
  iterSearch(query: Query<"search">, options?: CallOptions): AsyncGenerator<SearchHit>;
  searchThread(threadId: string, query: Query<"threads_search">, options?: CallOptions): Promise<Page<SearchHit>>;

  exportThread(threadId: string, query?: Query<"threads_export">, options?: CallOptions): Promise<any>;
  exportUser(userRef: string, query?: Omit<Query<"exports_user">, "user_ref">, options?: CallOptions): Promise<any>;
  createDeletionRequest(body: Schemas["DeletionRequestCreateRequest"], options?: WriteOptions): Promise<WithKey<DeletionRequest>>;
  getDeletionRequest(requestId: string, options?: CallOptions): Promise<DeletionRequest>;
  usage(query?: Query<"usage_rollup">, options?: CallOptions): Promise<UsageRollup>;
}
