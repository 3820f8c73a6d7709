"""The embedded summarizer: structured state memos, chained, within their size."""

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings as SettingsFixture

from compaction.backends import get_backend
from compaction.backends.base import MemoSource
from compaction.backends.embedded import PROMPT_VERSION, EmbeddedBackend
from compaction.backends.memo_state import parse_memo, render_memo
from compaction.memo_eval.generator import generate
from compaction.memo_eval.report import evaluate_split
from compaction.memo_eval.simulate import LoopSettings
from convmem.tokens import count_tokens


def _sources(*turns: tuple[str, str]) -> list[MemoSource]:
    return [
        MemoSource(id=f"msg_{index:03d}", role=role, content=content)
        for index, (role, content) in enumerate(turns)
    ]


SUPPORT_CHAT = _sources(
    ("user", "Hi, my name is Dana Whitfield. You can reach me at dana@example.com."),
    ("assistant", "Hello Dana! How can I help you today?"),
    ("user", "I ordered a desk on 6 November 2024, order ORD-48213, and paid €615.09."),
    (
        "assistant",
        "Order ORD-48213 left our warehouse with UPS. The tracking number is "
        "1Z999AA10123456784 and the estimated delivery date is 12 November 2024.\n\n"
        "Orders over €100 ship for free, and refunds usually take 5 to 7 days.",
    ),
    ("user", "The weather is lovely here, by the way."),
    (
        "assistant",
        "Separately, invoice INV-2024-0931 was wrong: credit note CN-00417 for €18.50 is "
        "issued and the due date moves to 30 November 2024.",
    ),
)


def _memo(messages: list[MemoSource], previous: str | None = None, max_tokens: int = 400) -> str:
    return (
        EmbeddedBackend()
        .summarize(previous_memo=previous, messages=messages, max_tokens=max_tokens)
        .text
    )


def _line_with(memo: str, text: str) -> str:
    return next(line for line in memo.splitlines() if text in line)


def test_it_is_deterministic_and_counts_what_it_read_and_wrote() -> None:
    first = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=300)
    second = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=300)

    assert first == second
    assert (first.backend, first.model, first.prompt_version) == (
        "embedded",
        "state-memo",
        PROMPT_VERSION,
    )
    assert first.completion_tokens == count_tokens(first.text)
    assert first.prompt_tokens == sum(count_tokens(m.content) for m in SUPPORT_CHAT)


def test_it_writes_the_customer_and_one_line_per_case_with_its_facts() -> None:
    memo = _memo(SUPPORT_CHAT)

    assert memo.splitlines()[0] == "Customer: Dana Whitfield; dana@example.com"
    order = _line_with(memo, "ORD-48213")
    assert order.startswith("- order ORD-48213 (shipped): ")
    for fact in ("tracking 1Z999AA10123456784", "paid EUR 615.09", "due 12 Nov 2024"):
        assert fact in order
    invoice = _line_with(memo, "INV-2024-0931")
    assert invoice.startswith("- invoice INV-2024-0931 (corrected): ")
    assert "credit note CN-00417" in invoice
    assert "EUR 18.50" in invoice
    assert "due 30 Nov 2024" in invoice
    # General policy text is not a fact of any case.
    assert "EUR 100" not in memo
    assert "Open items:" in memo
    assert "Changed since previous memo: new order ORD-48213 (shipped)" in memo


def test_the_memo_reads_back_into_the_same_state() -> None:
    memo = _memo(SUPPORT_CHAT)

    state, leftovers = parse_memo(memo)

    assert leftovers == []
    assert render_memo(state) == memo


def test_a_chained_memo_carries_open_cases_through_ranges_that_never_mention_them() -> None:
    memo = _memo(SUPPORT_CHAT)
    small_talk = _sources(
        ("user", "Thanks! Do you also sell bookshelves?"),
        ("assistant", "We do, in oak and in walnut; they ship within a week."),
    )
    for _ in range(30):
        memo = _memo(small_talk, previous=memo)

    assert "tracking 1Z999AA10123456784" in _line_with(memo, "ORD-48213")
    assert "Changed since previous memo" not in memo


def test_status_changes_close_cases_and_are_listed_as_changes() -> None:
    memo = _memo(SUPPORT_CHAT)
    later = _sources(
        ("user", "Good news: order ORD-48213 was delivered this morning."),
        ("assistant", "Great, I've marked order ORD-48213 as delivered."),
    )

    memo = _memo(later, previous=memo)

    assert "- order ORD-48213 (delivered): " in memo
    assert memo.index("Closed cases:") < memo.index("ORD-48213")
    assert "Changed since previous memo: ORD-48213 shipped -> delivered" in memo


def test_a_sentence_that_does_not_name_a_case_cannot_close_it() -> None:
    memo = _memo(SUPPORT_CHAT)
    later = _sources(
        ("assistant", "Your order ORD-48213 is still with UPS."),
        ("user", "By the way, my old lamp was delivered fine last year."),
    )

    memo = _memo(later, previous=memo)

    assert "- order ORD-48213 (shipped)" in memo


def test_facts_before_a_new_case_is_named_wait_for_it() -> None:
    memo = _memo(
        _sources(
            ("user", "My espresso machine broke. I bought it on 3 March 2024 for €349.00."),
            ("assistant", "Sorry to hear that! I've registered warranty claim WC-88-21907."),
        )
    )

    claim = _line_with(memo, "WC-88-21907")
    assert claim.startswith("- claim WC-88-21907 (registered): ")
    assert "EUR 349.00" in claim
    assert "3 Mar 2024" in claim


