"""Where the checkable facts of a text are, so the admin can highlight them.

``compaction.evals.located_facts`` reports each fact with the place it is written, from the
same extraction that ``extract_facts`` (and so the stored scores) use: the highlights can never
disagree with the scores, and an identifier in several pieces ("JD01 5523 5435 2199 7787") is
highlighted whole.
"""

from dataclasses import dataclass

from compaction.evals import Fact, located_facts


@dataclass(frozen=True)
class FactSpan:
    start: int
    end: int
    fact: Fact


def fact_spans(text: str) -> list[FactSpan]:
    """Non-overlapping spans of ``text`` stating its facts, in text order.

    Where spans overlap (a quote around an amount), the longer one wins; ties go left. Every
    span's fact is one of ``extract_facts(text)``.
    """
    candidates = [FactSpan(start, end, fact) for start, end, fact in located_facts(text)]
    kept: list[FactSpan] = []
    for span in sorted(candidates, key=lambda s: (-(s.end - s.start), s.start)):
        if all(span.end <= k.start or span.start >= k.end for k in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)
