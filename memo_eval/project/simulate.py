"""The production memo loop, simulated on a generated conversation, and what it keeps.

As in production (rolling state memos over bounded segments): the conversation is cut into
consecutive segments of about ``segment_tokens``; memo k is
``backend.summarize(previous_memo=<memo k-1>, messages=<segment k>, max_tokens=<memo size
minus its header>)``, and the writer cuts an overlong reply to that size as
``compaction.services`` does. At each checkpoint turn the model input is assembled like the
curator does it: the newest memo written from segments that have ended by then, then the turns
after it, verbatim, newest first while they fit ``window - reserve`` (the rest would be
dropped). Measured there, against the generator's ground truth (``checker``):

- open facts: planted facts of the cases still open, present in memo + recent turns (and in
  the memo alone);
- all facts: every current planted fact of the conversation so far;
- probes of open cases, and of all cases, answered by one line of memo + recent turns;
- the memo's size (header included) and its compression (memo tokens / covered tokens).
"""

from __future__ import annotations

import hashlib
import string
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from compaction.backends.base import MemoDraft, MemoSource, SummarizerBackend
from compaction.rendering import memo_content
from convmem.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    count_tokens,
    default_encoding_name,
    get_encoding,
)
from memo_eval.project.checker import fact_present, probe_answered, units_of
from memo_eval.project.generator import Conversation, PlantedFact

DEFAULT_CHECKPOINTS = (100, 200, 300, 400, 500)
DEFAULT_MEMO_TOKENS = 512
DEFAULT_SEGMENT_TOKENS = 3000
DEFAULT_WINDOW = 8192
DEFAULT_RESERVE = 1024
_ID_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class LoopSettings:
    memo_tokens: int = DEFAULT_MEMO_TOKENS
    segment_tokens: int = DEFAULT_SEGMENT_TOKENS
    window: int = DEFAULT_WINDOW
    reserve: int = DEFAULT_RESERVE
    checkpoints: tuple[int, ...] = DEFAULT_CHECKPOINTS


DEFAULT_LOOP = LoopSettings()


@dataclass(frozen=True)
class Ratio:
    hit: int
    total: int

    @property
    def value(self) -> float:
        return self.hit / self.total if self.total else 1.0


@dataclass(frozen=True)
class Checkpoint:
    """What the assembled input at message `turn` (a count of messages seen) holds."""

    turn: int
    memo_tokens: int
    covered_tokens: int
    recent_messages: int
    dropped_messages: int
    open_facts: Ratio
    open_facts_in_memo: Ratio
    all_facts: Ratio
    open_probes: Ratio
    all_probes: Ratio
    missing_open_facts: tuple[PlantedFact, ...]
    memo: str
    context: str

    @property
    def compression(self) -> float:
        return self.memo_tokens / self.covered_tokens if self.covered_tokens else 0.0


@dataclass
class Run:
    """One conversation through one backend: the checkpoints, and the memo calls made."""

    conversation: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    calls: int = 0
    overlong_replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_draft: MemoDraft | None = None


@dataclass(frozen=True)
class _Memo:
    last_index: int  # index of the last message the memo covers
    text: str
    tokens: int  # with its header, as stored


def message_ids(conversation: Conversation) -> list[str]:
    """Deterministic stand-ins for public message ids (same shape as `convmem.ids`), so the
    memo header costs what it costs in production."""
    ids = []
    for index in range(len(conversation.messages)):
        digest = hashlib.sha256(f"{conversation.name}:{index}".encode()).digest()
        ids.append("msg_" + "".join(_ID_ALPHABET[byte % 62] for byte in digest[:22]))
    return ids


def segments(token_counts: Sequence[int], limit: int) -> list[range]:
    """Consecutive index ranges of at most `limit` tokens (a longer message stands alone)."""
    result: list[range] = []
    start, total = 0, 0
    for index, tokens in enumerate(token_counts):
        if index > start and total + tokens > limit:
            result.append(range(start, index))
            start, total = index, 0
        total += tokens
    if start < len(token_counts):
        result.append(range(start, len(token_counts)))
    return result


def _fit(text: str, max_tokens: int) -> str:
    """What the memo writer stores: the reply cut to `max_tokens` tokens."""
    encoding = get_encoding(default_encoding_name())
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return encoding.decode(tokens[:max_tokens]).rstrip()


