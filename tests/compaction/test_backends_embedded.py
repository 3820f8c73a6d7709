"""The embedded summarizer: extractive memos of what later turns depend on, in any domain."""

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings as SettingsFixture

from compaction.backends import get_backend
from compaction.backends.base import MemoSource
from compaction.backends.embedded import (
    HEADER,
    PROMPT_VERSION,
    EmbeddedBackend,
    Memo,
    cued_statements,
    lines_superseded,
)
from compaction.backends.salience import anchors
from convmem.tokens import count_tokens


def _sources(*turns: tuple[str, str]) -> list[MemoSource]:
    return [
        MemoSource(id=f"msg_{index:03d}", role=role, content=content)
        for index, (role, content) in enumerate(turns)
    ]


def _memo(messages: list[MemoSource], *, previous: str | None = None, max_tokens=512) -> str:
    return (
        EmbeddedBackend()
        .summarize(previous_memo=previous, messages=messages, max_tokens=max_tokens)
        .text
    )


CODING_AGENT = _sources(
    ("user", "The test suite fails since this morning; the repo is at ~/src/billing-svc."),
    ("assistant", "Running it now."),
    ("assistant", '[called shell with {"cmd": "pytest tests/test_invoice.py -x"}]'),
    (
        "tool",
        "[result of shell] FAILED tests/test_invoice.py::test_rounding - "
        "AssertionError: expected 10.01 got 10.0",
    ),
    ("assistant", "The failure is in round_half_even() in billing/money.py, line 88."),
    ("user", "Please never push to main directly; open a branch called fix/rounding."),
    ("assistant", "Understood."),
)
TRIP = _sources(
    ("user", "Hola, soy Joaquín Pérez. We fly to Kraków on 03/12/2026 and back on 10/12/2026."),
    ("assistant", "Lovely! Do you have the booking reference?"),
    (
        "user",
        "Yes, booking code qxhzpm, and the hotel confirmation is 4f9c2e1a-77b0-4c1e-9d2e-5a0b.",
    ),
    ("user", "My wife Ewa is vegetarian and we prefer a quiet room away from the lift."),
    ("assistant", "Noted. The hotel is at ul. Floriańska 14, 31-019 Kraków."),
    ("user", "Budget is 4 500 zł for the whole stay."),
)
TUTORING = _sources(
    ("user", "Can you help me with derivatives? My exam is next Tuesday."),
    ("assistant", "Sure. The derivative of x^2 is 2x, and the chain rule says (f∘g)' = f'(g)·g'."),
    ("user", "I always mix up d/dx sin(x) and d/dx cos(x)."),
    ("assistant", "d/dx sin(x) = cos(x), and d/dx cos(x) = -sin(x)."),
)


def test_it_is_deterministic_and_counts_what_it_read_and_wrote() -> None:
    backend = EmbeddedBackend()
    first = backend.summarize(previous_memo=None, messages=TRIP, max_tokens=512)
    second = backend.summarize(previous_memo=None, messages=TRIP, max_tokens=512)

    assert first == second
    assert first.backend == "embedded"
    assert first.prompt_version == PROMPT_VERSION
    assert first.prompt_tokens == sum(count_tokens(m.content) for m in TRIP)
    assert first.completion_tokens == count_tokens(first.text)


@pytest.mark.parametrize(
    "anchor",
    [
        "qxhzpm",
        "4f9c2e1a-77b0-4c1e-9d2e-5a0b",
        "Joaquín",
        "Kraków",
        "03/12/2026",
        "10/12/2026",
        "Ewa",
        "Floriańska 14",
        "31-019",
        "4 500 zł",
    ],
)
def test_trip_planning_values_are_kept_in_any_case_and_script(anchor: str) -> None:
    assert anchor in _memo(TRIP)


def test_a_preference_without_a_value_is_kept() -> None:
    assert "we prefer a quiet room away from the lift" in _memo(TRIP)


@pytest.mark.parametrize(
    "said",
    [
        "For the garden project, my preference is hand tools over power tools.",
        "Noting this: the testing preference is no mocks in integration tests.",
    ],
)
def test_a_preference_named_as_one_is_kept(said: str) -> None:
    assert said.rpartition(": ")[2] in _memo(_sources(("user", said)))


@pytest.mark.parametrize(
    "anchor",
    [
        "~/src/billing-svc",
        "pytest tests/test_invoice.py -x",
        "AssertionError: expected 10.01 got 10.0",
        "round_half_even()",
        "billing/money.py",
        "fix/rounding",
        "never push to main directly",
    ],
)
def test_a_coding_agent_keeps_paths_commands_errors_and_instructions(anchor: str) -> None:
    assert anchor in _memo(CODING_AGENT)


def test_tutoring_keeps_the_formulas_and_the_date() -> None:
    memo = _memo(TUTORING)

    assert "next Tuesday" in memo
    assert "d/dx cos(x) = -sin(x)" in memo


def test_small_talk_without_values_is_not_kept() -> None:
    memo = _memo(_sources(("user", "the weather is lovely here"), ("assistant", "glad to hear")))

    assert memo == ""


