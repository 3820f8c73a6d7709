import json
from io import StringIO
from itertools import pairwise

import pytest
from django.core.management import CommandError, call_command

from compaction.evals import (
    Fact,
    extract_facts,
    fact_is_supported,
    located_facts,
    score_memo,
    score_memo_over_range,
)
from compaction.fact_spans import fact_spans


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


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("UPS tracking 1Z999AA10123456784 today.", Fact("id", "1Z999AA10123456784")),
        ("DHL: JD01 5523 5435 2199 7787.", Fact("id", "JD01 5523 5435 2199 7787")),
        ("Customer CU 0899 5727, thanks.", Fact("id", "CU 0899 5727")),
        ("Order 403-5652257-5185400 shipped.", Fact("id", "403-5652257-5185400")),
        ("Claim CLM6538879 is open.", Fact("id", "CLM6538879")),
        ("DPD parcel 12345678901234 left.", Fact("id", "12345678901234")),
        ("Invoice INV 123456 is wrong.", Fact("id", "INV 123456")),
        ("Call +44 20 7946 0958 please.", Fact("phone", "+442079460958")),
        ("That is 615,09 € in total.", Fact("money", "EUR 615.09")),
        ("That is 1.249,50 EUR in total.", Fact("money", "EUR 1249.5")),
        ("That is CHF 1'249.50 in total.", Fact("money", "CHF 1249.5")),
    ],
)
def test_it_reads_tracking_numbers_multi_part_ids_phones_and_european_amounts(
    text: str, fact: Fact
) -> None:
    assert fact in extract_facts(text)


def test_small_numbers_and_words_are_not_ids() -> None:
    facts = extract_facts("OK 2 3 things, between 8 and 12, 5 to 7 days, 17,000 parcels, E104.")

    assert not {fact for fact in facts if fact.kind == "id"}


RANGE = [
    "Hi, I'm Dana. My order ORD-1001 cost $40 and shipped on 2024-05-01.",
    "Sure, noted. The weather is nice.",
    "Ticket TCK-2002 is open for ORD-1001; tracking 1Z999AA10123456784.",
    "The refund of $40 for ORD-1001 was issued on 2024-05-09.",
]


def test_score_over_range_reads_a_stream_once_and_scores_key_facts() -> None:
    memo = "order ORD-1001 (refunded): paid USD 40.00; ticket TCK-2002; refund issued 9 May 2024"
    read: list[str] = []

    def stream():
        for text in RANGE:
            read.append(text)
            yield text

    scores = score_memo_over_range(memo, stream(), original_tokens=200, memo_tokens=20)

    assert read == RANGE  # consumed once, in order
    # Key facts of the range: ORD-1001, USD 40, 2024-05-01, TCK-2002, the tracking number and
    # 2024-05-09; the memo lacks the ship date and the tracking number.
    assert scores["found_count"] == 4
    assert scores["missing"] == ["id:1Z999AA10123456784", "date:2024-05-01"]
    assert scores["fact_recall"] == 4 / 6
    # The last message (the final quarter of 4) mentions ORD-1001, USD 40 and 2024-05-09.
    assert scores["recent_fact_recall"] == 1.0
    assert scores["unsupported"] == []
    assert scores["compression"] == 0.1
    assert scores["scorer"] == "range/1"
    assert scores["messages"] == 4


def test_score_over_range_reports_what_the_memo_invents() -> None:
    scores = score_memo_over_range("ORD-1001 cost $45; call Maria Lopez", RANGE)

    assert scores["unsupported"] == ["money:USD 45"]
    assert scores["unsupported_rate"] == 1 / 2
    assert scores["original_tokens"] > scores["memo_tokens"] > 0


def test_score_over_range_caps_its_lists_and_is_json_ready() -> None:
    originals = [f"Order ORD-{1000 + index} is late." for index in range(120)]

    scores = score_memo_over_range("Nothing to report.", originals, max_listed=50)

    assert scores["missing_count"] == 120
    assert len(scores["missing"]) == 50
    assert scores["missing"][0] == "id:ORD-1119"  # the most recently mentioned first
    assert scores["fact_recall"] == 0.0
    assert scores["recent_fact_recall"] == 0.0
    assert json.loads(json.dumps(scores)) == scores


def test_score_over_an_empty_range() -> None:
    scores = score_memo_over_range("", [])

    assert (scores["fact_recall"], scores["recent_fact_recall"]) == (1.0, 1.0)
    assert (scores["unsupported_rate"], scores["compression"], scores["messages"]) == (0.0, 0.0, 0)


def test_eval_memos_command_prints_checkpoints_and_the_goal_line() -> None:
    out = StringIO()

    call_command(
        "eval_memos",
        "--backend",
        "embedded",
        "--seed",
        "3",
        "--turns",
        "120",
        "--checkpoints",
        "60,120",
        stdout=out,
    )

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("seeds 3 (dev): backend embedded, model extractive-memo, prompt ")
    assert lines[1].split()[:3] == ["turn", "open", "facts"]
    assert [line.split()[0] for line in lines[2:4]] == ["60", "120"]
    assert lines[4].startswith("goal at turn 120: open facts ")


def test_eval_memos_command_refuses_bad_sizes() -> None:
    with pytest.raises(CommandError, match="positive"):
        call_command("eval_memos", "--seed", "1", "--memo-tokens", "0", stdout=StringIO())


def test_facts_are_located_where_they_are_written() -> None:
    text = 'Maria Lopez said "ships soon"; tracking JD01 5523 5435 2199 7787, refund 615,09 €.'

    located = {text[start:end]: fact for start, end, fact in located_facts(text)}

    assert located["JD01 5523 5435 2199 7787"] == Fact("id", "JD01 5523 5435 2199 7787")
    assert located["615,09 €"] == Fact("money", "EUR 615.09")
    assert located["Maria Lopez"] == Fact("name", "Maria Lopez")
    assert located['"ships soon"'] == Fact("quote", "ships soon")
    assert {fact for _, _, fact in located_facts(text)} == extract_facts(text)


def test_fact_spans_highlight_a_multi_part_id_whole_and_never_overlap() -> None:
    text = 'Tracking JD01 5523 5435 2199 7787: "refund $40 to ORD-1" said Dr. Okafor.'

    spans = fact_spans(text)

    assert [text[span.start : span.end] for span in spans] == [
        "JD01 5523 5435 2199 7787",
        '"refund $40 to ORD-1"',
        "Okafor",
    ]
    assert all(a.end <= b.start for a, b in pairwise(spans))
