"""The chat model the respond endpoint calls: any OpenAI-compatible chat-completions server.

Settings: ``CONVMEM_CHAT_BASE_URL``, ``CONVMEM_CHAT_MODEL`` (a thread's model profile may name
another model), ``CONVMEM_CHAT_API_KEY``, ``CONVMEM_CHAT_TIMEOUT`` (seconds to connect and to
wait for each chunk). Always streamed, with ``stream_options.include_usage`` so the server
reports the usage in a last chunk. The SDK never retries (``max_retries=0``): the client of the
respond endpoint retries with its Idempotency-Key, and the run resumes.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
from django.conf import settings

from threads.models import Thread

# The statuses worth retrying: timeout, conflict, rate limit (and every 5xx).
_RETRYABLE_STATUSES = {408, 409, 429}


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


def chat_model_for(thread: Thread) -> str:
    """The thread's profile's model, else ``CONVMEM_CHAT_MODEL``."""
    profile = thread.profile
    return (profile.model if profile and profile.model else "") or settings.CONVMEM_CHAT_MODEL


@lru_cache(maxsize=8)
def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    # One client (and connection pool) per configuration; the SDK client is thread-safe.
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)


def _error(error: Exception, where: str) -> ModelError:
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        return ModelError(
            f"{where}: HTTP {status}: {error.message}",
            retryable=status in _RETRYABLE_STATUSES or status >= 500,
        )
    if isinstance(error, openai.APIError):
        # Timeouts, refused connections, replies the SDK cannot read.
        return ModelError(f"{where}: {error.message}", retryable=True)
    # A reply that is not JSON (the SDK's decoder lets the ValueError escape).
    return ModelError(f"{where}: unreadable reply: {error}", retryable=True)


class ChatStream:
    """An open streamed completion. Iterating yields the answer's text pieces; afterwards
    ``model``, ``usage`` and ``finish_reason`` hold what the server reported (``usage`` None
    and ``finish_reason`` None when the stream ended early). ``close()`` stops reading (the
    server sees the connection go)."""

    def __init__(self, stream: Any, *, model: str, where: str) -> None:
        self._stream = stream
        self._where = where
        self.model = model
        self.usage: dict[str, int] | None = None
        self.finish_reason: str | None = None

    def __iter__(self) -> Iterator[str]:
        try:
            for chunk in self._stream:
                self.model = getattr(chunk, "model", None) or self.model
                if getattr(chunk, "usage", None) is not None:
                    self.usage = {
                        "prompt_tokens": chunk.usage.prompt_tokens or 0,
                        "completion_tokens": chunk.usage.completion_tokens or 0,
                    }
                for choice in chunk.choices or ():
                    if choice.finish_reason:
                        self.finish_reason = choice.finish_reason
                    text = choice.delta.content if choice.delta else None
                    if text:
                        yield text
        except (openai.APIError, ValueError) as error:
            # ValueError: a chunk that is not JSON (the SDK's decoder lets it escape).
            raise _error(error, self._where) from error

    def close(self) -> None:
        self._stream.close()


def chat_stream_open(*, messages: list[dict[str, Any]], params: ModelParams) -> ChatStream:
    """Send the request and wait for the response headers; raises ``ModelError`` if the server
    cannot be reached or refuses, so that happens before anything is streamed to the client."""
    base_url = settings.CONVMEM_CHAT_BASE_URL
    where = f"{params.model} at {base_url}"
    client = _client(
        base_url, settings.CONVMEM_CHAT_API_KEY or "not-needed", settings.CONVMEM_CHAT_TIMEOUT
    )
    extra: dict[str, Any] = {}
    if params.temperature is not None:
        extra["temperature"] = params.temperature
    try:
        stream = client.chat.completions.create(
            model=params.model,
            messages=messages,
            max_tokens=params.max_tokens,
            stream=True,
            stream_options={"include_usage": True},
            **extra,
        )
    except (openai.APIError, ValueError) as error:
        raise _error(error, where) from error
    return ChatStream(stream, model=params.model, where=where)