def test_a_chained_memo_carries_earlier_lines_through_segments_that_never_mention_them() -> None:
    memo = _memo(TRIP)
    for turn in range(5):
        memo = _memo(_sources(("user", f"thanks, see you {turn}")), previous=memo)

    assert "qxhzpm" in memo
    assert "Joaquín" in memo


def test_a_correction_replaces_the_stale_value() -> None:
    memo = _memo(
        _sources(
            ("user", "Please deliver to 12 Oak Street, Leeds LS1 4AB."),
            ("user", "Order 88-1234-xz was placed on 02/03/2026."),
        )
    )
    memo = _memo(
        _sources(
            ("user", "Actually, I moved: the delivery address is now 7 Elm Road, York YO1 7HH.")
        ),
        previous=memo,
    )

    assert "7 Elm Road" in memo
    assert "12 Oak Street" not in memo
    assert "88-1234-xz" in memo


def test_a_line_cut_by_a_correction_is_known_by_the_values_it_kept() -> None:
    """A cut line is a new line: what later folds match it by (its keys) is what it still says,
    not the values cut out of it."""
    memo = Memo([])
    for statement in cued_statements(
        "user", "My flight is BA2490 on 14/05/2026 from gate B12 at Heathrow T5."
    ):
        memo.fold(statement)
    for statement in cued_statements(
        "user", "Sorry, I gave you the wrong one earlier. My flight is actually BA2492."
    ):
        memo.supersede(statement)

    (line,) = memo.lines
    assert line.anchors == ("14/05/2026", "Heathrow")
    assert line.keys == {"14/05/2026", "heathrow"}
    assert "BA2490" not in line.text


def test_a_correction_in_a_new_frame_replaces_the_value_given_after_the_same_label() -> None:
    memo = _memo(
        _sources(
            ("user", "The lumber supplier's invoice for the garden shed build is LMB-20931."),
            ("user", "The concrete supplier's invoice for the garden shed build is CNC-77310."),
        )
    )
    memo = _memo(
        _sources(
            (
                "user",
                "Update: the lumber supplier's invoice for the garden shed build has changed "
                "to LMB-20977.",
            )
        ),
        previous=memo,
    )

    assert "LMB-20977" in memo
    assert "LMB-20931" not in memo
    assert "CNC-77310" in memo


def test_a_label_shared_from_before_its_determiner_is_the_same_label() -> None:
    memo = _corrected(
        [
            ("user", "OK so the payment due date for the allotment plot renewal is 2027-03-01"),
            ("user", "Right, so the payment due date for the bike locker renewal is 2027-05-01"),
        ],
        "The committee met, so the payment due date for the allotment plot renewal is "
        "15/04/2027 now.",
    )

    assert "15/04/2027" in memo
    assert "2027-03-01" not in memo  # another notation: only the label tells
    assert "2027-05-01" in memo  # another thing of the same kind: "… for the bike locker …"


def test_a_correction_announced_in_the_sentence_before_is_read_as_one() -> None:
    memo = _memo(_sources(("user", "The gate code for the allotment is 4417#.")))
    memo = _memo(
        _sources(("user", "Oops, that was wrong. The entry code for the allotment is 9902#.")),
        previous=memo,
    )

    assert "9902#" in memo
    assert "4417#" not in memo


@pytest.mark.parametrize(
    ("earlier", "later", "kept"),
    [
        (
            "The invoice for the garden shed is LMB-20931.",
            "The shed arrived with the wrong roof panels. "
            "The invoice for the replacement panels is LMB-20977.",
            "LMB-20931",
        ),
        (
            "The gym locker code is 4417#.",
            "They sent me the wrong size. The locker code for the returns desk is 9902#.",
            "4417#",
        ),
        (
            "The gate code for the allotment is 4417#.",
            "There are a few ways to do this and none of them is wrong. "
            "The entry code for the allotment is 9902#.",
            "4417#",
        ),
    ],
    ids=["arrived wrong", "sent the wrong", "none is wrong"],
)
def test_a_wrong_that_takes_nothing_back_announces_no_correction(earlier, later, kept) -> None:
    """A complaint about what was delivered, or a reassurance, is not "I gave you the wrong
    one": the statement after it is a value of its own, not the correction of a line."""
    memo = _corrected([("user", earlier)], later)

    assert kept in memo


def test_a_value_of_another_matter_in_the_same_shape_is_not_taken_for_a_correction() -> None:
    memo = _memo(
        _sources(
            ("user", "The reference for the boiler repair is qx-5521."),
            ("user", "The reference for the roof inspection is qx-8830."),
        )
    )

    assert "qx-5521" in memo
    assert "qx-8830" in memo


def _corrected(first: list[tuple[str, str]], correction: str) -> str:
    """The memo of ``first``, then of ``correction`` folded into it."""
    return _memo(_sources(("user", correction)), previous=_memo(_sources(*first)))


def test_a_key_of_a_tool_output_is_corrected_by_its_words_written_apart() -> None:
    memo = _corrected(
        [("tool", '{"locker_pin": "QX 5521", "status": "active"}')],
        "Sorry, I gave you the wrong one earlier. The locker pin for the gym is ZR 7710.",
    )

    assert "ZR 7710" in memo
    assert "QX 5521" not in memo


