"""A real local HTTP server speaking OpenAI chat completions, scriptable to fail on purpose.

It listens on 127.0.0.1 only (an ephemeral port by default) and answers
`POST /v1/chat/completions` in the OpenAI response shape (with `usage`, counted in words),
`GET /v1/models`, and `POST /_control` (JSON `{"mode", "fail_n", "delay", "context_limit"}`,
any subset) to change its behaviour while it runs. With `context_limit` set, a request whose
prompt words plus `max_tokens` exceed it gets OpenAI's HTTP 400 `context_length_exceeded`.
Modes:

- "ok": a deterministic memo: the lines of the last user message that carry a digit, "@" or
  "?", joined with "; " (so tests can see the facts went through), cut to `max_tokens` words;
- "error500": HTTP 500 with an OpenAI error body;
- "timeout": sleeps `delay` seconds (default 2) before answering as "ok";
- "malformed": HTTP 200 with a body that is not JSON;
- "no_choices": HTTP 200, valid JSON without `choices`;
- "empty": HTTP 200, one choice whose content is "";
- "fail_n_then_ok": the first `fail_n` completion requests get a 500, the rest "ok";
- "error_html": HTTP 502 with an HTML page (as a proxy in front of a model answers);
- "stream_error": as "ok", but a stream sends an error chunk (`data: {"error": …}`, as
  OpenAI's servers report a failure after the headers) after its first word, and ends.

`model_name`, `finish_reason` and `usage` (a dict sent as is) override what a reply reports, so
a test can send what no database column holds.

With `api_key` set, requests without `Authorization: Bearer <api_key>` get a 401. Every
completion request is recorded (`requests`) with its headers and parsed body.

Streaming (`"stream": true` in the request, as the respond endpoint asks): the reply goes out as
Server-Sent Events in the `chat.completion.chunk` shape, one word (with its trailing space) per
chunk, `chunk_delay` seconds apart (the first after `first_token_delay` seconds of silence, the
role chunk sent: a model slow to its first token), then a chunk with `finish_reason`, then
(when the request asks with `stream_options.include_usage`) a usage chunk with no choices, then
`data: [DONE]`.
`reply` sets a fixed reply text for every mode that answers (default: the deterministic memo
above). A request with a JSON-schema `response_format` is answered with that memo as JSON
(`{"lines": [{"role", "text", "values"}]}`), or, with `json_schema=False` (a server without
structured output), refused with HTTP 400 naming `response_format`.
`stream_fail_after` (a number of words) ends the stream there without `finish_reason`
or `[DONE]`, as a server that dies mid-answer does. A stream whose client went away is counted
in `aborted_streams` (so a test can see that the caller stopped reading the model).

In tests: `with ChatServer(mode="error500") as server: ... server.base_url ...`.
As a process: `python -m tests.support.chat_server --port 0 --mode ok`; the first line on stdout
is `chat server listening on <base_url>`.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"
MODES = (
    "ok",
    "error500",
    "timeout",
    "malformed",
    "no_choices",
    "empty",
    "fail_n_then_ok",
    "error_html",
    "stream_error",
)
ERROR_PAGE = b"<html><body><h1>502 Bad Gateway</h1><p>upstream internal-gpu-7</p></body></html>"
COMPLETIONS_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
CONTROL_PATH = "/_control"
# How often serve_forever checks for shutdown; the default 0.5 s would slow every test teardown.
POLL_INTERVAL = 0.02


@dataclass(frozen=True)
class RecordedRequest:
    """One completion request as received: lower-cased header names, the JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


