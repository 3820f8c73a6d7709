"""Where the checkable facts of a text are, so the admin can highlight them.

``compaction.evals.extract_facts`` says *which* facts a text states (normalised: "$1,249.00" is
``money:USD 1249``), not where. This module finds the places by asking ``extract_facts`` itself
about short windows of the text — one to ``MAX_WORDS`` whitespace-separated words — and keeping
the smallest window that states a fact of the whole text. Quotes, which run longer, are found
by their quotation marks. Using the extractor as the oracle means the highlights can never
disagree with the scores, whatever the extractor learns to recognise later.
"""

import re
from dataclasses import dataclass
from functools import lru_cache

from compaction.evals import Fact, extract_facts

MAX_WORDS = 3
# Facts are found mid-sentence in the text, but a window starts a "sentence" of its own; a
# lower-case lead-in stops the extractor from discarding a sentence-initial single name.
_LEAD_IN = "and "
_WORD_RE = re.compile(r"\S+")
_QUOTE_RE = re.compile('"[^"\n]{2,80}"|\u201c[^\u201d\n]{2,80}\u201d')
_EDGE_PUNCTUATION = "\"'\u201c\u201d\u2018\u2019([{)]}.,;:!?"


@dataclass(frozen=True)
class FactSpan:
    start: int
    end: int
    fact: Fact


@lru_cache(maxsize=8192)
def _facts_of(fragment: str) -> frozenset[Fact]:
    return frozenset(extract_facts(_LEAD_IN + fragment))


def fact_spans(text: str) -> list[FactSpan]:
    """Non-overlapping spans of ``text`` stating its facts, in text order.

    A fact that ``extract_facts(text)`` finds but no short window states on its own (a long
    date phrase, say) has no span; every span's fact is one of ``extract_facts(text)``.
    """
    wanted = extract_facts(text)
    if not wanted:
        return []
    candidates: list[FactSpan] = []
    for match in _QUOTE_RE.finditer(text):
        candidates += [
            FactSpan(match.start(), match.end(), fact)
            for fact in _facts_of(match.group(0)) & wanted
            if fact.kind == "quote"
        ]
    words = [(m.start(), m.end()) for m in _WORD_RE.finditer(text)]
    for size in range(1, MAX_WORDS + 1):
        for first in range(len(words) - size + 1):
            start, end = words[first][0], words[first + size - 1][1]
            found = _facts_of(text[start:end]) & wanted
            if size > 1:
                # Only what the window states beyond its smaller parts is new at this size.
                found -= _facts_of(text[start : words[first + size - 2][1]])
                found -= _facts_of(text[words[first + 1][0] : end])
            candidates += [
                _trimmed(text, start, end, fact) for fact in found if fact.kind != "quote"
            ]
    return _non_overlapping(candidates)


def _trimmed(text: str, start: int, end: int, fact: Fact) -> FactSpan:
    """The span without edge punctuation ("ORD-1," → "ORD-1"), when the fact survives it."""
    inner_start, inner_end = start, end
    while inner_start < inner_end and text[inner_start] in _EDGE_PUNCTUATION:
        inner_start += 1
    while inner_end > inner_start and text[inner_end - 1] in _EDGE_PUNCTUATION:
        inner_end -= 1
    if fact in _facts_of(text[inner_start:inner_end]):
        return FactSpan(inner_start, inner_end, fact)
    return FactSpan(start, end, fact)


def _non_overlapping(candidates: list[FactSpan]) -> list[FactSpan]:
    """Longer spans win ("649.00 EUR" as money over "649.00" as a number); ties go left."""
    kept: list[FactSpan] = []
    for span in sorted(candidates, key=lambda s: (-(s.end - s.start), s.start)):
        if all(span.end <= k.start or span.start >= k.end for k in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)
