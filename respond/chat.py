"""The chat model the respond endpoint calls: any OpenAI-compatible chat-completions server.

Settings: ``CONVMEM_CHAT_BASE_URL``, ``CONVMEM_CHAT_MODEL`` (a thread's model profile may name
another model), ``CONVMEM_CHAT_API_KEY``, ``CONVMEM_CHAT_TIMEOUT`` (seconds to connect and to
wait for each chunk). Always streamed, with ``stream_options.include_usage`` so the server
reports the usage in a last chunk. The SDK never retries (``max_retries=0``): the client of the
respond endpoint retries with its Idempotency-Key, and the run resumes.

What the server sends is cleaned before anyone stores it: NUL characters and unpaired
surrogates (no database column holds them) become U+FFFD, a model name or finish reason is cut
to its column, a usage report that is not two counts from 0 to ``MAX_USAGE_TOKENS`` is
dropped (the answer's usage is then estimated). A ``ModelError``'s detail is a stable sentence
(no URL, no upstream text: the base URL may carry credentials, an error page may be HTML); the
rest is logged.
"""

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
from django.conf import settings
from openai.types.chat import ChatCompletion, ChatCompletionChunk

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
def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    # One client (and connection pool) per configuration; the SDK client is thread-safe.
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)


def _error(error: Exception, where: str) -> ModelError:
    """A stable detail for the API; what the server said goes to the log."""
    logger.warning("chat model call failed (%s): %r", where, error)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        return ModelError(
            f"the chat model answered HTTP {status}", retryable=status_is_retryable(status)
        )
    if isinstance(error, openai.APITimeoutError):
        return ModelError("the chat model did not answer in time", retryable=True)
    if isinstance(error, openai.APIConnectionError):
        return ModelError("the chat model could not be reached", retryable=True)
    # Replies the SDK cannot read (a ValueError: a body that is not JSON).
    return ModelError("the chat model's reply could not be read", retryable=True)


def _reported_usage(usage: Any) -> dict[str, int] | None:
    """The server's usage report, if it holds two counts a turn may store (and cached-token
    counts that fit in the prompt's); else None."""
    counts = {
        "prompt_tokens": getattr(usage, "prompt_tokens", None),
        "completion_tokens": getattr(usage, "completion_tokens", None),
    }
    report = usage.model_dump() if hasattr(usage, "model_dump") else {}
    cached = cached_usage(report)
    usable = all(usage_count_ok(count) for count in counts.values()) and cached is not None
    if usable and sum(cached.values()) <= counts["prompt_tokens"]:
        return counts | {key: count for key, count in cached.items() if count}
    logger.warning("the chat model reported unusable usage %r; estimating it", usage)
    return None


class ChatStream:
    """An open streamed completion. Iterating yields the answer's text pieces; afterwards
    ``model``, ``usage`` and ``finish_reason`` hold what the server reported (``usage`` None
    and ``finish_reason`` None when the stream ended early). ``close()`` stops reading (the
    server sees the connection go). The call's trace span ends with the stream: read to the
    end, failed, or closed."""

    def __init__(self, stream: Any, *, model: str, where: str, span: ModelCallSpan) -> None:
        self._stream = stream
        self._where = where
        self._span = span
        self.model = model
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for chunk in self._stream:
                model = getattr(chunk, "model", None)
                if model and isinstance(model, str):
                    self.model = storable(model, MODEL_NAME_CHARS)
                if getattr(chunk, "usage", None) is not None:
                    self.usage = _reported_usage(chunk.usage)
                for choice in chunk.choices or ():
                    if choice.finish_reason:
                        self.finish_reason = storable(
                            str(choice.finish_reason), FINISH_REASON_CHARS
                        )
                    text = choice.delta.content if choice.delta else None
                    if text and isinstance(text, str):
                        yield storable(text)
        except (openai.APIError, ValueError) as error:
            # ValueError: a chunk that is not JSON (the SDK's decoder lets it escape).
            self._span.finish(model=self.model, error=error)
            raise _error(error, self._where) from error
        self._span_finish()

    def _span_finish(self) -> None:
        self._span.finish(model=self.model, usage=self.usage, finish_reason=self.finish_reason)

    def close(self) -> None:
        self._span_finish()
        self._stream.close()


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
    try:
        # The body as sent: ``chat.completions.create`` would first walk every message through
        # its typed-dict transform (6 ms for 40 turns, growing with the thread) to produce the
        # same JSON, all of it before the first token.
        stream = client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.Stream[ChatCompletionChunk],
        )
    except (openai.APIError, ValueError) as error:
        span.finish(error=error)
        raise _error(error, where) from error
    return ChatStream(stream, model=params.model, where=where, span=span)
