import json
from collections.abc import Sequence
from io import StringIO

import pytest
from django.core.management import call_command

from compaction.backends.base import BackendError, MemoDraft, MemoSource
from compaction.evals import (
    Fact,
    extract_facts,
    fact_is_supported,
    load_dataset,
    planted_recall,
    score_memo,
)
from compaction.evals import evaluate as evaluate_backend


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("Your order ORD-12345 has shipped.", Fact("id", "ORD-12345")),
        ("See ticket TCK-99 for details.", Fact("id", "TCK-99")),
        ("The invoice INV-2024-0931 is attached.", Fact("id", "INV-2024-0931")),
        ("It is tracked as #4821 internally.", Fact("id", "#4821")),
        ("Write to Dana.Whitfield@Example.com today.", Fact("email", "dana.whitfield@example.com")),
        (
            "The policy is at https://Help.example.com/refunds/.",
            Fact("url", "https://help.example.com/refunds"),
        ),
        ("We paid $1,249.99 for it.", Fact("money", "USD 1249.99")),
        ("A fee of €120 applies.", Fact("money", "EUR 120")),
        ("It costs 40 dollars.", Fact("money", "USD 40")),
        ("The budget is $2k.", Fact("money", "USD 2000")),
        ("The renewal is on 2024-09-30.", Fact("date", "2024-09-30")),
        ("The renewal is on September 30, 2024.", Fact("date", "2024-09-30")),
        ("Due by 9/15/2024 please.", Fact("date", "2024-09-15")),
        ("We arrive on the 3rd of June.", Fact("date", "--06-03")),
        ("The tasting is at 6 pm.", Fact("time", "18:00")),
        ("The call is at 10:45 am.", Fact("time", "10:45")),
        ("We have 1,200 seats.", Fact("number", "1200")),
        ("It saves about 20% a year.", Fact("number", "20%")),
        ("The client is on version 5.2.1 now.", Fact("version", "5.2.1")),
        ("I spoke with Priya Raman yesterday.", Fact("name", "Priya Raman")),
        ("The flight leaves from Lisbon in the morning.", Fact("name", "Lisbon")),
        ("Thanks Maria, that helps.", Fact("name", "Maria")),
        ("Ask Dr. Okafor first.", Fact("name", "Okafor")),
        ('The error says "Handshake failed." again.', Fact("quote", "handshake failed")),
    ],
)
def test_it_extracts_each_kind(text: str, fact: Fact) -> None:
    assert fact in extract_facts(text)


def test_it_normalises_surface_forms_to_the_same_fact() -> None:
    assert extract_facts("$1,249.00") == extract_facts("1249 USD") == {Fact("money", "USD 1249")}
    assert extract_facts("March 3rd, 2024") == extract_facts("2024-03-03")
    assert extract_facts("3:30 PM") == extract_facts("15:30")


def test_digits_claimed_by_a_specific_kind_are_not_numbers_too() -> None:
    facts = extract_facts("Order ORD-48213 cost $40 on 2024-03-03 at 10:45.")
    assert not {fact for fact in facts if fact.kind == "number"}


def test_sentence_openers_and_calendar_words_are_not_names() -> None:
    facts = extract_facts("Sure, that works. Absolutely fine on Monday in March. I agree.")
    assert not {fact for fact in facts if fact.kind == "name"}


def test_a_name_is_supported_by_a_text_that_mentions_it_anywhere() -> None:
    memo = "- user: Maria will call back."
    assert Fact("name", "Maria") not in extract_facts(memo)
    assert fact_is_supported(Fact("name", "Maria"), extract_facts(memo), memo)


def test_score_memo_math() -> None:
    originals = ["Order ORD-1001 was charged $40.", "Priya Raman will call on 2024-05-01."]
    memo = "- user: Order ORD-1001 was charged $45. Priya Raman will call."

    scores = score_memo(originals=originals, memo=memo, original_tokens=100, memo_tokens=25)

    # Originals: id, money 40, name, date. The memo keeps the id and the name, drops the date
    # and turns $40 into an unsupported $45.
    assert scores.found == ["id:ORD-1001", "name:Priya Raman"]
    assert scores.missing == ["date:2024-05-01", "money:USD 40"]
    assert scores.unsupported == ["money:USD 45"]
    assert scores.fact_recall == 2 / 4
    assert scores.unsupported_rate == 1 / 3
    assert scores.compression == 0.25


def test_score_memo_counts_tokens_when_not_given() -> None:
    scores = score_memo(originals=["one two three four"], memo="one two")

    assert scores.original_tokens > scores.memo_tokens > 0
    assert scores.compression == scores.memo_tokens / scores.original_tokens


def test_score_memo_without_facts() -> None:
    scores = score_memo(originals=["hello there", "how are you"], memo="they said hello")

    assert scores.fact_recall == 1.0
    assert scores.unsupported_rate == 0.0


def test_score_memo_of_nothing() -> None:
    scores = score_memo(originals=[], memo="")

    assert (scores.fact_recall, scores.unsupported_rate, scores.compression) == (1.0, 0.0, 0.0)


def test_scores_as_dict_is_json_ready() -> None:
    scores = score_memo(originals=["Refund $40 to ORD-1."], memo="Refund $40.")

    data = json.loads(json.dumps(scores.as_dict()))

    assert data["fact_recall"] == 0.5
    assert data["missing"] == ["id:ORD-1"]


def test_planted_recall_checks_facts_and_key_phrases() -> None:
    planted = [
        {"kind": "id", "value": "ORD-48213"},
        {"kind": "decision", "value": "refund the duplicate charge"},
        {"kind": "money", "value": "$18.50"},
    ]
    memo = "- assistant: We decided to Refund the duplicate  charge on ORD-48213."

    assert planted_recall(planted, memo) == 2 / 3
    assert planted_recall([], memo) == 1.0


def test_the_dataset_plants_its_facts_among_chit_chat() -> None:
    conversations = load_dataset()

    assert 8 <= len(conversations) <= 12
    for conversation in conversations:
        assert 30 <= len(conversation.messages) <= 80, conversation.name
        transcript = "\n".join(message["content"] for message in conversation.messages)
        assert planted_recall(conversation.planted_facts, transcript) == 1.0, conversation.name
        kinds = {planted["kind"] for planted in conversation.planted_facts}
        assert {"decision", "open_question"} <= kinds


class _FlakyBackend:
    """Fails on the refund dispute conversation; echoes the first message otherwise."""

    name = "flaky"

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        if any("ORD-48213" in message.content for message in messages):
            raise BackendError("upstream down", retryable=True)
        return MemoDraft(messages[0].content, self.name, "echo", "echo/1")


def test_evaluate_scores_each_conversation_and_reports_failures() -> None:
    conversations = load_dataset()

    rows = evaluate_backend(_FlakyBackend(), conversations, max_tokens=100)

    assert [row.conversation for row in rows] == [c.name for c in conversations]
    failed = [row for row in rows if row.error]
    assert failed
    assert all(row.scores is None and row.error == "upstream down" for row in failed)
    assert all(row.scores is not None and row.draft is not None for row in rows if not row.error)


def test_eval_memos_command_prints_a_table_per_backend() -> None:
    out = StringIO()

    call_command("eval_memos", "--backend", "embedded", "--max-tokens", "250", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0] == "backend embedded, model extractive, prompt extractive/1, max_tokens 250"
    names = {conversation.name for conversation in load_dataset()}
    assert {line.split()[0] for line in lines[2:] if line} == names | {"mean"}
    mean_recall = float(next(line for line in lines if line.startswith("mean")).split()[1])
    assert mean_recall >= 0.9
