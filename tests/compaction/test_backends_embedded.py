import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings as SettingsFixture

from compaction.backends import get_backend
from compaction.backends.base import MemoSource
from compaction.backends.embedded import PROMPT_VERSION, EmbeddedBackend
from compaction.evals import (
    EvalConversation,
    extract_facts,
    fact_is_supported,
    load_dataset,
    planted_recall,
)
from compaction.tokens import count_tokens

EVAL_BUDGET = 250


def _sources(messages: list[dict[str, str]]) -> list[MemoSource]:
    return [
        MemoSource(id=f"msg_{index:03d}", role=message["role"], content=message["content"])
        for index, message in enumerate(messages)
    ]


SUPPORT_CHAT = _sources(
    [
        {"role": "user", "content": "Hi there, hope your day is going well."},
        {"role": "assistant", "content": "It is, thanks! How can I help you today?"},
        {"role": "user", "content": "I was charged $1,249.99 twice for order ORD-48213."},
        {"role": "assistant", "content": "Sorry about that. I opened ticket TCK-5521."},
        {"role": "user", "content": "Great, appreciate it. The weather is lovely here."},
        {"role": "assistant", "content": "We decided to refund the duplicate charge."},
        {"role": "user", "content": "Thanks. Email me at dana@example.com when it is done."},
    ]
)


def test_it_is_deterministic() -> None:
    first = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=60)
    second = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=60)

    assert first == second
    assert (first.backend, first.model, first.prompt_version) == (
        "embedded",
        "extractive",
        PROMPT_VERSION,
    )


def test_it_keeps_facts_and_decisions_and_drops_small_talk_in_original_order() -> None:
    draft = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=200)

    assert draft.text.splitlines() == [
        "- user: I was charged $1,249.99 twice for order ORD-48213.",
        "- assistant: I opened ticket TCK-5521.",
        "- assistant: We decided to refund the duplicate charge.",
        "- user: Email me at dana@example.com when it is done.",
    ]


def test_a_tight_budget_keeps_the_densest_facts() -> None:
    draft = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=25)

    assert count_tokens(draft.text) <= 25
    assert "ORD-48213" in draft.text


def test_a_budget_smaller_than_one_line_gives_an_empty_memo() -> None:
    draft = EmbeddedBackend().summarize(previous_memo=None, messages=SUPPORT_CHAT, max_tokens=3)

    assert draft.text == ""


_WORDS = st.sampled_from(
    [
        "hello",
        "Maria",
        "Lopez",
        "order",
        "ORD-12345",
        "#4821",
        "$40",
        "1,200",
        "on",
        "2024-05-01",
        "at",
        "3 pm",
        "dana@example.com",
        "https://example.com/x",
        "decided",
        "whether",
        "?",
        ".",
        "\n",
        "…",
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
    previous=st.one_of(st.none(), _CONTENT),
    max_tokens=st.integers(min_value=0, max_value=120),
)
def test_it_never_exceeds_max_tokens(
    messages: list[MemoSource], previous: str | None, max_tokens: int
) -> None:
    draft = EmbeddedBackend().summarize(
        previous_memo=previous, messages=messages, max_tokens=max_tokens
    )

    assert count_tokens(draft.text) <= max_tokens


@pytest.mark.parametrize("conversation", load_dataset(), ids=lambda conversation: conversation.name)
def test_it_keeps_the_planted_facts_of_the_eval_dataset(conversation: EvalConversation) -> None:
    draft = EmbeddedBackend().summarize(
        previous_memo=None, messages=_sources(conversation.messages), max_tokens=EVAL_BUDGET
    )

    assert count_tokens(draft.text) <= EVAL_BUDGET
    assert planted_recall(conversation.planted_facts, draft.text) >= 0.8


def test_extending_a_memo_keeps_the_previous_memos_facts() -> None:
    conversation = load_dataset()[0]
    sources = _sources(conversation.messages)
    half = len(sources) // 2
    backend = EmbeddedBackend()
    first = backend.summarize(previous_memo=None, messages=sources[:half], max_tokens=150)

    extended = backend.summarize(previous_memo=first.text, messages=sources[half:], max_tokens=250)

    first_facts = extract_facts(first.text)
    extended_facts = extract_facts(extended.text)
    assert first_facts
    assert all(fact_is_supported(fact, extended_facts, extended.text) for fact in first_facts)
    assert planted_recall(conversation.planted_facts, extended.text) >= 0.8
    # The previous memo's lines come first, as they did in the conversation.
    assert extended.text.startswith(first.text.splitlines()[0])


def test_a_previous_memo_in_prose_is_kept_as_memo_lines() -> None:
    previous = "The customer paid $40 for ORD-1.\nNothing else happened."

    draft = EmbeddedBackend().summarize(
        previous_memo=previous, messages=SUPPORT_CHAT[:1], max_tokens=50
    )

    assert draft.text == "- memo: The customer paid $40 for ORD-1."


def test_get_backend_defaults_to_the_configured_backend(settings: SettingsFixture) -> None:
    settings.CONVMEM_SUMMARIZER_BACKEND = "embedded"

    assert isinstance(get_backend(), EmbeddedBackend)
    assert isinstance(get_backend("compaction.backends.embedded.EmbeddedBackend"), EmbeddedBackend)


def test_get_backend_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="Unknown summarizer backend 'nope'"):
        get_backend("nope")
    with pytest.raises(ValueError, match="Cannot import"):
        get_backend("compaction.backends.missing.Backend")
