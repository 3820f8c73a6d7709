"""``salience.gives_correction``, recall's test of a candidate: a statement of the text gives a
value with a correction's words and asks nothing (``Statement``'s questions, asked cheaply)."""

import pytest

from compaction.backends.salience import gives_correction, statements

TEXTS = [
    "Sorry, I got that wrong: the gate code is actually 9034-PL.",
    "The gate code for the allotment shed is 5521-KX, the padlock is brass.",
    "Is the code now 9034-PL?",
    "Actually, what is the code?\nThe code is 5521-KX.",
    "The flight is no  longer LH 404.\nIt leaves from Gate B12.",
    "We moved.\n\n  - The office is at Rua Augusta 12 now",
    "not the red one but the blue one, order ORD-30011",
    "It is not\nthe 12th but the 14th.",
    "The new padlock fits. It arrived on 3 May.",
    "Nothing changed here at all.",
    "The lamp arrived with the wrong shade, order ORD-30011.",
    "None of them is wrong; the code is 9034-PL.",
    "No, that's wrong: the code is 9034-PL.",
    "Not yet.\nWrong code earlier: it is 9034-PL.",
    "> Correction: ticket 88213, not 88123",
    "",
]


def said_by_statements(text: str) -> bool:
    """The definition: a statement that corrects, has anchors, and is not a question."""
    return any(s.corrects and s.anchors and not s.asks for s in statements("user", text))


@pytest.mark.parametrize("text", TEXTS)
def test_gives_correction_answers_as_the_statements_do(text):
    assert gives_correction(text) == said_by_statements(text)


@pytest.mark.parametrize(
    ("text", "corrects"),
    [
        ("Sorry, I gave you the wrong one earlier: it is ORD-30011.", True),
        ("No, that's wrong: the code is 9034-PL.", True),
        ("I was wrong about the gate code, it is 9034-PL.", True),
        ("The lamp arrived with the wrong shade, order ORD-30011.", False),
        ("They sent me the wrong size for ORD-30011.", False),
        ("None of them is wrong; the code is 9034-PL.", False),
        ("Let's find what went wrong with build 4.2.1.", False),
        ("Nothing is wrong with ORD-30011, and the new code is 9034-PL.", True),
    ],
)
def test_a_wrong_counts_as_a_correction_only_when_it_takes_something_back(text, corrects):
    (statement,) = statements("user", text)

    assert statement.corrects is corrects
    assert gives_correction(text) is corrects
