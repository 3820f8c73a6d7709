// The TypeScript client against a live convmem server, run by tests/client/test_typescript.py
// (which starts the server, a local chat model and sets the environment):
// CONVMEM_BASE_URL, CONVMEM_API_KEY (with the export scope), CONVMEM_TEST_CHAT_CONTROL (the chat
// server's control URL) and CONVMEM_TEST_REPLY (what the chat model answers).
import assert from "node:assert/strict";
import { test } from "node:test";

import { APIConnectionError, APIError, Convmem } from "../src/index.js";
import { cutBefore } from "./cut.js";

const REPLY = process.env.CONVMEM_TEST_REPLY;
const BUDGET = { window_tokens: 4096, reserve_tokens: 256 };
// Short backoff: the tests check what is retried, not how long it waits.
const FAST = { backoff: 50, maxBackoff: 500, timeout: 15_000 };

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

async function userTurns(api, threadId) {
  const tree = [];
  for await (const node of api.iterTree(threadId)) tree.push(node);
  return tree.filter((node) => node.role === "user").length;
}

test("a conversation through the client", async () => {
  const api = client(); // CONVMEM_BASE_URL and CONVMEM_API_KEY
  const thread = await api.createThread({ user_ref: "ts-42", title: "Refund", system: "Be brief." });
  assert.ok(thread.idempotencyKey);
  assert.equal(thread.system_version, 1);
  const first = await api.append(thread.id, { role: "user", content: "My order ORD-1234 arrived broken." });
  await api.append(thread.id, { role: "assistant", content: "Sorry to hear that. Refund or replacement?" });
  const edited = await api.edit(thread.id, first.id, { content: "It arrived broken; replace it." });
  assert.equal(edited.edits_id, first.id);
  assert.deepEqual((await api.messages(thread.id)).map((m) => m.id), [edited.id]);
  await api.switchBranch(thread.id, first.id);
  assert.equal((await api.getThread(thread.id)).active_leaf_id, first.id);
  await api.switchBranch(thread.id, edited.id);

  const context = await api.context(thread.id, BUDGET);
  assert.equal(context.messages[0].content, "Be brief.");
  assert.deepEqual(context.messages.at(-1), { role: "user", content: edited.content });
  assert.equal((await api.replay(context.assembly_id)).matches, true);

  const answer = await api.respond(thread.id, { content: "When will it ship?", ...BUDGET });
  assert.equal(answer.assistant_message.content, REPLY);
  assert.ok(answer.idempotencyKey);
  const stream = api.respondStream(thread.id, { content: "And the parcel service?", ...BUDGET });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.equal(events[0].type, "turn");
  assert.equal(events.filter((e) => e.type === "token").map((e) => e.data.text).join(""), REPLY);
  assert.equal(stream.result.idempotencyKey, stream.idempotencyKey);
  const path = await api.messages(thread.id, { limit: 2 });
  assert.deepEqual(path.slice(-2).map((m) => m.id), [
    stream.result.user_message.id,
    stream.result.assistant_message.id,
  ]);
  assert.equal((await api.usage()).totals.turns, 2);

  const batch = await api.appendBatch(thread.id, {
    messages: [
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "track", arguments: "{}" } }],
      },
      { role: "tool", content: "In transit.", tool_call_id: "call_1" },
    ],
  });
  assert.deepEqual(batch.results.map((m) => m.role), ["assistant", "tool"]);
  assert.deepEqual((await api.search({ q: "transit" })).results.map((h) => h.message_id), [batch.results[1].id]);
  assert.deepEqual((await api.searchThread(thread.id, { q: "parcel" })).results.map((h) => h.message_id), [
    stream.result.user_message.id,
  ]);
  assert.deepEqual((await api.summaries(thread.id)).results, []);
  assert.match((await api.exportThread(thread.id)).schema, /^convmem\.export\//);

  const redacted = await api.redact(thread.id, first.id, { reason: "personal data" });
  assert.deepEqual(redacted.proof.erased.messages, [first.id]);
  const filed = await api.createDeletionRequest({ user_ref: "ts-42", reason: "account closed" });
  assert.equal((await api.getDeletionRequest(filed.id)).status, "received");
  const listed = [];
  for await (const t of api.iterThreads({ user_ref: "ts-42", limit: 1 })) listed.push(t.id);
  assert.deepEqual(listed, [thread.id]);
  assert.equal((await api.deleteThread(thread.id)).status, "executed");
  await assert.rejects(api.getThread(thread.id), (error) => error instanceof APIError && error.status === 404);
});

