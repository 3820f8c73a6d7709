"""The chat model the respond endpoint calls: any OpenAI-compatible chat-completions server.

Settings: ``CONVMEM_CHAT_BASE_URL``, ``CONVMEM_CHAT_MODEL`` (a thread's model profile may name
another model), ``CONVMEM_CHAT_API_KEY``, ``CONVMEM_CHAT_TIMEOUT`` (seconds to connect and to
wait for each chunk). Always streamed, with ``stream_options.include_usage`` so the server
reports the usage in a last chunk. Never retried here: the client of the respond endpoint
retries with its Idempotency-Key, and the run resumes.

What the server sends is cleaned before anyone stores it: NUL characters and unpaired
surrogates (no database column holds them) become U+FFFD, a model name or finish reason is cut
to its column, a usage report that is not two counts from 0 to ``MAX_USAGE_TOKENS`` is
dropped (the answer's usage is then estimated). A ``ModelError``'s detail is a stable sentence
(no URL, no upstream text: the base URL may carry credentials, an error page may be HTML); the
rest is logged.

The call is made with httpx and read with httpx-sse, not through the OpenAI SDK: the SDK built
a typed object for every chunk and walked its request options before sending, about 1.4 ms
before the first token on loopback (3.1 instead of 4.6 ms to the first chunk) and more for
every chunk after it. What is sent is the same JSON body; what is read is the chunks' JSON, as
the SDK read it (``data: [DONE]`` ends the stream; a chunk carrying ``error`` fails it).
"""

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import httpx
from django.conf import settings
from httpx_sse import EventSource, SSEError

from convmem.profiles import profile_setting
from convmem.telemetry import ModelCallSpan, model_call_start
from convmem.upstream import status_is_retryable, url_for_logs
from respond.models import RespondRun
from threads.content import cached_usage, usage_count_ok
from threads.models import Message, Thread

logger = logging.getLogger(__name__)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MODEL_NAME_CHARS = Message._meta.get_field("model").max_length
FINISH_REASON_CHARS = RespondRun._meta.get_field("finish_reason").max_length


def storable(text: str, limit: int | None = None) -> str:
    """``text`` as a column can hold it: NULs and lone surrogates replaced, cut to ``limit``."""
    return _UNSTORABLE.sub("\ufffd", text)[:limit]


class ModelError(Exception):
    """The model call failed; ``retryable`` says whether another attempt can help."""

    def __init__(self, detail: str, *, retryable: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retryable = retryable


@dataclass(frozen=True)
class ModelParams:
    """What is sent besides the messages."""

    model: str
    max_tokens: int
    temperature: float | None = None
    # Prompt-cache hints: OpenAI's prompt_cache_key (one per thread, so its requests reach the
    # same cache) and, for providers that cache at breakpoints, the index of the last message
    # of the input's stable prefix (see compaction.context).
    cache_key: str | None = None
    cache_breakpoint: int | None = None


def chat_model_for(thread: Thread) -> str:
    """The thread's profile's model, else ``CONVMEM_CHAT_MODEL``."""
    return profile_setting(thread.profile, "model")


@lru_cache(maxsize=8)
def _client(base_url: str, api_key: str, timeout: float) -> httpx.Client:
    # One client (and connection pool) per configuration; an httpx client is thread-safe.
    return httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}", "Accept": "text/event-stream"},
        timeout=timeout,
        follow_redirects=True,
    )


class _StreamFailed(Exception):
    """The server sent a chunk that is an error, or a body that is not chunks of JSON."""


def _error(error: Exception, where: str) -> ModelError:
    """A stable detail for the API; what the server said goes to the log."""
    logger.warning("chat model call failed (%s): %r", where, error)
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return ModelError(
            f"the chat model answered HTTP {status}", retryable=status_is_retryable(status)
        )
    if isinstance(error, httpx.TimeoutException):
        return ModelError("the chat model did not answer in time", retryable=True)
    if isinstance(error, httpx.TransportError) and not isinstance(error, SSEError):
        return ModelError("the chat model could not be reached", retryable=True)
    # Replies that cannot be read: a body that is not an event stream (``SSEError``) or not
    # JSON, a chunk that is an error.
    return ModelError("the chat model's reply could not be read", retryable=True)


def _reported_usage(usage: Any) -> dict[str, int] | None:
    """The server's usage report, if it holds two counts a turn may store (and cached-token
    counts that fit in the prompt's); else None."""
    report = usage if isinstance(usage, dict) else {}
    counts = {
        "prompt_tokens": report.get("prompt_tokens"),
        "completion_tokens": report.get("completion_tokens"),
    }
    cached = cached_usage(report)
    usable = all(usage_count_ok(count) for count in counts.values()) and cached is not None
    if usable and sum(cached.values()) <= counts["prompt_tokens"]:
        return counts | {key: count for key, count in cached.items() if count}
    logger.warning("the chat model reported unusable usage %r; estimating it", usage)
    return None