def test_a_correction_naming_the_slot_replaces_a_value_written_in_words() -> None:
    """The stale line names its matter by a value after the slot ("… for order QX-1182"), and
    the correction's only new word of the date is its day: the slot is read before the
    matter, and the day tells as the date it is written in."""
    memo = _corrected(
        [
            ("user", "The delivery date for order QX-1182 is 12 March 2027."),
            ("user", "The invoice date for order QX-1182 is 3 April 2027."),
        ],
        "Correction: the delivery date is actually 20 March 2027.",
    )

    assert "20 March 2027" in memo
    assert "12 March" not in memo
    assert "3 April 2027" in memo  # another slot of the same matter and shape
    assert "QX-1182" in memo
    assert "… …" not in memo  # the date's words go as one


@pytest.mark.parametrize(
    ("first", "correction", "stale", "kept"),
    [
        pytest.param(
            ["My phone number is +44 7700 900123.", "My partner's number is +44 7700 900999."],
            "Sorry, my number is actually +44 7700 900456.",
            "900123",
            ["900999"],
            id="a-shorter-name-of-the-slot-not-someone-else-s",
        ),
        pytest.param(
            ["The API endpoint is https://api.example.com/v1/orders."],
            "Correction: the endpoint is https://api.example.com/v2/orders.",
            "v1/orders",
            [],
            id="a-shorter-name-of-the-slot",
        ),
        pytest.param(
            ["The hotel booking reference is XK92LM.", "The car rental reference is CR5521."],
            "They rebooked us; the new hotel reference is PQ77RT.",
            "XK92LM",
            ["CR5521"],
            id="new-says-nothing-of-the-slot",
        ),
        pytest.param(
            ["The config file is at /etc/app/config.yaml.", "Logs go to /var/log/app.log."],
            "Actually the config file lives in /opt/app/conf/app.yaml.",
            "/etc/app/config.yaml",
            ["/var/log/app.log"],
            id="a-path-of-other-depth-is-of-the-same-kind",
        ),
        pytest.param(
            ["My email is jane.doe@gmail.com."],
            "Please use jane@doe.dev from now on instead of my gmail.",
            "jane.doe@gmail.com",
            [],
            id="an-address-of-other-dots-is-of-the-same-kind",
        ),
        pytest.param(
            ["The deadline for the quarterly report is March 3.", "The audit is on March 20."],
            "Correction: the report deadline is March 10.",
            "March 3",
            ["March 20"],
            id="the-slot-named-before-its-matter",
        ),
        pytest.param(
            ["The quote said 3 weeks for delivery and EUR 4.200 in total."],
            "They revised the quote: EUR 3.900 in total, same 3 weeks.",
            "4.200",
            [],
            id="revised",
        ),
        pytest.param(
            ["Order #55102 was for a blue kettle.", "Order #55103 was for a toaster."],
            "Sorry, the kettle order is #55120, not #55102.",
            "#55102 was",
            ["#55103"],
            id="named-as-not-it",
        ),
    ],
)
def test_natural_corrections_replace_the_stale_value(first, correction, stale, kept) -> None:
    memo = _corrected([("user", text) for text in first], correction)

    assert stale not in memo
    for value in kept:
        assert value in memo


def test_a_correction_of_one_matter_leaves_the_same_slot_of_another() -> None:
    memo = _corrected(
        [
            ("user", "The agent handling it for the monitor return is Søren Kjærgaard."),
            ("user", "The agent handling it for the headphones return is Fatima Zahra."),
        ],
        "Update: the agent handling it for the router return has changed to José Núñez.",
    )

    assert "Søren Kjærgaard" in memo
    assert "Fatima Zahra" in memo


def test_a_value_said_as_the_wrong_one_goes_but_not_the_words_it_shares() -> None:
    """ "not" names the wrong value; the currency both amounts are in is not denied."""
    memo = _corrected(
        [
            ("user", "The refund for order QX-1182 is CHF 35.00."),
            ("user", "Shipping to Basel costs CHF 9.90."),
        ],
        "Sorry, the refund for order QX-1182 is CHF 53.00, not CHF 35.00.",
    )

    assert "CHF 9.90" in memo
    assert "is CHF 35.00." not in memo


def test_words_opening_the_value_are_not_part_of_its_label() -> None:
    memo = _corrected(
        [("user", "The script we run for the backup cron is bash scripts/backup_full.sh.")],
        "Correction: the script we run for the backup cron is actually node tools/backup.js.",
    )

    assert "tools/backup.js" in memo
    assert "scripts/backup_full.sh" not in memo


def test_a_correction_worded_apart_replaces_the_only_value_of_its_shape() -> None:
    memo = _corrected(
        [("user", "My landlord's email is petra.voss@example.org, for the deposit.")],
        "Correction: the owner's address is actually anja.klein@example.net.",
    )

    assert "anja.klein@example.net" in memo
    assert "petra.voss@example.org" not in memo


def test_a_correction_worded_apart_leaves_values_of_its_shape_when_several_could_be_meant() -> None:
    memo = _corrected(
        [
            ("user", "My landlord's email is petra.voss@example.org, for the deposit."),
            ("user", "The plumber writes from rolf.haas@example.com about the boiler."),
        ],
        "Correction: the owner's address is actually anja.klein@example.net.",
    )

    assert "anja.klein@example.net" in memo
    assert "petra.voss@example.org" in memo
    assert "rolf.haas@example.com" in memo


