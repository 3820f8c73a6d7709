// Runs (answers generated in a worker) and webhooks through the TypeScript client, run by
// tests/client/test_typescript.py against a live server with a real Celery worker generating
// answers and delivering webhooks. Environment: as client.test.js, plus CONVMEM_TEST_IMPORT_FILE
// (a ChatGPT export).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { test } from "node:test";

import { APIError, Convmem } from "../src/index.js";
import { cutBefore } from "./cut.js";

const REPLY = process.env.CONVMEM_TEST_REPLY;
const BUDGET = { window_tokens: 4096, reserve_tokens: 256 };
const FAST = { backoff: 50, maxBackoff: 500, timeout: 15_000 };
const QUESTION = "My order ORD-1234 arrived broken.";

function client(options = {}) {
  return new Convmem({ ...FAST, ...options });
}

async function chatModel(settings) {
  const response = await fetch(process.env.CONVMEM_TEST_CHAT_CONTROL, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(settings),
  });
  assert.equal(response.status, 200);
}

async function until(condition, what) {
  for (let tries = 0; tries < 300; tries++) {
    const value = await condition();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never: ${what}`);
}

/** A local webhook receiver: records each POST and answers 204. */
async function receiver() {
  const received = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(204).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/hooks`;
  return { url, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** The Standard Webhooks check a receiver makes: one of the `v1,` signatures is the base64
 * HMAC-SHA256, keyed by the secret's base64 part, of `id.timestamp.body`. */
function signedBy(secret, { headers, body }) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`;
  const expected = `v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
  return headers["webhook-signature"].split(" ").includes(expected);
}

test("cuts that each bring the run's events on do not use the retries up", async () => {
  await chatModel({ chunk_delay: 0.02 });
  let cuts = 3;
  // Every events connection but the last drops after two tokens; one retry is allowed.
  const flakyFetch = async (url, init) => {
    const response = await fetch(url, init);
    if (!url.endsWith("/events") || cuts === 0) return response;
    cuts -= 1;
    return new Response(cutBefore(response.body, "event: token", 3), response);
  };
  const api = client();
  const thread = await api.createThread({ user_ref: "ts-runs-cuts" });
  const run = await api.respond(thread.id, { content: QUESTION, background: true, ...BUDGET });
  const events = [];
  for await (const event of client({ fetch: flakyFetch, maxRetries: 1 }).runEvents(thread.id, run.id)) {
    events.push(event);
  }
  assert.equal(cuts, 0);
  assert.deepEqual(events.map((e) => Number(e.id)), events.map((_, n) => n + 1));
  assert.equal(events.filter((e) => e.type === "token").map((e) => e.data.text).join(""), REPLY);
  assert.equal(events.at(-1).type, "done");

  // A streamed answer re-opened with its key relays the run from its start: each connection
  // is cut a little further on (before its 3rd, 5th, 7th token), the fourth completes. Each
  // re-open must find the answer still streaming (a finished one is replayed as one token
  // event, and not cut): a word every 0.2 s leaves the re-opens over two seconds.
  await chatModel({ chunk_delay: 0.2 });
  const at = [3, 5, 7];
  const cutRespond = async (url, init) => {
    const response = await fetch(url, init);
    if (!url.endsWith("/respond") || at.length === 0) return response;
    return new Response(cutBefore(response.body, "event: token", at.shift()), response);
  };
  const stream = client({ fetch: cutRespond, maxRetries: 1 }).respondStream(thread.id, {
    content: "And the refund?",
    ...BUDGET,
  });
  const shown = [];
  for await (const event of stream) shown.push(event.type);
  assert.equal(at.length, 0);
  assert.equal(shown.filter((type) => type === "restart").length, 3, shown.join(","));
  assert.equal(stream.result.assistant_message.content, REPLY);
});

test("a background answer is followed through its events, re-attached after a cut", async () => {
  await chatModel({ chunk_delay: 0.02 });
  const opened = [];
  let cut = false;
  // The network between client and server: the first events connection drops after two tokens.
  const flakyFetch = async (url, init) => {
    const response = await fetch(url, init);
    if (!url.endsWith("/events")) return response;
    opened.push(init.headers["Last-Event-ID"]);
    if (cut) return response;
    cut = true;
    return new Response(cutBefore(response.body, "event: token", 3), response);
  };
  const api = client({ fetch: flakyFetch });
  const thread = await api.createThread({ user_ref: "ts-runs" });
  const run = await api.respond(thread.id, { content: QUESTION, background: true, ...BUDGET });
  assert.match(run.id, /^run_/);
  assert.ok(run.idempotencyKey);
  assert.ok(["queued", "running"].includes(run.state), run.state);

  const events = [];
  for await (const event of api.runEvents(thread.id, run.id)) events.push(event);
  assert.equal(opened.length, 2);
  assert.equal(opened[0], undefined);
  assert.equal(opened[1], events[2].id); // re-attached after the last event read: turn, 2 tokens
  assert.ok(!events.some((e) => e.type === "restart"));
  assert.deepEqual(events.map((e) => Number(e.id)), events.map((_, n) => n + 1)); // each once
  assert.equal(events.filter((e) => e.type === "token").map((e) => e.data.text).join(""), REPLY);
  const done = events.at(-1);
  assert.equal(done.type, "done");
  assert.equal(done.data.assistant_message.content, REPLY);

  const stored = await api.getRun(thread.id, run.id);
  assert.equal(stored.state, "completed");
  assert.equal(stored.assistant_message_id, done.data.assistant_message.id);
  assert.equal(stored.seq, events.length);
  const tail = api.runEvents(thread.id, run.id, { lastEventId: events.at(-3).id });
  const rest = [];
  for await (const event of tail) rest.push(event.type);
  assert.deepEqual(rest, ["token", "done"]);
  assert.equal(tail.result.assistant_message.id, done.data.assistant_message.id);

  const replayed = await api.respond(thread.id, { content: QUESTION, ...BUDGET }, { idempotencyKey: run.idempotencyKey });
  assert.equal(replayed.assistant_message.id, done.data.assistant_message.id);
  await chatModel({ chunk_delay: 0 });
});

test("a streamed answer names its run", async () => {
  const api = client();
  const thread = await api.createThread({ user_ref: "ts-runs" });
  const stream = api.respondStream(thread.id, { content: "Where is my parcel?", ...BUDGET });
  const result = await stream.untilDone();
  assert.match(stream.runId, /^run_/);
  assert.equal((await api.getRun(thread.id, stream.runId)).assistant_message_id, result.assistant_message.id);
});

test("a cancelled run keeps its partial answer, and a finished run cannot be cancelled", async () => {
  await chatModel({ chunk_delay: 0.2 });
  const api = client();
  const thread = await api.createThread({ user_ref: "ts-runs" });
  const run = await api.respond(thread.id, { content: QUESTION, background: true, ...BUDGET });
  await assert.rejects(
    api.respond(thread.id, { content: "And another thing.", ...BUDGET }),
    (error) => error instanceof APIError && error.status === 409 && error.code === "thread_busy",
  );

  const seen = [];
  const events = api.runEvents(thread.id, run.id)[Symbol.asyncIterator]();
  for (let n = 0; n < 3; n++) seen.push((await events.next()).value);
  assert.equal((await api.cancelRun(thread.id, run.id)).id, run.id);
  await assert.rejects(
    (async () => {
      for (let next = await events.next(); !next.done; next = await events.next()) seen.push(next.value);
    })(),
    (error) => error instanceof APIError && error.status === 409 && error.code === "run_cancelled",
  );
  const stored = await api.getRun(thread.id, run.id);
  assert.equal(stored.state, "interrupted");
  assert.equal(stored.error, "cancelled");
  const [partial] = (await api.messages(thread.id)).filter((m) => m.id === stored.assistant_message_id);
  assert.equal(partial.status, "interrupted");
  assert.ok(REPLY.startsWith(partial.content) && partial.content.length < REPLY.length);
  assert.ok(partial.content.startsWith(seen.filter((e) => e.type === "token").map((e) => e.data.text).join("")));
  await assert.rejects(
    api.cancelRun(thread.id, run.id),
    (error) => error instanceof APIError && error.status === 409 && error.code === "run_finished",
  );
  await chatModel({ chunk_delay: 0 });
});

test("webhook endpoints: created, changed, signed deliveries in their log, rotated, deleted", async () => {
  const hooks = await receiver();
  try {
    const api = client();
    const created = await api.createWebhookEndpoint({ url: hooks.url, events: ["memo.ready"] });
    assert.match(created.id, /^whk_/);
    assert.match(created.secret, /^whsec_/);
    const read = await api.getWebhookEndpoint(created.id);
    assert.equal(read.url, hooks.url);
    assert.ok(!("secret" in read));
    const changed = await api.updateWebhookEndpoint(created.id, { events: ["response.completed", "memo.ready"] });
    assert.deepEqual(changed.events, ["memo.ready", "response.completed"]);
    assert.deepEqual((await api.listWebhookEndpoints()).map((e) => e.id), [created.id]);

    const thread = await api.createThread({ user_ref: "ts-hooks" });
    const answer = await api.respond(thread.id, { content: QUESTION, ...BUDGET });
    await until(() => hooks.received.length === 1, "the event reaches the receiver");
    const [event] = hooks.received;
    assert.ok(signedBy(created.secret, event));
    const payload = JSON.parse(event.body);
    assert.equal(payload.type, "response.completed");
    assert.equal(payload.data.assistant_message_id, answer.assistant_message.id);
    assert.ok(!event.body.includes("ORD-1234") && !event.body.includes(REPLY));

    const delivered = await until(async () => {
      const page = await api.webhookDeliveries(created.id, { limit: 10 });
      return page.results[0]?.status === "delivered" && page;
    }, "the delivery is logged as delivered");
    assert.deepEqual(delivered.results.map((d) => [d.event_id, d.event_type, d.attempts, d.last_status_code]), [
      [event.headers["webhook-id"], "response.completed", 1, 204],
    ]);
    const all = [];
    for await (const delivery of api.iterWebhookDeliveries(created.id, { limit: 1 })) all.push(delivery.event_id);
    assert.deepEqual(all, [event.headers["webhook-id"]]);

    const rotated = await api.rotateWebhookSecret(created.id);
    assert.equal(rotated.id, created.id);
    assert.notEqual(rotated.secret, created.secret);
    assert.equal(await api.deleteWebhookEndpoint(created.id), undefined);
    assert.deepEqual(await api.listWebhookEndpoints(), []);
    await assert.rejects(api.getWebhookEndpoint(created.id), (error) => error instanceof APIError && error.status === 404);
  } finally {
    await hooks.close();
  }
});

test("a webhook endpoint whose answer is lost is not created twice", async () => {
  let sent = 0;
  // The request reaches the server; its answer is lost on the way back.
  const lossyFetch = async (url, init) => {
    if (init.method !== "POST") return fetch(url, init);
    sent += 1;
    await fetch(url, init);
    throw new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) });
  };
  const api = client({ fetch: lossyFetch });
  await assert.rejects(
    api.createWebhookEndpoint({ url: "http://127.0.0.1:9/hooks", events: ["memo.ready"] }),
    (error) => error.name === "APIConnectionError",
  );
  assert.equal(sent, 1);
  const [endpoint] = await api.listWebhookEndpoints();
  await api.deleteWebhookEndpoint(endpoint.id);
});

test("a ChatGPT export is imported once", async () => {
  const api = client();
  const data = JSON.parse(readFileSync(process.env.CONVMEM_TEST_IMPORT_FILE, "utf8"));
  const report = await api.importConversations({ data, user_ref: "ts-import" });
  assert.deepEqual([report.format, report.imported, report.skipped, report.failed], ["chatgpt", data.length, 0, 0]);
  const first = report.results[0];
  assert.equal((await api.getThread(first.thread_id)).user_ref, "ts-import");
  assert.ok((await api.messages(first.thread_id)).length > 0);
  const again = await api.importConversations({ data, user_ref: "ts-import", format: "chatgpt" });
  assert.deepEqual([again.imported, again.skipped], [0, data.length]);
  assert.deepEqual(again.results.map((r) => r.thread_id).sort(), report.results.map((r) => r.thread_id).sort());
});