def test_a_replacement_belongs_to_the_order_it_replaces() -> None:
    memo = _memo(
        _sources(
            ("user", "Order ORD-1234 never came."),
            ("assistant", "DHL confirmed that order ORD-1234 is lost. Refund or replacement?"),
            ("user", "A replacement, please."),
            ("assistant", "I've created replacement order ORD-5678; tracking 1Z111BB20123456789."),
        )
    )

    order = _line_with(memo, "ORD-1234")
    assert order.startswith("- order ORD-1234 (replacement shipped): ")
    assert "replacement ORD-5678" in order
    assert "1Z111BB20123456789" in order


def test_a_ticket_raised_with_the_carrier_belongs_to_the_order_in_focus() -> None:
    memo = _memo(
        _sources(
            ("user", "My order ORD-48213 is stuck in Leipzig."),
            ("assistant", "I opened ticket TCK-7731 with DHL; they answer within 2 days."),
            ("user", "My coffee grinder shows error E7, serial 4X7-99A-201."),
            ("assistant", "I've logged ticket TCK-8800 for serial 4X7-99A-201."),
        )
    )

    assert "ticket TCK-7731" in _line_with(memo, "ORD-48213")
    assert _line_with(memo, "TCK-8800").startswith("- ticket TCK-8800 (open): serial 4X7-99A-201")


def test_a_previous_memo_in_prose_is_read_like_messages() -> None:
    previous = "The customer paid $40 for order ORD-1 on 2024-05-01.\nNothing else happened."

    memo = _memo([], previous=previous)

    order = _line_with(memo, "ORD-1")
    assert "USD 40.00" in order
    assert "1 May 2024" in order


def test_under_pressure_closed_cases_go_first_and_open_cases_keep_their_ids() -> None:
    turns: list[tuple[str, str]] = []
    for number in range(12):
        turns.append(("user", f"Order ORD-{1000 + number} arrived, paid €{20 + number}.00."))
        turns.append(("assistant", f"Great, order ORD-{1000 + number} is delivered and closed."))
    turns.append(("user", "My order ORD-9000 cost €99.00 and has not arrived."))
    turns.append(("assistant", "Order ORD-9000 shipped with UPS, tracking 1Z999AA10123456784."))
    full = _memo(_sources(*turns), max_tokens=2000)

    tight = _memo(_sources(*turns), max_tokens=90)

    assert count_tokens(tight) <= 90 < count_tokens(full)
    assert "ORD-1000" in full
    assert "ORD-1000" not in tight
    assert "- order ORD-9000 (shipped): tracking 1Z999AA10123456784" in tight


def test_a_budget_too_small_for_anything_gives_an_empty_memo() -> None:
    assert _memo(SUPPORT_CHAT, max_tokens=3) == ""


_WORDS = st.sampled_from(
    [
        "hello",
        "Maria Lopez",
        "order",
        "ORD-12345",
        "ticket",
        "TCK-991",
        "#4821",
        "$40",
        "615,09 €",
        "on",
        "2024-05-01",
        "6 Nov",
        "tracking",
        "1Z999AA10123456784",
        "JD01 5523 5435",
        "dana@example.com",
        "+44 20 7946 0958",
        "delivered",
        "lost",
        "refund",
        "replacement",
        "not",
        "?",
        ".",
        ";",
        ":",
        "\n",
        "- Order:",
    ]
)
_CONTENT = st.lists(_WORDS, max_size=60).map(" ".join)
_MESSAGES = st.lists(
    st.builds(
        MemoSource,
        id=st.just("msg_x"),
        role=st.sampled_from(["user", "assistant"]),
        content=st.one_of(_CONTENT, st.text(max_size=200)),
    ),
    max_size=12,
)


@hypothesis_settings(max_examples=150, deadline=None)
@given(
    messages=_MESSAGES,
    previous=st.one_of(st.none(), _CONTENT, st.text(max_size=200)),
    max_tokens=st.integers(min_value=0, max_value=160),
)
def test_it_never_exceeds_max_tokens(
    messages: list[MemoSource], previous: str | None, max_tokens: int
) -> None:
    draft = EmbeddedBackend().summarize(
        previous_memo=previous, messages=messages, max_tokens=max_tokens
    )

    assert count_tokens(draft.text) <= max_tokens


@hypothesis_settings(max_examples=60, deadline=None)
@given(messages=_MESSAGES)
def test_its_own_memo_always_reads_back_into_the_same_memo(messages: list[MemoSource]) -> None:
    memo = _memo(messages, max_tokens=5000)

    state, leftovers = parse_memo(memo)

    assert leftovers == []
    assert render_memo(state) == memo


def test_over_a_long_dev_conversation_it_keeps_the_open_cases() -> None:
    """A regression guard on one 500-turn tuning conversation (held-out figures come from
    `bench/memo_quality.py`, never from tests)."""
    report = evaluate_split(
        EmbeddedBackend(), [generate(seed=2, phrasing="dev")], LoopSettings(checkpoints=(500,))
    )

    final = report.final()
    assert final is not None
    assert final.open_facts.value >= 0.9
    assert final.max_memo_tokens <= 512
    assert report.overlong_replies == 0


def test_context_tokens_come_from_the_setting(settings: SettingsFixture) -> None:
    assert EmbeddedBackend().context_tokens == 16384
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 4096

    assert EmbeddedBackend().context_tokens == 4096


def test_get_backend_defaults_to_the_configured_backend(settings: SettingsFixture) -> None:
    settings.CONVMEM_SUMMARIZER_BACKEND = "embedded"

    assert isinstance(get_backend(), EmbeddedBackend)
    assert isinstance(get_backend("compaction.backends.embedded.EmbeddedBackend"), EmbeddedBackend)


def test_get_backend_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="Unknown summarizer backend 'nope'"):
        get_backend("nope")
    with pytest.raises(ValueError, match="Cannot import"):
        get_backend("compaction.backends.missing.Backend")