test("a key given is reused, and a key reused with another body is an error with that key", async () => {
  const api = client();
  const thread = await api.createThread({ user_ref: "ts-1" });
  const key = `hello-${thread.id}`;
  const first = await api.append(thread.id, { role: "user", content: "Hello?" }, { idempotencyKey: key });
  const again = await api.append(thread.id, { role: "user", content: "Hello?" }, { idempotencyKey: key });
  assert.equal(again.id, first.id);
  await assert.rejects(
    api.append(thread.id, { role: "user", content: "Bye" }, { idempotencyKey: key }),
    (error) => error instanceof APIError && error.status === 422 && error.idempotencyKey === key,
  );
  await assert.rejects(
    api.append(thread.id, { role: "narrator", content: "hi" }),
    (error) => error.status === 400 && error.code === "invalid" && "role" in error.errors,
  );
});

test("respond retried after a 503 never stores a second user turn", async () => {
  await chatModel({ mode: "fail_n_then_ok", fail_n: 1 });
  const api = client({ maxRetries: 0 });
  const thread = await api.createThread({ user_ref: "ts-1" });
  const down = await api.respond(thread.id, { content: "Is it shipped?", ...BUDGET }).catch((error) => error);
  assert.ok(down instanceof APIError);
  assert.equal(down.status, 503);
  assert.equal(await userTurns(api, thread.id), 1);
  const answer = await api.respond(
    thread.id,
    { content: "Is it shipped?", ...BUDGET },
    { idempotencyKey: down.idempotencyKey },
  );
  assert.equal(answer.idempotencyKey, down.idempotencyKey);
  assert.equal(answer.assistant_message.content, REPLY);
  assert.equal(await userTurns(api, thread.id), 1);
  await chatModel({ mode: "ok" });
});

test("a stream cut mid-answer re-connects with the same key and completes once", async () => {
  await chatModel({ chunk_delay: 0.1 });
  let cut = false;
  const keys = [];
  // The network between client and server: the first stream is cut before its third token.
  const flakyFetch = async (url, init) => {
    const response = await fetch(url, init);
    if (init.headers.Accept !== "text/event-stream") return response;
    keys.push(init.headers["Idempotency-Key"]);
    if (cut) return response;
    cut = true;
    return new Response(cutBefore(response.body, "event: token", 3), response);
  };
  const api = client({ fetch: flakyFetch });
  const thread = await api.createThread({ user_ref: "ts-1" });
  const events = [];
  for await (const event of api.respondStream(thread.id, { content: "Is it shipped?", ...BUDGET })) {
    events.push(event);
  }
  await chatModel({ chunk_delay: 0 });
  assert.deepEqual(events.slice(0, 4).map((e) => e.type), ["turn", "token", "token", "restart"]);
  assert.equal(events[4].type, "turn");
  assert.equal(events.at(-1).type, "done");
  assert.equal(events.slice(4).filter((e) => e.type === "token").map((e) => e.data.text).join(""), REPLY);
  // Re-opened with the same key (a 409 while the server still answers the cut one is retried).
  assert.ok(keys.length >= 2);
  assert.ok(keys.every((key) => key === keys[0]));
  // One complete answer (the interrupted one completed, or replayed, or answered anew, as the
  // server saw the client go); any other answer is an interrupted prefix of it.
  const answers = [];
  for await (const node of api.iterTree(thread.id)) if (node.role === "assistant") answers.push(node);
  const complete = answers.filter((a) => a.status === "complete").map((a) => a.id);
  assert.deepEqual(complete, [events.at(-1).data.assistant_message.id]);
  for (const a of answers.filter((a) => a.status === "interrupted")) assert.ok(REPLY.startsWith(a.content));
  assert.equal(await userTurns(api, thread.id), 1);
});

test("a server that cannot be reached is a connection error with the key", async () => {
  const api = client({ baseUrl: "http://127.0.0.1:9", maxRetries: 1, backoff: 10 });
  await assert.rejects(
    api.createThread({ user_ref: "ts-1" }, { idempotencyKey: "create-1" }),
    (error) => error instanceof APIConnectionError && error.idempotencyKey === "create-1",
  );
});

test("pages are followed lazily, newest first", async () => {
  const api = client();
  const thread = await api.createThread({ user_ref: "ts-pages" });
  const sent = [];
  for (let n = 0; n < 5; n++) sent.push((await api.append(thread.id, { role: "user", content: `turn ${n}` })).id);
  const page = await api.listMessages(thread.id, { limit: 2 });
  assert.deepEqual(page.results.map((m) => m.id), sent.slice(3));
  const newestFirst = api.iterMessages(thread.id, { limit: 2 });
  assert.equal((await newestFirst.next()).value.id, sent[4]);
  assert.equal((await newestFirst.next()).value.id, sent[3]);
  assert.deepEqual((await api.messages(thread.id, { limit: 2 })).map((m) => m.id), sent);
});
