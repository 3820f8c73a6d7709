// runEvents across a takeover, run by tests/client/test_takeover_relay.py against a live server:
// the run (CONVMEM_TEST_THREAD_ID, CONVMEM_TEST_RUN_ID) was taken over by a retry of its key
// after its worker died mid-answer, so its events are the dead attempt's turn and tokens, then
// a turn with `resumed: true`, the whole answer (CONVMEM_TEST_REPLY) and done.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Convmem } from "../src/index.js";
import { cutBefore } from "./cut.js";

const REPLY = process.env.CONVMEM_TEST_REPLY;
const THREAD = process.env.CONVMEM_TEST_THREAD_ID;
const RUN = process.env.CONVMEM_TEST_RUN_ID;
const FAST = { backoff: 50, maxBackoff: 500, timeout: 15_000 };

function textAfterLastRestart(events) {
  const start = events.findLastIndex((e) => e.type === "restart") + 1;
  return events.slice(start).filter((e) => e.type === "token").map((e) => e.data.text).join("");
}

async function relayed(api) {
  const events = [];
  for await (const event of api.runEvents(THREAD, RUN)) events.push(event);
  return events;
}

function assertRestartsBeforeTheResumedTurn(events) {
  const types = events.map((e) => e.type);
  assert.equal(types.filter((t) => t === "restart").length, 1, types.join(","));
  const restart = types.indexOf("restart");
  assert.equal(types[restart - 1], "token");
  assert.equal(types[restart + 1], "turn");
  assert.equal(events[restart + 1].data.resumed, true);
  assert.ok(textAfterLastRestart(events.slice(0, restart)).length > 0); // the dead attempt's
  assert.equal(textAfterLastRestart(events), REPLY);
  assert.equal(events.at(-1).type, "done");
  assert.equal(events.at(-1).data.assistant_message.content, REPLY);
  const ids = events.filter((e) => e.type !== "restart").map((e) => Number(e.id));
  assert.deepEqual(ids, ids.map((_, n) => n + 1)); // each event once
}

test("a relay across a takeover restarts before the resumed turn", async () => {
  assertRestartsBeforeTheResumedTurn(await relayed(new Convmem(FAST)));
});

test("the restart comes also when the connection was cut just before the resumed turn", async () => {
  const opened = [];
  const flakyFetch = async (url, init) => {
    const response = await fetch(url, init);
    opened.push(init.headers["Last-Event-ID"]);
    if (opened.length > 1) return response;
    return new Response(cutBefore(response.body, "event: turn", 2), response);
  };
  const events = await relayed(new Convmem({ ...FAST, fetch: flakyFetch }));
  assert.equal(opened.length, 2);
  assertRestartsBeforeTheResumedTurn(events);
  const restart = events.findIndex((e) => e.type === "restart");
  assert.equal(opened[1], events[restart - 1].id); // re-opened after the last event read
});
