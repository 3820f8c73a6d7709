// A network that breaks: shared by the node tests.

/** The body up to the `nth` occurrence of `marker`, then a network error; the real connection is
 * closed (so the server sees the client go). */
export function cutBefore(body, marker, nth) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let seen = "";
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      const before = seen.length;
      seen += decoder.decode(value, { stream: true });
      let at = -1;
      for (let n = 0; n < nth; n++) {
        at = seen.indexOf(marker, at + 1);
        if (at < 0) break;
      }
      if (at < 0) return controller.enqueue(value);
      controller.enqueue(encoder.encode(seen.slice(before, at)));
      await reader.cancel();
      controller.error(new TypeError("network error: connection cut"));
    },
  });
}
