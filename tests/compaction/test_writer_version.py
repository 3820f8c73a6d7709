"""The embedded writer's ``PROMPT_VERSION`` names what it writes.

Every memo stores the ``prompt_version`` of the writer that wrote it (the memo page, the memo API
and the export show it), so that staff comparing two memos of a thread can tell whether they
were written by the same rules. The embedded writer has no prompt: its rules are its code. A
change to them that changes what it writes must come with a new version, and a refactoring that
changes nothing must not. These tests hold the version to what the writer writes on a fixed set
of conversations (several kinds, a rolling memo, a correction, a memo over its size), and check
that what it writes does not depend on the process (string hashing is salted per process: a
writer that iterated a set of words in hash order would write two memos for one range on two
workers).
"""

import hashlib

from compaction.backends.base import MemoSource
from compaction.backends.embedded import PROMPT_VERSION, EmbeddedBackend
from tests.support.processes import child_prints

# What the writer of each version writes on ``_conversations()``: the sha256 of the memos,
# joined. When a change to the writer's rules fails ``test_the_version_names_what_the_writer_
# writes``, give the writer a new ``PROMPT_VERSION`` and add its digest here (keep the old
# ones: they name what memos already stored were written by). A conversation added to
# ``_conversations()`` changes every digest: each is then worked out again with its version's
# code (a checkout of the commit that last wrote it).
WRITTEN_BY = {
    "extractive-memo/2": "63f2bfc0478a9baf148be62acc9dfcc92f69d4be2d0d3fc05421211fe43e8366",
    "extractive-memo/3": "cca2e987fac4314a65c038fa100d6a468c8bb318046aff8ebf2e25773fab27f3",
    "extractive-memo/4": "8992323c116f855e4263ab930d9ea47797e9336973f73b7671170dfa8c6aec79",
    "extractive-memo/5": "f2605c253e311fa6e74053f840186c1bd79da037730e79d22a57627ea7ebdc2c",
}


def _sources(prefix: str, *turns: tuple[str, str]) -> list[MemoSource]:
    return [
        MemoSource(id=f"msg_{prefix}{index:03d}", role=role, content=content)
        for index, (role, content) in enumerate(turns)
    ]