def test_a_new_value_for_another_thing_of_the_same_kind_corrects_nothing() -> None:
    memo = _corrected(
        [("user", "The deadline for the physics essay is 14/05/2027.")],
        "Update: the deadline for the history essay is now 09/06/2027.",
    )

    assert "14/05/2027" in memo
    assert "09/06/2027" in memo


def test_a_value_for_another_slot_of_the_same_matter_corrects_nothing() -> None:
    memo = _corrected(
        [("user", "The booking code for the ferry to Split is KLMPQ.")],
        "Sorry, I gave you the wrong one earlier. The sailing number for the ferry to Split "
        "is FX 210.",
    )

    assert "KLMPQ" in memo
    assert "FX 210" in memo


def test_a_correction_after_the_same_slot_replaces_a_value_of_another_notation() -> None:
    memo = _corrected(
        [("user", "OK so my phone number is +44 20 7946 0018.")],
        "Correction: my phone number is actually (415) 555-0199.",
    )

    assert "(415) 555-0199" in memo
    assert "7946" not in memo


def test_a_wish_restated_after_a_repeated_lead_in_is_kept() -> None:
    lead_in = "One thing that matters to me:"
    memo = _memo(
        _sources(
            ("user", f"{lead_in} I'd rather get text messages than calls."),
            ("user", f"{lead_in} please always copy my sister on the quotes."),
            ("user", f"{lead_in} we will only pay by bank transfer."),
            ("user", f"{lead_in} I'd rather get text messages than calls."),
        )
    )

    assert "text messages than calls" in memo
    assert "copy my sister on the quotes" in memo
    assert "only pay by bank transfer" in memo


def test_a_value_said_once_in_a_recurring_frame_is_not_small_talk() -> None:
    frame = ", if that suits everyone involved here."
    memo = _memo(
        _sources(
            ("user", f"The plumber comes on Thursday{frame}"),
            ("user", f"The painter starts in three weeks{frame}"),
            ("user", f"The electrician visits next Monday{frame}"),
        )
    )

    assert "Thursday" in memo
    assert "three weeks" in memo
    assert "Monday" in memo


def test_reading_ahead_lets_go_of_what_a_later_message_corrects_without_adding_it() -> None:
    memo = _memo(
        _sources(
            ("user", "The locker number for the gym membership is L-0412."),
            ("user", "My swimming coach is Ingrid Solberg."),
        )
    )
    later = _sources(("user", "Correction: the locker number for the gym membership is L-0977."))

    ahead = EmbeddedBackend().drop_superseded(memo=memo, later=later)

    assert "L-0412" not in ahead
    assert "L-0977" not in ahead  # the memo covering that message folds it in
    assert "Ingrid Solberg" in ahead
    assert EmbeddedBackend().drop_superseded(memo=memo, later=_sources(("user", "Thanks!"))) == (
        memo
    )


def test_the_lines_a_later_message_corrects_are_named_by_their_index() -> None:
    memo = _memo(
        _sources(
            ("user", "The locker number for the gym membership is L-0412."),
            ("user", "My swimming coach is Ingrid Solberg."),
        )
    )
    lines = memo.split("\n")
    later = _sources(("user", "Correction: the locker number for the gym membership is L-0977."))

    named = lines_superseded(memo=memo, later=later)

    assert [lines[index] for index in named] == [next(x for x in lines if "L-0412" in x)]
    assert lines_superseded(memo=memo, later=_sources(("user", "Thanks!"))) == ()
    assert lines_superseded(memo="A memo in prose: locker L-0412.", later=later) == ()


def test_a_line_said_twice_in_a_memo_is_named_twice_when_corrected() -> None:
    """A memo of another writer may repeat a line; the stale value goes from both."""
    stale = "- The gate code for the allotment is 4417#."
    memo = "\n".join([HEADER, stale, "- My swimming coach is Ingrid Solberg.", stale])
    later = _sources(("user", "Sorry, wrong one: the gate code for the allotment is 9902#."))

    assert lines_superseded(memo=memo, later=later) == (1, 3)


def test_a_full_memo_tightens_its_lines_before_letting_any_go() -> None:
    facts = [
        (
            "user",
            f"As agreed with the architect, the signed quote from the tiling firm in town "
            f"number {n} is Q-{n}{n}81.",
        )
        for n in range(1, 9)
    ]
    roomy = _memo(_sources(*facts), max_tokens=1024)
    full_size = count_tokens(roomy)
    tight = _memo(_sources(*facts), max_tokens=full_size - 50)

    assert count_tokens(tight) <= full_size - 50
    assert all(f"Q-{n}{n}81" in tight for n in range(1, 9))


def test_a_closed_matter_is_let_go_and_an_open_one_stays() -> None:
    memo = _memo(
        _sources(
            ("user", "Ticket inc-4471 is about the printer on floor 3."),
            ("user", "Ticket inc-5002 is about my VPN token ab12-cd34."),
            ("assistant", "Ticket inc-4471 is resolved, closing it."),
        )
    )

    assert "inc-4471" not in memo
    assert "inc-5002" in memo
    assert "ab12-cd34" in memo