def run_conversation(
    backend: SummarizerBackend, conversation: Conversation, loop: LoopSettings = DEFAULT_LOOP
) -> Run:
    """Chain the backend's memos over the conversation and measure each checkpoint.

    Raises whatever the backend raises (`BackendError`): a chained memo cannot skip a call.
    """
    ids = message_ids(conversation)
    tokens = [count_tokens(content) for _, content in conversation.messages]
    run = Run(conversation=conversation.name)
    memos: list[_Memo] = []
    previous: str | None = None
    for segment in segments(tokens, loop.segment_tokens):
        header = memo_content(text="")
        budget = loop.memo_tokens - count_tokens(header)
        sources = [
            MemoSource(id=ids[index], role=role, content=content)
            for index, (role, content) in (
                (index, conversation.messages[index]) for index in segment
            )
        ]
        draft = backend.summarize(previous_memo=previous, messages=sources, max_tokens=budget)
        run.calls += 1
        run.prompt_tokens += draft.prompt_tokens
        run.completion_tokens += draft.completion_tokens
        run.last_draft = draft
        if count_tokens(draft.text) > budget:
            run.overlong_replies += 1
        text = _fit(draft.text, budget)
        memos.append(_Memo(segment[-1], text, count_tokens(header + text)))
        previous = text
    for turn in loop.checkpoints:
        if turn <= len(conversation.messages):
            run.checkpoints.append(_checkpoint(conversation, tokens, memos, turn=turn, loop=loop))
    return run


def _checkpoint(
    conversation: Conversation,
    tokens: list[int],
    memos: list[_Memo],
    *,
    turn: int,
    loop: LoopSettings,
) -> Checkpoint:
    last = turn - 1
    ready = [memo for memo in memos if memo.last_index < last]
    memo = ready[-1] if ready else None
    first_recent = memo.last_index + 1 if memo else 0
    free = loop.window - loop.reserve - REPLY_PRIMING
    if memo:
        free -= memo.tokens + MESSAGE_OVERHEAD
    recent: list[int] = []
    for index in range(last, first_recent - 1, -1):
        cost = tokens[index] + MESSAGE_OVERHEAD
        if cost > free:
            break
        recent.insert(0, index)
        free -= cost
    dropped = (recent[0] if recent else last + 1) - first_recent
    memo_text = memo.text if memo else ""
    return measure(
        conversation,
        turn=turn,
        memo_text=memo_text,
        memo_tokens=memo.tokens if memo else 0,
        covered_tokens=sum(tokens[:first_recent]),
        recent_messages=len(recent),
        dropped_messages=dropped,
        context="\n".join([memo_text, *(conversation.messages[i][1] for i in recent)]),
    )


def measure(
    conversation: Conversation,
    *,
    turn: int,
    memo_text: str,
    memo_tokens: int,
    covered_tokens: int,
    recent_messages: int,
    dropped_messages: int,
    context: str,
) -> Checkpoint:
    """Score one assembled input (``context``: the memo and the recent turns, as the model
    reads them) at message ``turn`` against the generator's ground truth. The simulated loop
    and a run through the real services (``bench/memo_quality.py --services``) both use it."""
    last = turn - 1
    units = units_of(context)
    open_facts = conversation.facts_at(last, open_only=True)
    all_facts = conversation.facts_at(last, open_only=False)
    present = [fact for fact in open_facts if fact_present(fact, context)]
    return Checkpoint(
        turn=turn,
        memo_tokens=memo_tokens,
        covered_tokens=covered_tokens,
        recent_messages=recent_messages,
        dropped_messages=dropped_messages,
        open_facts=Ratio(len(present), len(open_facts)),
        open_facts_in_memo=Ratio(
            sum(1 for fact in open_facts if fact_present(fact, memo_text)), len(open_facts)
        ),
        all_facts=Ratio(
            sum(1 for fact in all_facts if fact_present(fact, context)), len(all_facts)
        ),
        open_probes=_probes(conversation, units, last, open_only=True),
        all_probes=_probes(conversation, units, last, open_only=False),
        missing_open_facts=tuple(fact for fact in open_facts if fact not in present),
        memo=memo_text,
        context=context,
    )


def _probes(conversation: Conversation, units: list[str], last: int, *, open_only: bool) -> Ratio:
    open_keys = conversation.open_cases(last)
    by_slot: dict[str, list[PlantedFact]] = defaultdict(list)
    for fact in conversation.facts:
        by_slot[fact.slot].append(fact)
    hit = total = 0
    for probe in conversation.probes:
        if open_only and probe.case not in open_keys:
            continue
        expected = probe.asked_at(last, conversation.cases)
        if expected is None:
            continue
        total += 1
        candidates = by_slot[probe.answer.slot] if probe.answer else []
        hit += probe_answered(probe, expected, units, candidates)
    return Ratio(hit, total)
