// Type-checked only (`npm run typecheck`): the README's calls agree with the declared types.
import { Convmem, type Message, type Run, type WebhookDelivery, type WithKey } from "../src/index.js";

export async function tour(api: Convmem): Promise<WithKey<Message>> {
  const thread = await api.createThread({ user_ref: "user-42", title: "Refund" });
  const ctx = await api.context(thread.id, { window_tokens: 8192, reserve_tokens: 1024 });
  for await (const event of api.respondStream(thread.id, { content: "Hi", window_tokens: 8192 })) {
    if (event.type === "token") console.log(event.data.text);
  }
  const answer = await api.respond(thread.id, { content: "And?" });
  console.log(answer.assistant_message.content, answer.idempotencyKey);
  return api.append(thread.id, { role: "assistant", content: "DHL.", assembly_id: ctx.assembly_id });
}

export async function background(api: Convmem, threadId: string): Promise<Run> {
  const run = await api.respond(threadId, { content: "Hi", background: true });
  for await (const event of api.runEvents(threadId, run.id, { lastEventId: 2 })) console.log(event.type);
  const hook = await api.createWebhookEndpoint({ url: "https://example.com/hooks", events: ["memo.ready"] });
  const page = await api.webhookDeliveries(hook.id, { limit: 10 });
  console.log(hook.secret, page.results.map((d: WebhookDelivery) => d.status));
  return api.cancelRun(threadId, run.id);
}
