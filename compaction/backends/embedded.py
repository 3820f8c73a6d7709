"""The embedded summarizer: a structured state memo, deterministic, with no network and no model.

Each memo is the previous memo's state (read back from its text by `memo_state.parse_memo`)
with the new messages folded in (`memo_reader.MemoReader`), written as sections: the customer,
the open cases (one line each: kind, id, status, then its identifiers, amounts and dates),
closed cases, open items, and what changed since the previous memo; then shortened to
`max_tokens` by `memo_state.fit_memo` (closed cases shrink and go first; open cases keep their
identifiers, amounts, dates and status longest). A previous memo that is not in this form (a
memo from another backend) is read like message text, so its facts are not lost.

Settings: `CONVMEM_EMBEDDED_CONTEXT_TOKENS` (default 16384), the input plus output size the
writer may hand this backend in one call.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from compaction.backends.base import MemoDraft, MemoSource
from compaction.backends.memo_reader import MemoReader
from compaction.backends.memo_state import MemoState, fit_memo, parse_memo
from convmem.tokens import count_tokens

PROMPT_VERSION = "state-memo/1"
MODEL = "state-memo"
DEFAULT_CONTEXT_TOKENS = 16384


class EmbeddedBackend:
    """Structured state memos within `max_tokens` (counted with the default encoding).

    Same input, same memo. The memo is empty when nothing in the range names the customer or a
    case, or when `max_tokens` is too small for even the customer's line.
    """

    name = "embedded"

    def __init__(self) -> None:
        self.context_tokens = int(
            getattr(settings, "CONVMEM_EMBEDDED_CONTEXT_TOKENS", DEFAULT_CONTEXT_TOKENS)
        )

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        """Fold `messages` into the state of `previous_memo` and write it; see the module
        docstring. `prompt_tokens` counts what was read, `completion_tokens` what was written."""
        state, leftovers = parse_memo(previous_memo or "")
        before = _statuses(state)
        reader = MemoReader(state)
        if leftovers:
            reader.read(role="memo", text="\n".join(leftovers))
        for message in messages:
            reader.read(role=message.role, text=message.content)
        reader.refresh_items()
        state.changes = _changes(before, state)
        state.focus = reader.focus
        text = fit_memo(state, max(max_tokens, 0))
        read = count_tokens(previous_memo or "") + sum(
            count_tokens(message.content) for message in messages
        )
        return MemoDraft(
            text=text,
            backend=self.name,
            model=MODEL,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=read,
            completion_tokens=count_tokens(text),
        )


def _statuses(state: MemoState) -> dict[str, str]:
    return {key: case.status for key, case in state.cases.items()}


def _changes(before: dict[str, str], state: MemoState) -> list[str]:
    """New cases and status changes since the previous memo: open cases first (a short memo
    keeps only the first few), each group in case order."""
    changes: list[tuple[bool, str]] = []
    for key, case in state.cases.items():
        if key not in before:
            changes.append((case.closed, f"new {case.kind} {key} ({case.status})"))
        elif before[key] != case.status:
            changes.append((case.closed, f"{key} {before[key]} -> {case.status}"))
    return [change for closed, change in changes if not closed] + [
        change for closed, change in changes if closed
    ]
