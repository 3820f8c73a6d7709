"""The summarizer backend interface: what a memo writer receives and what it hands back.

A backend turns an explicit, ordered range of messages (plus, when a memo is being extended,
the previous memo of the range before it) into memo text of at most `max_tokens` tokens. It is
called from a Celery task, never on the request path; it does not retry (the task does), it
signals failures with `BackendError` and says whether trying again can help.

Memos are rolling state memos: memo k is written from memo k-1 and the next bounded segment of
original messages, so a backend must carry every still-open case of the previous memo forward.
Each backend says how many tokens its model accepts in one call (`context_tokens`, input and
output together); the writer keeps the rendered input within `context_tokens - max_tokens`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# What a backend's prompt may add around the memo and the messages, in our tokenizer: fixed
# instructions (system prompt, headers) and framing per message. The writer counts on these
# when it fits a segment to `context_tokens` (compaction.memo_input).
MAX_INSTRUCTION_TOKENS = 400
MAX_FRAMING_TOKENS = 12


@dataclass(frozen=True)
class MemoSource:
    """One message of the range to summarise; `id` is its public id ("msg_…")."""

    id: str
    role: str
    content: str


@dataclass(frozen=True)
class MemoDraft:
    """A memo as written by a backend, with what is needed to reproduce or compare it.

    `prompt_tokens` and `completion_tokens` are what the call read and wrote: the server's
    `usage` for a remote model, our tokenizer's counts for the embedded backend (0: unknown).
    `values`: the values the backend says the memo keeps (a structured reply lists them); the
    memo writer checks them, with the values it finds in the text, against the sources.
    """

    text: str
    backend: str
    model: str
    prompt_version: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    values: tuple[str, ...] = ()


class BackendError(Exception):
    """The backend could not write the memo.

    `retryable` is True when the same call may succeed later (timeouts, connection errors, 5xx,
    rate limits, a malformed reply) and False when it cannot without a change of configuration
    or input (bad credentials, a rejected request).
    """

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class SummarizerBackend(Protocol):
    """Writes memos. Implementations are constructed without arguments by `get_backend`.

    `context_tokens` is the total number of tokens the backend's model accepts in one call
    (input plus output), read from the backend's own setting in `__init__`.
    """

    name: str
    context_tokens: int

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        """Summarise `messages` (in path order), folding in `previous_memo` when given.

        The memo should keep every checkable fact of the range and state none it does not
        support. Raises `BackendError` on failure.
        """
        ...


@runtime_checkable
class ReadsAhead(Protocol):
    """A backend that can also let go of what messages *after* the range correct.

    A memo stands for its range, yet it is shown beside the newer turns for many turns: a line
    that a newer message already corrects ("the address is now …") would put the stale value
    next to the newest one. The writer hands such a backend the messages of the active path
    written after the range (read when the memo is written) and keeps what it returns: the
    memo with the lines those messages correct let go. It only removes; no word of a later
    message enters the memo (the memo that covers that message folds it in).
    """

    def drop_superseded(self, *, memo: str, later: Sequence[MemoSource]) -> str: ...

    def summarize(
        self,
        *,
        previous_memo: str | None,
        messages: Sequence[MemoSource],
        max_tokens: int,
        read_ahead: frozenset[str] = frozenset(),
    ) -> MemoDraft:
        """As ``SummarizerBackend.summarize``. ``read_ahead``: the ids of those ``messages``
        that the previous memo's writer read ahead; what they correct is let go in it already,
        so their corrections are not applied again (a correction whose line is gone would
        take another line of the same slot)."""
        ...