class ChatServer:
    """The server; `start()`/`stop()` or use it as a context manager. Thread-safe."""

    def __init__(
        self,
        *,
        mode: str = "ok",
        fail_n: int = 1,
        delay: float = 2.0,
        api_key: str | None = None,
        port: int = 0,
        context_limit: int | None = None,
        json_schema: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self.json_schema = json_schema
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._completions_seen = 0
        self.mode = _checked_mode(mode)
        self.fail_n = fail_n
        self.delay = delay
        self.api_key = api_key
        self.context_limit = context_limit
        self.reply: str | None = None
        self.chunk_delay = 0.0
        self.first_token_delay = 0.0
        self.stream_fail_after: int | None = None
        self.overrides: dict[str, Any] = {}
        self._aborted_streams = 0
        self._httpd = ThreadingHTTPServer((HOST, port), _Handler)
        self._httpd.chat_server = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as `base_url`."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The completion requests received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the requests received so far (a server shared by several tests)."""
        with self._lock:
            self._requests.clear()

    @property
    def aborted_streams(self) -> int:
        """Streams whose client closed the connection before the end."""
        with self._lock:
            return self._aborted_streams

    def configure(
        self,
        *,
        mode: str | None = None,
        fail_n: int | None = None,
        delay: float | None = None,
        context_limit: int | None = None,
        reply: str | None = None,
        chunk_delay: float | None = None,
        first_token_delay: float | None = None,
        stream_fail_after: int | None = None,
        model_name: str | None = None,
        finish_reason: str | None = None,
        usage: Any = None,
        json_schema: bool | None = None,
    ) -> None:
        """Change behaviour; a new mode or `fail_n` restarts the fail_n_then_ok count.
        `stream_fail_after=0` turns mid-stream failures off again."""
        with self._lock:
            for name, value in (
                ("model", model_name),
                ("finish_reason", finish_reason),
                ("usage", usage),
            ):
                if value is not None:
                    self.overrides[name] = value
            if context_limit is not None:
                self.context_limit = context_limit
            if json_schema is not None:
                self.json_schema = json_schema
            if reply is not None:
                self.reply = reply
            if chunk_delay is not None:
                self.chunk_delay = chunk_delay
            if first_token_delay is not None:
                self.first_token_delay = first_token_delay
            if stream_fail_after is not None:
                self.stream_fail_after = stream_fail_after or None
            if mode is not None:
                self.mode = _checked_mode(mode)
            if fail_n is not None:
                self.fail_n = fail_n
            if delay is not None:
                self.delay = delay
            if mode is not None or fail_n is not None:
                self._completions_seen = 0

    def start(self) -> ChatServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests sleeping in "timeout" mode are woken and dropped."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (SIGINT/SIGTERM), then close the socket."""
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            self._httpd.serve_forever(poll_interval=POLL_INTERVAL)
        except KeyboardInterrupt:
            pass
        finally:
            self._httpd.server_close()

    # --- used by the handler -------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> tuple[str, float]:
        """Record a completion request; return the mode to answer it with, and the delay."""
        with self._lock:
            self._requests.append(request)
            self._completions_seen += 1
            mode = self.mode
            if mode == "fail_n_then_ok":
                mode = "error500" if self._completions_seen <= self.fail_n else "ok"
            return mode, self.delay

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped meanwhile; True if the server is still running."""
        return not self._stopping.wait(seconds)

    def _stream_settings(self) -> tuple[float, float, int | None]:
        with self._lock:
            return self.chunk_delay, self.first_token_delay, self.stream_fail_after

    def _overridden(self, answer: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            overrides = dict(self.overrides)
        answer = {**answer, **{k: v for k, v in overrides.items() if k != "finish_reason"}}
        if "finish_reason" in overrides:
            answer["choices"] = [
                {**choice, "finish_reason": overrides["finish_reason"]}
                for choice in answer["choices"]
            ]
        return answer

    def _stream_aborted(self) -> None:
        with self._lock:
            self._aborted_streams += 1


def _checked_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    return mode


class _Handler(BaseHTTPRequestHandler):
    server_version = "convmem-test-chat/1"

    @property
    def chat(self) -> ChatServer:
        return self.server.chat_server  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `requests` instead of a log."""

    def do_GET(self) -> None:
        if self.path == MODELS_PATH:
            self._send_json(
                200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
            )
        else:
            self._send_error(404, "not found", "not_found")

    def do_POST(self) -> None:
        body = self._read_json()
        if self.path == CONTROL_PATH:
            self._control(body)
        elif self.path != COMPLETIONS_PATH:
            self._send_error(404, "not found", "not_found")
        elif (
            self.chat.api_key and self.headers.get("Authorization") != f"Bearer {self.chat.api_key}"
        ):
            self._send_error(401, "Incorrect API key provided.", "invalid_api_key")
        elif not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_error(400, "'messages' is required", "invalid_request_error")
        else:
            self._complete(body)

    def _control(self, body: Any) -> None:
        try:
            self.chat.configure(**(body or {}))
        except (TypeError, ValueError) as error:
            self._send_error(400, str(error), "invalid_request_error")
            return
        self._send_json(200, {"mode": self.chat.mode, "fail_n": self.chat.fail_n})

    def _complete(self, body: dict[str, Any]) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        mode, delay = self.chat._record(RecordedRequest(self.path, headers, body))
        if self._over_context(body):
            return
        structured = _wants_json_schema(body)
        if structured and not self.chat.json_schema:
            self._send_error(
                400, "response_format json_schema is not supported", "invalid_request_error"
            )
            return
        if mode == "timeout" and not self.chat._sleep(delay):
            return
        if mode == "error500":
            self._send_error(
                500, "The server had an error processing your request.", "server_error"
            )
        elif mode == "error_html":
            self._send(502, ERROR_PAGE, "text/html")
        elif mode == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
        elif mode == "no_choices":
            self._send_json(200, {"id": "chatcmpl-test", "object": "chat.completion"})
        else:
            content = "" if mode == "empty" else (self.chat.reply or fake_summary(body))
            if structured and mode != "empty" and not self.chat.reply:
                content = json_memo(content)
            if body.get("stream"):
                self._stream(body, content, fail_with_error=mode == "stream_error")
            else:
                self._send_json(200, self.chat._overridden(completion(body, content)))

    def _stream(self, body: dict[str, Any], content: str, *, fail_with_error: bool) -> None:
        """Answer as an SSE stream of chunks (see the module docstring)."""
        chunk_delay, first_delay, fail_after = self.chat._stream_settings()
        answer = self.chat._overridden(completion(body, content))
        finish_reason = answer["choices"][0]["finish_reason"]
        words = re.findall(r"\S+\s*", content)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self._event(chunk(answer, {"role": "assistant", "content": ""}))
            if first_delay and not self.chat._sleep(first_delay):
                return
            for index, word in enumerate(words):
                if fail_after is not None and index >= fail_after:
                    return  # the connection closes with no finish_reason and no [DONE]
                if index and chunk_delay and not self.chat._sleep(chunk_delay):
                    return
                if index and fail_with_error:
                    self._event({"error": {"message": "overloaded", "type": "server_error"}})
                    return
                self._event(chunk(answer, {"content": word}))
            self._event(chunk(answer, {}, finish_reason=finish_reason))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event({**chunk(answer, {}), "choices": [], "usage": answer["usage"]})
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            self.chat._stream_aborted()

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _over_context(self, body: dict[str, Any]) -> bool:
        """Answer 400 `context_length_exceeded` (as OpenAI words it) when the prompt and the
        requested completion do not fit `context_limit`; True if it did."""
        limit = self.chat.context_limit
        if limit is None:
            return False
        prompt = prompt_words(body)
        completion_limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        if prompt + completion_limit <= limit:
            return False
        self._send_error(
            400,
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{prompt + completion_limit} tokens ({prompt} in the messages, {completion_limit} "
            "in the completion). Please reduce the length of the messages or completion.",
            "context_length_exceeded",
        )
        return True

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return None

    def _send_error(self, status: int, message: str, code: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": code, "code": code}})

    def _send_json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing left to answer


def fake_summary(body: dict[str, Any]) -> str:
    """The "ok" reply: fact-bearing lines of the last user message, within `max_tokens` words."""
    user_contents = [
        _text_of(message.get("content"))
        for message in body["messages"]
        if isinstance(message, dict) and message.get("role") == "user"
    ]
    last = user_contents[-1] if user_contents else ""
    lines = [
        line.strip()
        for line in last.splitlines()
        if any(char.isdigit() or char in "@?" for char in line)
    ]
    words = "; ".join(lines).split() or ["Nothing", "to", "note."]
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or len(words)
    return " ".join(words[:limit])


def _text_of(content: Any) -> str:
    """A message's text: its content, or the text of its content parts (a list of
    ``{"type": "text", "text": …}`` and other parts, as the chat API takes them)."""
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return content if isinstance(content, str) else ""


def _wants_json_schema(body: dict[str, Any]) -> bool:
    response_format = body.get("response_format")
    return isinstance(response_format, dict) and response_format.get("type") == "json_schema"


def json_memo(text: str) -> str:
    """The "ok" memo as a JSON-schema reply: one line per "; "-separated piece, its values the
    words with a digit or "@"."""
    lines = [
        {
            "role": "user",
            "text": piece,
            "values": [
                w.strip(".,;") for w in piece.split() if any(c.isdigit() or c == "@" for c in w)
            ],
        }
        for piece in text.split("; ")
    ]
    return json.dumps({"lines": lines})


def prompt_words(body: dict[str, Any]) -> int:
    """The size of a request's prompt, in words (this server's "tokens")."""
    return sum(
        len(str(message.get("content") or "").split())
        for message in body["messages"]
        if isinstance(message, dict)
    )


def completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    """An OpenAI `chat.completion` object answering `body` with `content`."""
    prompt_size = prompt_words(body)
    completion_words = len(content.split())
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_size,
            "completion_tokens": completion_words,
            "total_tokens": prompt_size + completion_words,
        },
    }


def chunk(
    answer: dict[str, Any], delta: dict[str, Any], finish_reason: str | None = None
) -> dict[str, Any]:
    """One `chat.completion.chunk` of the streamed `answer`."""
    return {
        "id": answer["id"],
        "object": "chat.completion.chunk",
        "created": answer["created"],
        "model": answer["model"],
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--fail-n", type=int, default=1)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--context-limit", type=int, default=None, metavar="WORDS")
    args = parser.parse_args(argv)
    server = ChatServer(
        mode=args.mode,
        fail_n=args.fail_n,
        delay=args.delay,
        api_key=args.api_key,
        port=args.port,
        context_limit=args.context_limit,
    )
    print(f"chat server listening on {server.base_url}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
