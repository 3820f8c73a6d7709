"""A summarizer backend for any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, Ollama, llama.cpp's server and a LiteLLM proxy all speak the same
protocol, so one backend covers them; point `CONVMEM_OPENAI_BASE_URL` at the server's `/v1`.
Settings (read when the backend is constructed):

- `CONVMEM_OPENAI_BASE_URL`, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1";
- `CONVMEM_OPENAI_MODEL`;
- `CONVMEM_OPENAI_API_KEY` (local servers ignore it, but the SDK wants one);
- `CONVMEM_OPENAI_TIMEOUT`, seconds per request.

The SDK never retries (`max_retries=0`): the Celery task owns retries and backoff, and
`BackendError.retryable` tells it whether another attempt can help.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import openai
from django.conf import settings

from compaction.backends.base import BackendError, MemoDraft, MemoSource

PROMPT_VERSION = "memo-prompt/1"
SYSTEM_PROMPT = (
    "You write memos of a conversation range for a model that will not see the original "
    "messages. Summarise the range faithfully and concisely, in the order things happened. "
    "Keep every number, amount, date, id (order, ticket, invoice), email address, URL, name, "
    "decision and open question exactly as written. Do not invent facts, guess, or add advice; "
    "state only what the messages say. If a previous memo is given, carry its facts forward. "
    "Answer with the memo only, at most {max_tokens} tokens."
)
# The statuses the SDK itself would retry: timeout, lock conflict, rate limit, server errors.
_RETRYABLE_STATUSES = {408, 409, 429}

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
DEFAULT_MODEL = "llama3.1"
DEFAULT_API_KEY = "not-needed"
DEFAULT_TIMEOUT = 30.0


class OpenAICompatBackend:
    """Memos from a chat-completions model; see the module docstring for settings."""

    name = "openai"

    def __init__(self) -> None:
        self.model: str = getattr(settings, "CONVMEM_OPENAI_MODEL", DEFAULT_MODEL)
        self.client = openai.OpenAI(
            base_url=getattr(settings, "CONVMEM_OPENAI_BASE_URL", DEFAULT_BASE_URL),
            api_key=getattr(settings, "CONVMEM_OPENAI_API_KEY", None) or DEFAULT_API_KEY,
            timeout=float(getattr(settings, "CONVMEM_OPENAI_TIMEOUT", DEFAULT_TIMEOUT)),
            max_retries=0,
        )

    @property
    def _label(self) -> str:
        """Names the model and server in error messages."""
        return f"{self.model} at {self.client.base_url}"

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        """One chat-completion call at temperature 0, output capped at `max_tokens`.

        The cap is in the server's tokenizer, which may differ from ours; callers that need a
        hard limit in their encoding must count the result. Raises `BackendError`.
        """
        try:
            completion = self.client.chat.completions.create(
                model=self.model,
                messages=build_prompt(
                    previous_memo=previous_memo, messages=messages, max_tokens=max_tokens
                ),
                max_tokens=max_tokens,
                temperature=0,
            )
        except openai.APIStatusError as error:
            raise BackendError(
                f"{self._label}: HTTP {error.status_code}: {error.message}",
                retryable=error.status_code in _RETRYABLE_STATUSES or error.status_code >= 500,
            ) from error
        except openai.APIError as error:
            # Timeouts, refused connections, replies that fail the SDK's validation.
            raise BackendError(f"{self._label}: {error.message}", retryable=True) from error
        except json.JSONDecodeError as error:
            # The SDK lets a JSON-typed body that is not JSON escape as a bare decode error.
            raise BackendError(
                f"{self._label}: reply is not JSON: {error}",
                retryable=True,
            ) from error
        text = _reply_text(completion)
        if not text:
            raise BackendError(f"{self._label}: reply without memo text", retryable=True)
        return MemoDraft(
            text=text,
            backend=self.name,
            # The server's answer names the exact snapshot that wrote the memo.
            model=getattr(completion, "model", None) or self.model,
            prompt_version=PROMPT_VERSION,
        )


def build_prompt(
    *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
) -> list[dict[str, str]]:
    """The chat messages sent for one memo (`PROMPT_VERSION` names this layout)."""
    parts = []
    if previous_memo:
        parts.append(f"Previous memo (the conversation before this range):\n{previous_memo}")
    transcript = "\n\n".join(
        f"[{message.id}] {message.role}: {message.content}" for message in messages
    )
    parts.append(f"Conversation range to summarise:\n{transcript}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(max_tokens=max_tokens)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def _reply_text(completion: object) -> str:
    """The first choice's content, stripped; "" when the reply has none.

    The SDK does not validate replies strictly, so a server's broken answer can arrive as a
    plain string or an object without `choices`.
    """
    choices = getattr(completion, "choices", None)
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    return content.strip() if isinstance(content, str) else ""