def _conversations() -> list[tuple[list[MemoSource], list[MemoSource], int]]:
    """(first segment, the segment rolled onto its memo, memo size) for each conversation.
    Written out here, not shared with the writer's other tests: the digests pin these words."""
    coding = _sources(
        "c",
        ("user", "The test suite fails since this morning; the repo is at ~/src/billing-svc."),
        ("assistant", '[called shell with {"cmd": "pytest tests/test_invoice.py -x"}]'),
        (
            "tool",
            "[result of shell] FAILED tests/test_invoice.py::test_rounding - "
            "AssertionError: expected 10.01 got 10.0",
        ),
        ("assistant", "The failure is in round_half_even() in billing/money.py, line 88."),
        ("user", "Please never push to main directly; open a branch called fix/rounding."),
    )
    coding_later = _sources(
        "d",
        ("user", "Correction: the branch should be called hotfix/rounding-2, not fix/rounding."),
        ("assistant", '[called shell with {"cmd": "git switch -c hotfix/rounding-2"}]'),
        ("tool", "[result of shell] Switched to a new branch 'hotfix/rounding-2'"),
        ("user", "The reviewer is Ngozi Adeyemi; her handle is @ngozi-a."),
    )
    trip = _sources(
        "t",
        ("user", "Hola, soy Joaquín Pérez. We fly to Kraków on 03/12/2026, back on 10/12/2026."),
        ("user", "Booking code qxhzpm; the hotel confirmation is 4f9c2e1a-77b0-4c1e-9d2e-5a0b."),
        ("user", "My wife Ewa is vegetarian and we prefer a quiet room away from the lift."),
        ("assistant", "Noted. The hotel is at ul. Floriańska 14, 31-019 Kraków."),
        ("user", "Budget is 4 500 zł for the whole stay."),
    )
    trip_later = _sources(
        "u",
        ("user", "We moved the return flight: it is now on 12/12/2026, flight LO 3924."),
        ("assistant", "Updated. Anything else for the stay?"),
        ("user", "Never call me before 10 am, my number is +48 512 345 678."),
    )
    tutoring = _sources(
        "l",
        ("user", "I'm revising for the calculus exam on 14 January; chapter 7 is the weak spot."),
        ("assistant", "Let's start with integration by parts: ∫ x·eˣ dx = x·eˣ − eˣ + C."),  # noqa: RUF001
        ("user", "My teacher's e-mail is m.okafor@school.example if we need the syllabus."),
    )
    tutoring_later = _sources(
        "m",
        ("user", "The exam moved to 21 January, same room B-204."),
        ("user", "I prefer worked examples over definitions, please."),
    )
    order = _sources(
        "o",
        ("user", "The delivery date for order QX-1182 is 12 March 2027."),
        ("user", "The invoice date for order QX-1182 is 3 April 2027, EUR 1 240,50."),
        ("user", "My phone number is +44 7700 900123; my partner's is +44 7700 900999."),
    )
    order_later = _sources(
        "p",
        ("user", "Correction: the delivery date is actually 20 March 2027."),
        ("assistant", "Thanks, I have noted 20 March 2027 for QX-1182."),
        ("user", "Sorry, my number is actually +44 7700 900456, not +44 7700 900123."),
    )
    shop = _sources(
        "s",
        ("user", "The invoice for the garden shed is LMB-20931, paid on 2 March 2027."),
        ("user", "Our delivery preference is the side gate, with a call on arrival."),
        ("assistant", "Noted: side gate, a call on arrival, invoice LMB-20931."),
    )
    shop_later = _sources(
        "r",
        (
            "user",
            "The shed arrived with the wrong roof panels. "
            "The invoice for the replacement panels is LMB-20977.",
        ),
        ("assistant", "There are a few ways to fix it and none of them is wrong."),
    )
    workshop = _sources(
        "w",
        ("user", "Send the engineer to No. 9, Quayside Lane, Whitby YO21 3PJ, please."),
        ("user", "The kiln repair is booked under kr-55821."),
        ("user", "The roof survey is booked under kr-10442, on 4. Mai 2027."),
        ("user", "Invoices go to Lindenweg 4, 2. OG, 80331 München."),
        ("assistant", '[called depot_lookup with {"depot": "Uppsala"}]'),
        ("tool", '{\n  "ticket": "HD-1044",\n  "standby_phone": "+46 8 555 0101",\n}'),
        ("assistant", '[called depot_lookup with {"depot": "Malmö"}]'),
        ("tool", '{\n  "ticket": "HD-1087",\n  "standby_phone": "+46 8 555 0199",\n}'),
        ("assistant", "Found it: the standby phone for Malmö is in that record."),
    )
    workshop_later = _sources(
        "x",
        (
            "user",
            "Turns out I was wrong about the reference on the kiln repair. It's actually kr-60934.",
        ),
    )
    failover = _sources(
        "f",
        ("assistant", '[called service_lookup with {"service": "dns-failover"}]'),
        ("tool", "Endpoint Address: 10.177.130.206:6379"),
        ("assistant", '[called service_lookup with {"service": "backup-restore"}]'),
        ("tool", '{\n  "endpoint_address": "search-primary-19.use2.internal",\n}'),
        ("assistant", "Both endpoints are up."),
    )
    failover_later = _sources(
        "g",
        (
            "user",
            "Forget the old endpoint address for the DNS failover drill. "
            "Going forward it's 10.168.220.159:6379.",
        ),
    )
    return [
        (coding, coding_later, 512),
        (trip, trip_later, 512),
        (tutoring, tutoring_later, 40),
        (order, order_later, 512),
        (shop, shop_later, 512),
        (workshop, workshop_later, 512),
        (failover, failover_later, 512),
    ]


def written() -> str:
    """The memos the writer writes on ``_conversations()``, each segment rolled onto the memo of
    the one before it, joined."""
    writer = EmbeddedBackend()
    memos = []
    for first, later, size in _conversations():
        memo = writer.summarize(previous_memo=None, messages=first, max_tokens=size).text
        rolled = writer.summarize(previous_memo=memo, messages=later, max_tokens=size).text
        memos += [memo, rolled]
    return "\n\n".join(memos)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_version_names_what_the_writer_writes() -> None:
    assert PROMPT_VERSION in WRITTEN_BY, f"add {PROMPT_VERSION!r} to WRITTEN_BY"
    assert _digest(written()) == WRITTEN_BY[PROMPT_VERSION], (
        "the embedded writer writes other memos than its PROMPT_VERSION names: give it a new "
        "version and pin the new digest in WRITTEN_BY (see this module's docstring)"
    )


def test_each_version_names_one_set_of_memos() -> None:
    assert len(set(WRITTEN_BY.values())) == len(WRITTEN_BY)


def test_what_the_writer_writes_does_not_depend_on_the_process() -> None:
    """Two processes with other string-hash salts write the same memos as this one."""
    here = written()
    script = (
        "import django; django.setup(); import sys;"
        "from tests.compaction.test_writer_version import written; sys.stdout.write(written())"
    )
    for seed in ("1", "4242"):
        out = child_prints(script, PYTHONHASHSEED=seed)
        assert out == here.strip()