def _chunks(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed completion, up to ``data: [DONE]`` or the stream's end."""
    for event in EventSource(response).iter_sse():
        if event.data.startswith("[DONE]"):
            return
        chunk = json.loads(event.data)
        if not isinstance(chunk, dict):
            raise _StreamFailed(f"a chunk that is not an object: {event.data[:200]!r}")
        if chunk.get("error"):
            raise _StreamFailed(f"an error chunk: {event.data[:500]!r}")
        yield chunk


class ChatStream:
    """An open streamed completion. Iterating yields the answer's text pieces; afterwards
    ``model``, ``usage`` and ``finish_reason`` hold what the server reported (``usage`` None
    and ``finish_reason`` None when the stream ended early). ``close()`` stops reading (the
    server sees the connection go). The call's trace span ends with the stream: read to the
    end, failed, or closed."""

    def __init__(
        self, response: httpx.Response, *, model: str, where: str, span: ModelCallSpan
    ) -> None:
        self._response = response
        self._where = where
        self._span = span
        self.model = model
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for chunk in _chunks(self._response):
                model = chunk.get("model")
                if model and isinstance(model, str):
                    self.model = storable(model, MODEL_NAME_CHARS)
                if chunk.get("usage") is not None:
                    self.usage = _reported_usage(chunk["usage"])
                for choice in chunk.get("choices") or ():
                    yield from self._choice_text(choice)
        except (httpx.HTTPError, _StreamFailed, ValueError) as error:
            # ValueError: a chunk that is not JSON.
            self._span.finish(model=self.model, error=error)
            raise _error(error, self._where) from error
        finally:
            self._response.close()
        self._span_finish()

    def _choice_text(self, choice: Any) -> Iterator[str]:
        """The text of one choice of a chunk; its finish reason, if it has one, is kept."""
        if not isinstance(choice, dict):
            raise _StreamFailed(f"a choice that is not an object: {choice!r:.200}")
        if choice.get("finish_reason"):
            self.finish_reason = storable(str(choice["finish_reason"]), FINISH_REASON_CHARS)
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
        if text and isinstance(text, str):
            yield storable(text)

    def _span_finish(self) -> None:
        self._span.finish(model=self.model, usage=self.usage, finish_reason=self.finish_reason)

    def close(self) -> None:
        self._span_finish()
        self._response.close()


def with_cache_breakpoint(messages: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """``messages`` with a ``cache_control`` breakpoint on the text of message ``index`` (or the
    nearest message before it that has text): the provider caches the input up to there."""
    marked = list(messages)
    for position in range(min(index, len(messages) - 1), -1, -1):
        content = messages[position].get("content")
        if isinstance(content, str) and content:
            parts = [{"type": "text", "text": content}]
        elif isinstance(content, list) and any(p.get("type") == "text" for p in content):
            parts = [dict(part) for part in content]
        else:
            continue
        last_text = max(i for i, part in enumerate(parts) if part.get("type") == "text")
        parts[last_text]["cache_control"] = {"type": "ephemeral"}
        marked[position] = {**messages[position], "content": parts}
        return marked
    return marked


def chat_stream_open(*, messages: list[dict[str, Any]], params: ModelParams) -> ChatStream:
    """Send the request and wait for the response headers; raises ``ModelError`` if the server
    cannot be reached or refuses, so that happens before anything is streamed to the client."""
    base_url = settings.CONVMEM_CHAT_BASE_URL
    where = f"{params.model} at {url_for_logs(base_url)}"
    client = _client(
        base_url, settings.CONVMEM_CHAT_API_KEY or "not-needed", settings.CONVMEM_CHAT_TIMEOUT
    )
    body: dict[str, Any] = {
        "model": params.model,
        "messages": messages,
        "max_tokens": params.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.cache_key:
        body["prompt_cache_key"] = params.cache_key
    if params.cache_breakpoint is not None:
        body["messages"] = with_cache_breakpoint(messages, params.cache_breakpoint)
    span = model_call_start(
        model=params.model,
        base_url=base_url,
        max_tokens=params.max_tokens,
        temperature=params.temperature,
        purpose="respond",
    )
    request = client.build_request(
        "POST",
        "chat/completions",
        content=json.dumps(body, separators=(",", ":")),
        headers={"Content-Type": "application/json"},
    )
    try:
        response = client.send(request, stream=True)
    except httpx.HTTPError as error:
        span.finish(error=error)
        raise _error(error, where) from error
    if response.is_error:
        refused = _refusal(response)
        span.finish(error=refused)
        raise _error(refused, where) from refused
    return ChatStream(response, model=params.model, where=where, span=span)


def _refusal(response: httpx.Response) -> httpx.HTTPStatusError:
    """The error of a response that refused the call, with the start of its body for the log
    (read whole: a refusal is short; its status stands even when the body cannot be read),
    the response closed."""
    try:
        response.read()
        body = repr(response.text[:500])
    except httpx.HTTPError as unread:
        body = f"(body unread: {unread!r})"
    finally:
        response.close()
    return httpx.HTTPStatusError(
        f"HTTP {response.status_code}: {body}", request=response.request, response=response
    )