def test_a_question_about_closing_does_not_close() -> None:
    memo = _memo(
        _sources(
            ("user", "Ticket inc-4471 is about the printer on floor 3."),
            ("user", "Is inc-4471 resolved?"),
            ("assistant", "inc-4471 is not resolved yet."),
        )
    )

    assert "inc-4471" in memo


def test_a_restatement_is_kept_once() -> None:
    memo = _memo(
        _sources(
            ("user", "My member number is zz-90210."),
            ("assistant", "Thanks, member number zz-90210."),
            ("user", "zz-90210, yes."),
        )
    )

    assert memo.count("zz-90210") == 1


def test_under_pressure_the_newest_lines_stay() -> None:
    turns = [("user", f"Parcel number {1000 + n}-q is for room {n}.") for n in range(60)]

    memo = _memo(_sources(*turns), max_tokens=120)

    assert count_tokens(memo) <= 120
    assert "1059-q" in memo
    assert "1000-q" not in memo


def test_under_pressure_a_value_of_its_own_outlasts_newer_lines_that_only_name_the_topic() -> None:
    turns = [
        ("user", "The courier's gate code for the depot is 58#21."),
        ("user", "Let's pause on the pr-42 rollout for a moment."),
        ("user", "Pick up pr-42 again once the tests are green."),
        ("user", "I want a gut check on pr-42 before I report upward."),
        ("user", "Have another look at pr-42 and tell me what you think."),
        ("user", "Are we overcomplicating pr-42, honestly?"),
        ("user", "Keep going with pr-42 in the same order as before."),
    ]
    roomy = _memo(_sources(*turns), max_tokens=1024)
    assert "58#21" in roomy
    assert roomy.count("pr-42") == 6

    memo = _memo(_sources(*turns), max_tokens=count_tokens(roomy) - 25)

    # The oldest line goes last here: its value is said nowhere else, while each newer line
    # only names what the others name too.
    assert "58#21" in memo
    assert "pr-42" in memo
    assert memo.count("pr-42") < 6


def test_a_previous_memo_in_prose_is_read_like_messages() -> None:
    memo = _memo(_sources(("user", "ok")), previous="The customer, Dana Whitfield, paid ¥12,400.")

    assert "Dana Whitfield" in memo
    assert "¥12,400" in memo


def test_a_budget_too_small_for_anything_gives_an_empty_memo() -> None:
    assert _memo(TRIP, max_tokens=3) == ""


def test_anchors_are_told_by_shape_not_by_vocabulary() -> None:
    found = anchors(
        "Send it to ana@x.io, see https://x.io/a?b=1 or run `make test` for SEK 1.200,50."
    )

    assert "ana@x.io" in found
    assert "https://x.io/a?b=1" in found
    assert "make test" in found
    assert "SEK" in found
    assert "1.200,50" in found
    assert anchors("then we talked about the weather and went home") == []


