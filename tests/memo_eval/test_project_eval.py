"""The memo evaluation with ground truth: generated conversations, the checker, the loop."""

from collections.abc import Sequence
from statistics import fmean

import pytest

from compaction.backends.base import MemoDraft, MemoSource
from convmem.tokens import count_tokens
from memo_eval.project.checker import (
    amounts_in,
    dates_in,
    fact_present,
    probe_answered,
    status_stated,
    units_of,
)
from memo_eval.project.generator import (
    CUSTOMER,
    SPLITS,
    PlantedFact,
    Probe,
    generate,
    split_conversations,
)
from memo_eval.project.report import evaluate_split, format_report, goal_met, merged
from memo_eval.project.simulate import LoopSettings, message_ids, run_conversation, segments


@pytest.fixture(scope="module")
def conversation():
    return generate(seed=7, phrasing="dev")


def test_the_same_seed_gives_the_same_conversation() -> None:
    first = generate(seed=4, phrasing="heldout", turns=80)
    second = generate(seed=4, phrasing="heldout", turns=80)

    assert first.messages == second.messages
    assert first.facts == second.facts
    assert generate(seed=5, phrasing="heldout", turns=80).messages != first.messages


def test_a_conversation_is_long_and_realistically_sized(conversation) -> None:
    tokens = [count_tokens(content) for _, content in conversation.messages]

    assert len(conversation.messages) == 500
    assert [role for role, _ in conversation.messages[:4]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert 300 <= fmean(tokens) <= 380
    assert fmean(tokens[1::2]) > 2 * fmean(tokens[0::2])  # long answers, shorter questions


def test_cases_open_and_close_over_time_and_the_first_episode_lasts(conversation) -> None:
    cases = conversation.cases
    claim = next(case for case in cases.values() if case.kind == "claim")

    assert len(cases) >= 12
    assert claim.opened < 10
    assert claim.closed is None
    assert sum(case.closed is not None for case in cases.values()) >= 8
    assert conversation.open_cases(499) - {CUSTOMER, claim.key}  # more still open at the end
    for case in cases.values():
        changes = [turn for turn, _ in case.statuses]
        assert changes == sorted(changes)
        assert case.closed is None or case.closed == changes[-1]


def test_every_planted_fact_is_stated_where_the_generator_says(conversation) -> None:
    for fact in conversation.facts:
        _, content = conversation.messages[fact.turn]
        assert fact_present(fact, content), fact
        if fact.superseded_at is not None:
            assert fact.superseded_at > fact.turn


def test_facts_cover_the_kinds_the_issue_names(conversation) -> None:
    labels = {fact.label for fact in conversation.facts}
    values = [fact.value for fact in conversation.facts]

    assert {"tracking number", "ticket id", "order number", "customer number"} <= labels
    assert {"order total", "expected delivery", "email address", "customer name"} <= labels
    assert any(" " in value for value in values if not value[0].isdigit())  # multi-part ids
    currencies = {fact.value.split()[0] for fact in conversation.facts if fact.kind == "amount"}
    assert len(currencies) >= 2


def test_the_splits_keep_tuning_and_reporting_apart() -> None:
    dev = {phrasing for phrasing, _ in SPLITS["dev"]}
    heldout = {phrasing for phrasing, _ in SPLITS["heldout"]}
    dev_seeds = {seed for _, seed in SPLITS["dev"]}
    heldout_seeds = {seed for _, seed in SPLITS["heldout"]}

    assert not dev & heldout
    assert not dev_seeds & heldout_seeds
    assert [c.name for c in split_conversations("heldout", turns=4)][:2] == [
        "heldout-1001",
        "heldout-1002",
    ]


def test_probes_are_answered_by_the_lines_that_plant_them(conversation) -> None:
    for probe in conversation.probes:
        if probe.answer is None or probe.answer.turn != probe.cue.turn:
            continue
        expected = probe.asked_at(probe.answer.turn, conversation.cases)
        if expected is None:
            continue
        content = conversation.messages[probe.answer.turn][1]
        if any(fact_present(probe.cue, unit) for unit in units_of(content)):
            assert probe_answered(probe, expected, units_of(content), [probe.answer]), probe


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("a refund of 615,09 € today", ("EUR", "615.09")),
        ("€615.09", ("EUR", "615.09")),
        ("EUR 1,249.50", ("EUR", "1249.50")),
        ("1.249,50 EUR", ("EUR", "1249.50")),
        ("615.09 euros", ("EUR", "615.09")),
        ("US$40.00 or so", ("USD", "40.00")),
        ("£12 only", ("GBP", "12.00")),
        ("CHF 1'249.50", ("CHF", "1249.50")),
        ("it was 88.00 CHF", ("CHF", "88.00")),
    ],
)
def test_the_checker_reads_amounts_in_many_notations(text: str, amount: tuple[str, str]) -> None:
    currency, value = amount
    assert {(c, str(v)) for c, v in amounts_in(text)} == {(currency, value)}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("on 2024-11-06.", (2024, 11, 6)),
        ("on 06.11.2024", (2024, 11, 6)),
        ("on 6 November 2024", (2024, 11, 6)),
        ("by November 6, 2024", (2024, 11, 6)),
        ("on the 6th of November", (None, 11, 6)),
        ("Wednesday 6 November", (None, 11, 6)),
        ("due Nov 6", (None, 11, 6)),
    ],
)
def test_the_checker_reads_dates_in_many_notations(text: str, found: tuple) -> None:
    assert dates_in(text) == {found}


