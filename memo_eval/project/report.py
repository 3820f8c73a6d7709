"""Runs of a backend over a split, summed per checkpoint, and the table that prints them.

Ratios are pooled over the conversations (hits summed over totals summed), so a conversation
with more open facts weighs more; a conversation whose backend failed is listed apart and left
out of the sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from compaction.backends.base import BackendError, SummarizerBackend
from memo_eval.project.generator import Conversation
from memo_eval.project.simulate import (
    DEFAULT_LOOP,
    Checkpoint,
    LoopSettings,
    Ratio,
    Run,
    run_conversation,
)

GOAL_OPEN_FACTS = 0.9


@dataclass(frozen=True)
class CheckpointSummary:
    turn: int
    conversations: int
    open_facts: Ratio
    open_facts_in_memo: Ratio
    all_facts: Ratio
    open_probes: Ratio
    all_probes: Ratio
    max_memo_tokens: int
    mean_memo_tokens: float
    mean_compression: float


@dataclass
class SplitReport:
    backend: str
    model: str
    prompt_version: str
    loop: LoopSettings
    runs: list[Run] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def checkpoints(self) -> list[CheckpointSummary]:
        by_turn: dict[int, list[Checkpoint]] = {}
        for run in self.runs:
            for checkpoint in run.checkpoints:
                by_turn.setdefault(checkpoint.turn, []).append(checkpoint)
        return [_summary(turn, points) for turn, points in sorted(by_turn.items())]

    def final(self) -> CheckpointSummary | None:
        summaries = self.checkpoints()
        return summaries[-1] if summaries else None

    @property
    def overlong_replies(self) -> int:
        return sum(run.overlong_replies for run in self.runs)

    @property
    def calls(self) -> int:
        return sum(run.calls for run in self.runs)


def merged(reports: Sequence[SplitReport]) -> SplitReport:
    """One report of several splits' runs (same backend and loop), pooled as one split."""
    first = reports[0]
    return SplitReport(
        backend=first.backend,
        model=first.model,
        prompt_version=first.prompt_version,
        loop=first.loop,
        runs=[run for report in reports for run in report.runs],
        failures=[failure for report in reports for failure in report.failures],
    )


def _pooled(ratios: Sequence[Ratio]) -> Ratio:
    return Ratio(sum(r.hit for r in ratios), sum(r.total for r in ratios))


def _summary(turn: int, points: list[Checkpoint]) -> CheckpointSummary:
    return CheckpointSummary(
        turn=turn,
        conversations=len(points),
        open_facts=_pooled([p.open_facts for p in points]),
        open_facts_in_memo=_pooled([p.open_facts_in_memo for p in points]),
        all_facts=_pooled([p.all_facts for p in points]),
        open_probes=_pooled([p.open_probes for p in points]),
        all_probes=_pooled([p.all_probes for p in points]),
        max_memo_tokens=max(p.memo_tokens for p in points),
        mean_memo_tokens=fmean(p.memo_tokens for p in points),
        mean_compression=fmean(p.compression for p in points),
    )


def evaluate_split(
    backend: SummarizerBackend,
    conversations: Sequence[Conversation],
    loop: LoopSettings = DEFAULT_LOOP,
    *,
    progress: Callable[[Run], None] | None = None,
) -> SplitReport:
    """Run the memo loop of every conversation; a `BackendError` fails that conversation only."""
    report = SplitReport(backend=backend.name, model="", prompt_version="", loop=loop)
    for conversation in conversations:
        try:
            run = run_conversation(backend, conversation, loop)
        except BackendError as error:
            report.failures.append((conversation.name, str(error)))
            continue
        report.runs.append(run)
        if run.last_draft is not None:
            report.model = run.last_draft.model
            report.prompt_version = run.last_draft.prompt_version
        if progress is not None:
            progress(run)
    return report


HEADER = (
    "turn  open facts  (in memo)  all facts  open probes  all probes  memo max  memo mean  "
    "compression"
)


def format_checkpoint(summary: CheckpointSummary) -> str:
    """One row under `HEADER`."""
    return (
        f"{summary.turn:>4}  {summary.open_facts.value:>10.3f}  "
        f"{summary.open_facts_in_memo.value:>9.3f}  {summary.all_facts.value:>9.3f}  "
        f"{summary.open_probes.value:>11.3f}  {summary.all_probes.value:>10.3f}  "
        f"{summary.max_memo_tokens:>8}  {summary.mean_memo_tokens:>9.1f}  "
        f"{summary.mean_compression:>11.4f}"
    )


def format_report(report: SplitReport, *, title: str) -> list[str]:
    """The printed table of a split: a heading, one row per checkpoint, the failures, and the
    goal line (open facts at the last checkpoint >= `GOAL_OPEN_FACTS`, memo within size)."""
    loop = report.loop
    lines = [
        f"{title}: backend {report.backend}, model {report.model or '-'}, prompt "
        f"{report.prompt_version or '-'}; {len(report.runs)} conversations, memo "
        f"{loop.memo_tokens} tokens, segments ~{loop.segment_tokens} tokens, window "
        f"{loop.window}, reserve {loop.reserve}; {report.calls} memo calls, "
        f"{report.overlong_replies} replies over the size",
        HEADER,
    ]
    lines += [format_checkpoint(summary) for summary in report.checkpoints()]
    lines += [f"failed {name}: {error}" for name, error in report.failures]
    final = report.final()
    if final is not None:
        met = (
            final.open_facts.value >= GOAL_OPEN_FACTS and final.max_memo_tokens <= loop.memo_tokens
        )
        lines.append(
            f"goal at turn {final.turn}: open facts {final.open_facts.hit}/"
            f"{final.open_facts.total} = {final.open_facts.value:.3f} (>= {GOAL_OPEN_FACTS}), "
            f"memo <= {loop.memo_tokens} tokens (max {final.max_memo_tokens}): "
            f"{'met' if met else 'NOT met'}"
        )
    return lines


def goal_met(report: SplitReport) -> bool:
    final = report.final()
    return (
        final is not None
        and not report.failures
        and final.open_facts.value >= GOAL_OPEN_FACTS
        and final.max_memo_tokens <= report.loop.memo_tokens
    )