_WORDS = st.sampled_from(
    [
        "hello",
        "Joaquín Pérez",
        "order",
        "ab-12345",
        "resolved",
        "actually",
        "new",
        "#4821",
        "$40",
        "615,09 €",
        "03/12/2026",
        "qxhzpm",
        "~/a/b.py",
        "dana@example.com",
        "prefer",
        "not",
        "?",
        ".",
        "\n",
        "- tool:",
        HEADER,
    ]
)
_CONTENT = st.lists(_WORDS, max_size=60).map(" ".join)
_MESSAGES = st.lists(
    st.builds(
        MemoSource,
        id=st.just("msg_x"),
        role=st.sampled_from(["user", "assistant", "tool"]),
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
def test_its_own_memo_reads_back_into_the_same_memo(messages: list[MemoSource]) -> None:
    memo = _memo(messages, max_tokens=5000)

    assert _memo([], previous=memo, max_tokens=5000) == memo


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


def test_template_lines_of_a_tool_output_are_let_go_and_its_odd_line_kept() -> None:
    log = "\n".join(
        [f"tests/test_io.py::test_case_{n} PASSED [ {n}%]" for n in range(1, 12)]
        + ["commit 75cefba", "Author: build-bot"]
    )

    memo = _memo(_sources(("user", "run the suite"), ("tool", log)))

    assert "75cefba" in memo
    assert "test_case_" not in memo


def test_small_talk_said_over_and_over_is_not_kept() -> None:
    chat = "Honestly the weather here has been awful, I'd rather stay in. Please go on."
    memo = _memo(_sources(*[("user", chat)] * 3, ("user", "We'll switch to plan B.")))

    assert "weather" not in memo
    assert "We'll switch to plan B." in memo


def test_log_lines_of_one_template_are_let_go_whatever_words_and_ids_fill_them() -> None:
    # Each line has other words and another random id, so no two share a skeleton; their form
    # (words reduced to shapes, hex runs to a digit) is one, and the odd line is kept.
    verbs = ["started", "stopped", "queued", "flushed", "synced", "polled"]
    nouns = ["mailer", "indexer", "uploader", "thumbnailer", "ranker", "crawler"]
    ids = ["9f3a07bc", "e41d22a0", "07c3b9fe", "b8810e5d", "3d7f0a91", "c92e4b17"]
    lines = [
        f"2025-03-0{n + 1} 11:0{n}:17.204 INFO [pool] {verb} {noun} job={job} in {40 + n}ms"
        for n, (verb, noun, job) in enumerate(zip(verbs, nouns, ids, strict=True))
    ]
    lines.insert(3, "2025-03-04 11:03:18.001 WARN [pool] disk quota on /var/spool -> 91% used")

    memo = _memo(_sources(("user", "tail the worker log"), ("tool", "\n".join(lines))))

    assert "/var/spool -> 91% used" in memo
    for job in ids:
        assert job not in memo


def test_the_lines_of_a_tool_output_the_conversation_names_are_what_it_keeps() -> None:
    output = "\n".join(
        [
            "cache_backend: memcached",
            "session_ttl_secs: 86400",
            "worker_pool_size: 12",
            "upload_bucket_name: scans-raw-eu2",
            "request_id: 5b1e77d0c2",
        ]
    )
    messages = _sources(
        ("user", "What does the deployed config say?"),
        ("tool", output),
        ("assistant", "The upload bucket name is the one to watch; the rest looks standard."),
    )

    memo = _memo(messages)

    assert "scans-raw-eu2" in memo
    assert "86400" not in memo
    assert "5b1e77d0c2" not in memo


def test_a_tool_output_the_conversation_does_not_name_keeps_its_valued_lines() -> None:
    output = '{\n  "status": "ok",\n  "tracking_no": "1Z-88X-4410"\n}'
    messages = _sources(
        ("user", "Where is my parcel?"),
        ("tool", output),
        ("assistant", "Let me know if you need anything else about the delivery."),
    )

    assert "1Z-88X-4410" in _memo(messages)


def test_a_failure_line_is_kept_beside_the_lines_the_conversation_names() -> None:
    output = "\n".join(
        [
            "collected 212 items",
            "FAILED tests/test_export.py::test_csv_quoting - ValueError: bad delimiter ';'",
            "coverage_report_path: build/cov/index.html",
            "elapsed_wall_clock: 73.2s",
        ]
    )
    messages = _sources(
        ("tool", output),
        ("assistant", "I'll open the coverage report path next."),
    )

    memo = _memo(messages)

    assert "test_csv_quoting" in memo
    assert "build/cov/index.html" in memo
    assert "73.2s" not in memo


def test_an_output_no_one_names_keeps_only_its_most_telling_line() -> None:
    output = "\n".join(
        [
            "elapsed 412 ms",
            "refund_reference: RF-2291-QZ/77",
            "retries 3",
        ]
    )
    messages = _sources(
        ("user", "Check the refund."),
        ("tool", output),
        ("assistant", "Done, I looked it up."),
    )

    memo = _memo(messages)

    assert "RF-2291-QZ/77" in memo
    assert "412 ms" not in memo


def test_an_agent_message_keeps_each_of_its_calls() -> None:
    calls = (
        'Checking both. [called read_file with {"path": "deploy/helm/values-prod.yaml"}]\n'
        '[called run_shell with {"command": "git log -3 --format=%h -- infra/terraform"}]'
    )

    memo = _memo(_sources(("user", "look at the prod values"), ("assistant", calls)))

    assert "deploy/helm/values-prod.yaml" in memo
    assert "infra/terraform" in memo


def test_a_correction_naming_the_key_of_a_tool_output_replaces_its_value_in_any_notation() -> None:
    memo = _corrected(
        [("tool", "| delivery_slot | 14 March 2027 | confirmed |")],
        "Ignore what we had as the delivery slot for the sofa; use 2027-03-21 instead.",
    )

    assert "2027-03-21" in memo
    assert "14 March 2027" not in memo


def test_a_correction_naming_the_slot_said_after_the_old_value_replaces_it() -> None:
    memo = _corrected(
        [("assistant", "I'd propose blue-green-v2 for the rollout strategy of the API.")],
        "New info on the API. Replace the rollout strategy with canary_10pct.",
    )

    assert "canary_10pct" in memo
    assert "blue-green-v2" not in memo


def test_the_matter_a_correction_is_about_is_not_taken_for_its_slot() -> None:
    memo = _corrected(
        [("user", "The RMA number for the tumble dryer return is RX-4410.")],
        "Update: the courier for the tumble dryer return has changed to DHL-Express-77.",
    )

    assert "DHL-Express-77" in memo
    assert "RX-4410" in memo


def test_the_last_word_of_a_longer_name_is_not_the_slot_corrected() -> None:
    memo = _corrected(
        [("user", "My phone number is +1 415 555 0199, text before calling.")],
        "Update: the ticket number for the laptop repair is now TK-88120.",
    )

    assert "TK-88120" in memo
    assert "555 0199" in memo


def test_a_slot_named_in_two_outputs_with_other_values_corrects_neither() -> None:
    memo = _corrected(
        [
            ("tool", "venue_contact: +44 20 7946 0018 (wedding barn)"),
            ("user", "Thanks, that one is for the wedding."),
            ("tool", "booking 7 of 9, venue_contact: +44 161 496 0752"),
        ],
        "Ignore what we had as the venue contact for the rehearsal dinner; use "
        "events@old-mill.example instead.",
    )

    assert "events@old-mill.example" in memo
    assert "7946 0018" in memo
    assert "496 0752" in memo


def test_a_tool_output_naming_a_slot_corrects_nothing() -> None:
    memo = _corrected(
        [("user", "The maintenance window for the cluster upgrade is 2027-05-02.")],
        "",
    )
    memo = _memo(
        _sources(("tool", "maintenance window updated: 2027-06-30 (region eu-north-1)")),
        previous=memo,
    )

    assert "2027-05-02" in memo


def test_an_announcement_holding_a_name_carries_to_the_value_after_it() -> None:
    memo = _corrected(
        [("user", "The locker code at the Oslo gym is 5520-AB.")],
        "I was wrong about the locker code at the Oslo gym. It is 7731-CD.",
    )

    assert "7731-CD" in memo
    assert "5520-AB" not in memo


def test_reading_ahead_lets_go_of_a_value_whose_slot_a_later_message_corrects() -> None:
    memo = _memo(_sources(("tool", '{"build_command": "make dist-all", "status": "ok"}')))

    ahead = EmbeddedBackend().drop_superseded(
        memo=memo,
        later=_sources(
            ("user", "Change of plan: the build command we use is now npm run build:prod.")
        ),
    )

    assert "make dist-all" in memo
    assert "make dist-all" not in ahead


def test_a_tool_line_whose_value_is_corrected_goes_whole() -> None:
    memo = _corrected(
        [("tool", "2031-04-02 09:14:55.120 ERROR [billing] refund reference -> RF-88231")],
        "Correction: the refund reference is RF-90417, not the one in that log.",
    )

    assert "RF-90417" in memo
    assert "RF-88231" not in memo
    assert "09:14:55" not in memo  # no husk: the record's time stamp and label, its value cut


def test_a_users_line_keeps_its_other_value_when_one_is_corrected() -> None:
    memo = _corrected(
        [("user", "My locker code is 4471 and my member number is MB-20931.")],
        "Correction: my locker code is 5580 now.",
    )

    assert "5580" in memo
    assert "MB-20931" in memo


@pytest.mark.parametrize(
    "correction",
    [
        "Forget the old meeting room for the retro. Going forward it's Room B-214.",
        "Disregard the meeting room I gave you for the retro, it is Room B-214.",
        "The retro has been reassigned: the meeting room is Room B-214.",
    ],
)
def test_a_correction_in_other_words_replaces_the_value(correction: str) -> None:
    memo = _corrected([("user", "The meeting room for the retro is Room A-101.")], correction)

    assert "B-214" in memo
    assert "A-101" not in memo


def test_a_logs_records_are_kept_without_their_time_stamps() -> None:
    log = "\n".join(
        [
            "2031-02-03T10:00:01.100Z INFO [api] started the worker pool",
            "2031-02-03T10:00:02.250Z ERROR [api] gateway rejected card token tok_9QmZ41",
            "2031-02-03T10:00:03.900Z INFO [api] request finished",
        ]
    )

    memo = _memo(_sources(("tool", log)))

    assert "ERROR [api] gateway rejected card token tok_9QmZ41" in memo
    assert "10:00:02" not in memo


def test_a_time_stamp_in_a_tool_output_that_is_no_log_stays() -> None:
    output = "Deploy window confirmed: 2031-02-03 22:00 UTC for release R-2207."

    memo = _memo(_sources(("tool", output)))

    assert "2031-02-03 22:00" in memo


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("Please deliver it to No. 14, Harbour Row, Leith EH6 7AB.", "No. 14, Harbour Row"),
        ("The chapter to read is pp. 112–140 of the second volume.", "pp. 112–140"),  # noqa: RUF001
        ("Meine Verteidigung ist am 7. März 2027, bitte notieren.", "7. März 2027"),
        ("Name it after the release, e.g. rel-7, so we find it again.", "e.g. rel-7"),
        ("Invoices go to Lindenweg 4, 2. OG, 80331 München.", "Lindenweg 4, 2. OG, 80331"),
    ],
    ids=["No.", "pp.", "day and month", "e.g.", "floor"],
)
def test_a_dot_that_belongs_to_a_value_ends_no_sentence(said, value) -> None:
    """A sentence read in two at the dot of "No." or "24." keeps the value in pieces: the
    line kept says "14, Harbour Row" or "März 2027", and the label goes with the first half."""
    assert len(cued_statements("user", said)) == 1
    assert value in _memo(_sources(("user", said)))


