"""The embedded summarizer: an extractive memo, deterministic, with no network and no model.

It splits the range into sentences, scores each by the checkable facts it adds (the facts
`compaction.evals` judges memos by) plus cue words for decisions and open questions, and picks
greedily by value per token until `max_tokens` is spent. The picked sentences are printed in
their original order as "- role: …" lines, so the memo reads as a condensed transcript. When a
memo is extended, the previous memo's lines compete on the same terms and come first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby, pairwise

from compaction.backends.base import MemoDraft, MemoSource
from compaction.evals import Fact, extract_facts
from compaction.tokens import count_tokens

PROMPT_VERSION = "extractive/1"
MODEL = "extractive"

# Ids, amounts and contact details are what users come back for; a stray number less so.
_FACT_WEIGHTS = {"id": 2.0, "money": 2.0, "date": 2.0, "time": 2.0, "email": 2.0, "url": 2.0}
_DEFAULT_FACT_WEIGHT = 1.0
_DECISION_RE = re.compile(
    r"\b(?:decided|decision|agreed|agree to|go with|going with|settled on|approved|confirmed|"
    r"let's|we will|we'll)\b",
    re.IGNORECASE,
)
_OPEN_QUESTION_RE = re.compile(
    r"\b(?:open question|still need|not sure|unclear|whether|tbd|to be decided|pending|"
    r"waiting on|follow up|can you confirm|could you confirm)\b",
    re.IGNORECASE,
)
_DECISION_WEIGHT = 2.0
_OPEN_QUESTION_WEIGHT = 1.0
# A user's question may be left open; most are small talk, so it weighs little. An assistant's
# questions are clarifications ("Which version are you on?") and weigh nothing.
_QUESTION_WEIGHT = 0.5
_QUESTION_ROLES = {"user"}

_SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?])\s+|\s*\n\s*| … ")
_MEMO_LINE_RE = re.compile(r"^- (?P<role>[\w-]+): (?P<body>.*)$")
_PREVIOUS_MEMO_ROLE = "memo"
# Longer sentences (pasted logs, run-ons) are cut into word windows so one of them cannot
# crowd out a whole budget or be lost whole for want of a few tokens.
_MAX_UNIT_TOKENS = 60
_WINDOW_WORDS = 30
# Estimated cost of joining a unit to its line (" … "), and of starting a line ("\n").
_JOIN_TOKENS = 2
_NEWLINE_TOKENS = 1


@dataclass(frozen=True)
class _Unit:
    """A sentence (or window of one) that can go into the memo.

    `line` orders and groups units: previous-memo lines (0, n) come before messages (1, n).
    `line_tokens` is what starting its line costs ("\n- role:").
    """

    line: tuple[int, int]
    index: int
    role: str
    text: str
    facts: frozenset[Fact]
    cue_weight: float
    tokens: int
    line_tokens: int


class EmbeddedBackend:
    """Extractive memos within `max_tokens` (counted with the default encoding).

    Same input, same memo. The memo is empty when nothing in the range carries a fact or a
    cue, or when `max_tokens` is smaller than one line.
    """

    name = "embedded"

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        """Write the memo; see the module docstring for how sentences are chosen."""
        units = list(_previous_memo_units(previous_memo or ""))
        for position, message in enumerate(messages):
            units.extend(_units(line=(1, position), role=message.role, text=message.content))
        chosen = _select(units, max_tokens)
        # The greedy pass works on estimated costs; drop the latest (least valuable) picks
        # until the rendered text really fits.
        text = _render(chosen)
        while chosen and count_tokens(text) > max_tokens:
            chosen.pop()
            text = _render(chosen)
        return MemoDraft(text=text, backend=self.name, model=MODEL, prompt_version=PROMPT_VERSION)


def _previous_memo_units(memo: str) -> Iterator[_Unit]:
    lines = [line.strip() for line in memo.splitlines() if line.strip()]
    for position, line in enumerate(lines):
        match = _MEMO_LINE_RE.match(line)
        role, body = (
            (match.group("role"), match.group("body"))
            if match
            else (_PREVIOUS_MEMO_ROLE, line.removeprefix("- "))
        )
        yield from _units(line=(0, position), role=role, text=body)


def _units(*, line: tuple[int, int], role: str, text: str) -> Iterator[_Unit]:
    pieces = (piece for sentence in _sentences(text) for piece in _windows(sentence))
    line_tokens = count_tokens(f"- {role}:") + _NEWLINE_TOKENS
    for index, piece in enumerate(pieces):
        cue_weight = _cue_weight(piece, role=role)
        yield _Unit(
            line=line,
            index=index,
            role=role,
            text=piece,
            facts=frozenset(extract_facts(piece)),
            cue_weight=cue_weight,
            tokens=count_tokens(piece),
            line_tokens=line_tokens,
        )


def _cue_weight(sentence: str, *, role: str) -> float:
    weight = _DECISION_WEIGHT if _DECISION_RE.search(sentence) else 0.0
    if _OPEN_QUESTION_RE.search(sentence):
        weight += _OPEN_QUESTION_WEIGHT
    elif sentence.endswith("?") and role in _QUESTION_ROLES:
        weight += _QUESTION_WEIGHT
    return weight


def _sentences(text: str) -> list[str]:
    return [sentence.strip() for sentence in _SENTENCE_BREAK_RE.split(text) if sentence.strip()]


def _windows(sentence: str) -> Iterator[str]:
    if count_tokens(sentence) <= _MAX_UNIT_TOKENS:
        yield sentence
        return
    words = sentence.split()
    for start in range(0, len(words), _WINDOW_WORDS):
        yield " ".join(words[start : start + _WINDOW_WORDS])


def _select(units: list[_Unit], max_tokens: int) -> list[_Unit]:
    """Greedy weighted set cover: best new-fact value per token first, in pick order.

    A unit is worth the weights of the facts it adds that no picked unit already states, plus
    its cue weight; units worth nothing, and repeats of a picked sentence, are never picked.
    Ties go to the earlier unit.
    """
    chosen: list[_Unit] = []
    covered: set[Fact] = set()
    open_lines: set[tuple[int, int]] = set()
    remaining = max_tokens
    candidates = [unit for unit in units if _value(unit, covered) > 0]
    while candidates:
        best: tuple[float, _Unit, int] | None = None
        for unit in candidates:
            cost = _cost(unit, open_lines)
            if cost > remaining:
                continue
            ratio = _value(unit, covered) / cost
            if best is None or ratio > best[0]:
                best = (ratio, unit, cost)
        if best is None:
            break
        _, picked, cost = best
        chosen.append(picked)
        covered |= picked.facts
        open_lines.add(picked.line)
        remaining -= cost
        # A unit's value only falls as facts get covered, so one worth nothing now never
        # comes back; dropping those keeps each round short.
        picked_text = picked.text.casefold()
        candidates = [
            unit
            for unit in candidates
            if unit.text.casefold() != picked_text and _value(unit, covered) > 0
        ]
    return chosen


def _cost(unit: _Unit, open_lines: set[tuple[int, int]]) -> int:
    if unit.line in open_lines:
        return unit.tokens + _JOIN_TOKENS
    return unit.tokens + unit.line_tokens


def _value(unit: _Unit, covered: set[Fact]) -> float:
    new_facts = unit.facts - covered
    return unit.cue_weight + sum(
        _FACT_WEIGHTS.get(fact.kind, _DEFAULT_FACT_WEIGHT) for fact in new_facts
    )


def _render(units: list[_Unit]) -> str:
    """One "- role: …" line per source line, units in original order, gaps marked with "…"."""
    lines = []
    ordered = sorted(units, key=lambda unit: (unit.line, unit.index))
    for _, group in groupby(ordered, key=lambda unit: unit.line):
        members = list(group)
        body = members[0].text
        for previous, unit in pairwise(members):
            separator = " " if unit.index == previous.index + 1 else " … "
            body += separator + unit.text
        lines.append(f"- {members[0].role}: {body}")
    return "\n".join(lines)