def _fact(kind: str, value: str, slot: str = "x") -> PlantedFact:
    return PlantedFact(case="c", slot=slot, kind=kind, label=slot, value=value, turn=0)


def test_facts_match_across_notations_but_not_inside_longer_tokens() -> None:
    tracking = _fact("id", "JD01 5523 5435 2199")

    assert fact_present(tracking, "tracking jd01-5523-5435-2199.")
    assert fact_present(tracking, "JD0155235435 2199")
    assert not fact_present(_fact("id", "ORD-1"), "ORD-12 is another order")
    assert fact_present(_fact("date", "2024-11-06"), "due 6 Nov")  # a year-less mention
    assert not fact_present(_fact("date", "2024-11-06"), "due 6 Nov 2023")
    assert fact_present(_fact("phone", "+44 20 7946 0958"), "call +44 (20) 7946-0958")
    assert fact_present(_fact("name", "Dana Whitfield"), "customer DANA WHITFIELD")
    assert not fact_present(_fact("amount", "EUR 615.09"), "USD 615.09")


def test_a_probe_needs_cue_and_answer_in_one_unit_without_a_list_of_everything() -> None:
    order, other = _fact("id", "ORD-1", "order"), _fact("id", "ORD-2", "order")
    refund = _fact("amount", "EUR 615.09", "refund")
    probe = Probe(
        case="c", question="Which order was the EUR 615.09 refund for?", cue=refund, answer=order
    )
    candidates = [order, other, _fact("id", "ORD-3", "order"), _fact("id", "ORD-4", "order")]

    assert probe_answered(probe, "ORD-1", ["- order ORD-1: refund EUR 615.09"], candidates)
    assert not probe_answered(probe, "ORD-1", ["order ORD-1", "refund EUR 615.09"], candidates)
    catalogue = "refund EUR 615.09; ORD-1, ORD-2, ORD-3, ORD-4"
    assert not probe_answered(probe, "ORD-1", [catalogue], candidates)
    paragraph = "Refund:\n- Amount: 615,09 €\n- Order: ORD-1"
    assert probe_answered(probe, "ORD-1", units_of(paragraph), candidates)


def test_status_words_are_the_checkers_own() -> None:
    assert status_stated("delivered", "ORD-1 arrived this morning")
    assert status_stated("delayed", "stuck at the depot")
    assert not status_stated("refunded", "we can refund it")


def test_segments_are_consecutive_and_bounded() -> None:
    result = segments([1000, 1500, 400, 3500, 10, 10], 3000)

    assert result == [range(0, 3), range(3, 4), range(4, 6)]
    assert segments([], 3000) == []


class _RecentOnly:
    """A backend that keeps nothing: all the context has is the recent turns."""

    name = "nothing"
    context_tokens = 8192

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, int, int]] = []

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        self.calls.append((previous_memo, len(messages), max_tokens))
        return MemoDraft("", self.name, "none", "none/1", prompt_tokens=1, completion_tokens=0)


def test_the_loop_chains_memos_over_segments_and_measures_checkpoints(conversation) -> None:
    backend = _RecentOnly()

    run = run_conversation(backend, conversation, LoopSettings(checkpoints=(100, 500)))

    tokens = sum(count_tokens(content) for _, content in conversation.messages)
    assert run.calls == len(backend.calls) >= tokens // 3000
    assert all(previous in (None, "") for previous, _, _ in backend.calls)
    # The memo header (no message ids since December 2026) is taken from the memo's size.
    assert all(480 <= max_tokens < 512 for _, _, max_tokens in backend.calls)
    assert [point.turn for point in run.checkpoints] == [100, 500]
    final = run.checkpoints[-1]
    assert final.memo == ""
    assert final.open_facts.total > 0
    assert final.open_facts.value < 0.5  # without a memo, the past is gone
    assert final.open_facts_in_memo.hit == 0
    assert final.dropped_messages == 0
    assert run.prompt_tokens == run.calls


def test_message_ids_look_like_public_ids(conversation) -> None:
    ids = message_ids(conversation)

    assert len(ids) == len(set(ids)) == 500
    assert all(id_.startswith("msg_") and len(id_) == 26 for id_ in ids)


def test_a_split_report_prints_its_checkpoints_and_the_goal() -> None:
    conversations = [generate(seed=1, phrasing="dev", turns=200)]
    report = evaluate_split(_RecentOnly(), conversations, LoopSettings(checkpoints=(200,)))

    lines = format_report(report, title="test")

    assert lines[0].startswith("test: backend nothing, model none, prompt none/1; 1 conversations")
    assert lines[2].split()[0] == "200"
    assert lines[-1].endswith("NOT met")
    assert not goal_met(report)


def test_reports_of_several_splits_pool_into_one() -> None:
    loop = LoopSettings(checkpoints=(100,))
    parts = [
        evaluate_split(_RecentOnly(), [generate(seed=seed, phrasing="dev", turns=100)], loop)
        for seed in (1, 2)
    ]

    pooled = merged(parts)

    (point,) = pooled.checkpoints()
    assert point.conversations == 2
    assert point.open_facts.total == sum(p.final().open_facts.total for p in parts)