def test_sentences_still_end_after_a_short_word_or_a_number() -> None:
    assert (
        len(cued_statements("user", "The locker is 12. Call me at 5. I left it on. Thanks.")) == 4
    )


def _said_after_memo(lines: list[str], said: str) -> str:
    """The memo of the user saying ``said`` after a memo of ``lines`` (the user's, as kept)."""
    previous = "\n".join([HEADER, *(f"- {line}" for line in lines)])
    return _memo(_sources(("user", said)), previous=previous)


def test_an_announced_correction_finds_its_line_by_the_matter_it_names() -> None:
    """The line kept of the first value names only its matter ("kiln repair"); the correction
    names the matter in its announcement and gives the value alone after it. Another line holds
    a value of that shape, so the shape alone does not tell which line is meant."""
    memo = _said_after_memo(
        ["kiln repair booked under kr-55821.", "roof survey booked under kr-10442."],
        "Turns out I was wrong about the reference on the kiln repair. It's actually kr-60934.",
    )

    assert "kr-60934" in memo
    assert "kr-55821" not in memo
    assert "kr-10442" in memo


def test_one_word_of_an_announcement_names_no_line() -> None:
    memo = _said_after_memo(
        ["home address for deliveries: 10.4.1.7:9000"],
        "Forget the old endpoint address for the failover drill. Going forward it's 10.9.2.8:6379.",
    )

    assert "10.4.1.7:9000" in memo
    assert "10.9.2.8:6379" in memo


def _depot_lookups(*after: tuple[str, str]) -> list[MemoSource]:
    """Two replies of one tool, each with the same fields (a template), then ``after``."""
    return _sources(
        ("assistant", '[called depot_lookup with {"depot": "Uppsala"}]'),
        ("tool", '{\n  "ticket": "HD-1044",\n  "standby_phone": "+46 8 555 0101",\n}'),
        ("assistant", '[called depot_lookup with {"depot": "Malmö"}]'),
        ("tool", '{\n  "ticket": "HD-1087",\n  "standby_phone": "+46 8 555 0199",\n}'),
        *after,
    )


def test_a_field_every_reply_has_is_kept_when_the_answer_after_it_names_it() -> None:
    memo = _memo(
        _depot_lookups(("assistant", "Found it: the standby phone for Malmö is in that record."))
    )

    assert "+46 8 555 0199" in memo


def test_a_field_every_reply_has_is_not_kept_when_only_a_later_turn_names_it() -> None:
    """Later words may be about another reply's field of the same name."""
    memo = _memo(
        _depot_lookups(
            ("assistant", "Both records look routine."),
            ("user", "Thanks. What is the standby phone for the Lund depot?"),
        )
    )

    assert "+46 8 555 0199" not in memo


def test_a_label_in_title_case_names_its_matter_for_a_correction() -> None:
    """A tool's output writes its label in title case ("Endpoint Address:"), which reads as
    specific words, not as the words of a matter; the user's correction names the slot in
    lower case. Another output gives the same slot of another matter, so the slot's name alone
    does not tell which line is meant: the value's shape does, once the words are shared."""
    memo = _said_after_memo(
        [
            "tool: Endpoint Address: 10.177.130.206:6379",
            'tool: "endpoint_address": "search-primary-19.use2.internal",',
        ],
        "Forget the old endpoint address for the DNS failover drill. "
        "Going forward it's 10.168.220.159:6379.",
    )

    assert "10.168.220.159:6379" in memo
    assert "10.177.130.206:6379" not in memo
    assert "search-primary-19.use2.internal" in memo


def test_a_message_read_ahead_is_folded_in_without_its_corrections() -> None:
    """The previous memo was written reading this correction ahead: the stale line is gone
    already. Folding the correction in again would take the other line of the slot."""
    previous = "\n".join([HEADER, "- The endpoint address for the restore test is 10.40.1.7:9092."])
    correction = _sources(
        ("user", "Sorry, the endpoint address for the drill is actually 10.168.220.159:6379.")
    )

    again = _memo(correction, previous=previous)
    once = (
        EmbeddedBackend()
        .summarize(
            previous_memo=previous,
            messages=correction,
            max_tokens=512,
            read_ahead=frozenset({correction[0].id}),
        )
        .text
    )

    assert "10.40.1.7:9092" not in again  # what a second application does
    assert "10.40.1.7:9092" in once
    assert "10.168.220.159:6379" in once


def test_a_message_read_ahead_still_corrects_what_this_memo_adds() -> None:
    """The previous memo read both turns ahead, but the first was not in it to correct: the
    stale address enters with this memo, and the correction read ahead lets it go here."""
    previous = "\n".join([HEADER, "- The endpoint address for the restore test is 10.40.1.7:9092."])
    turns = _sources(
        ("user", "The endpoint address for the failover drill is 10.177.130.206:6379."),
        ("user", "Sorry, the endpoint address for the drill is actually 10.168.220.159:6379."),
    )

    memo = (
        EmbeddedBackend()
        .summarize(
            previous_memo=previous,
            messages=turns,
            max_tokens=512,
            read_ahead=frozenset(turn.id for turn in turns),
        )
        .text
    )

    assert "10.177.130.206:6379" not in memo
    assert "10.168.220.159:6379" in memo
    assert "10.40.1.7:9092" in memo


def test_words_that_say_a_value_is_new_name_no_slot() -> None:
    """ "Going forward it's" opens both lines; it names no slot, so the correction of a slot
    the memo does not hold takes no line."""
    memo = _said_after_memo(
        ["Going forward it's 10.8632/j.cell.2024.73.723."],
        "Forget the old person to cc on everything for all my projects. "
        "Going forward it's Łucja Wąsowska.",
    )

    assert "10.8632/j.cell.2024.73.723" in memo
    assert "Łucja Wąsowska" in memo
