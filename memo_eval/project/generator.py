"""Long customer-support conversations with the facts planted in them, generated from a seed.

One conversation is one customer talking to a support agent over months: an introduction,
a warranty claim that opens in the first turns and is still running at the end, and a dozen
more cases (orders that go missing, returns, faulty devices, wrong invoices, plan changes) that
open and close over time, between small talk and long policy answers. Turns average about
340 tokens. Every identifier, amount and date a case depends on is a *planted fact*; the
generator knows the turn that first states it, the case it belongs to, when a later fact
supersedes it (a new delivery date), and each case's status and open/closed state at every
turn. It also writes *probes*: questions whose answer is one planted fact (or a case's status)
and whose cue is another ("Which order was the EUR 615.09 refund for?").

Nothing here is shared with any summarizer. Surface forms vary on purpose: amounts in four
currencies and several notations ("615,09 €", "EUR 615.09", "CHF 1'249.50"), dates in ISO,
written and dotted forms, ids with hyphens, hashes or spaces (tracking "JD01 4600 0038 2840",
booking "K7 4QX 92"). Same seed, phrasing and length: the same conversation.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import Any

from memo_eval.project.phrasings import PHRASINGS, Phrasing

DEFAULT_TURNS = 500
# Dev conversations are for tuning; held-out ones (other seeds, and phrasings no tuning run
# has used) only for reporting.
SPLITS: dict[str, tuple[tuple[str, int], ...]] = {
    "dev": tuple(("dev", seed) for seed in range(1, 6))
    + tuple(("dev2", seed) for seed in range(6, 11))
    + tuple(("dev3", seed) for seed in range(11, 16))
    + tuple(("dev4", seed) for seed in range(16, 21)),
    "heldout": tuple(("heldout", seed) for seed in range(1001, 1011))
    + tuple(("heldout2", seed) for seed in range(2001, 2011)),
}
CUSTOMER = "customer"
# Words per message, drawn uniformly: about 340 tokens per turn on average.
USER_WORDS = (10, 160)
ASSISTANT_WORDS = (220, 640)


@dataclass(frozen=True)
class PlantedFact:
    """A fact the conversation states. `kind` says how to recognise it in text ("id",
    "amount", "date", "email", "phone", "name"); `value` is canonical: ids as first written,
    amounts "EUR 615.09", dates "2024-11-06". `turn` is the message that first states it;
    `superseded_at` the message that replaces it (a new date), if any."""

    case: str
    slot: str
    kind: str
    label: str
    value: str
    turn: int
    superseded_at: int | None = None

    def current_at(self, turn: int) -> bool:
        """Stated at or before `turn` and not superseded by then."""
        return self.turn <= turn and (self.superseded_at is None or self.superseded_at > turn)


@dataclass(frozen=True)
class CaseTruth:
    """One case: its kind, the message that opens it, the one that closes it (None: still
    open at the end), and its status after each change, as (turn, status) pairs."""

    key: str
    kind: str
    opened: int
    closed: int | None
    statuses: tuple[tuple[int, str], ...]

    def is_open_at(self, turn: int) -> bool:
        return self.opened <= turn and (self.closed is None or self.closed > turn)

    def status_at(self, turn: int) -> str | None:
        current = None
        for changed, status in self.statuses:
            if changed <= turn:
                current = status
        return current


@dataclass(frozen=True)
class Probe:
    """A question answered by `answer` (a fact) or by the case's status at the time, cued by
    `cue`. Answered from a text when cue and answer stand in one line of it."""

    case: str
    question: str
    cue: PlantedFact
    answer: PlantedFact | None

    def asked_at(self, turn: int, cases: dict[str, CaseTruth]) -> str | None:
        """The expected answer at `turn`: the answer fact's value or the current status; None
        when the probe cannot be asked yet (or its facts are superseded)."""
        if not self.cue.current_at(turn):
            return None
        if self.answer is None:
            return cases[self.case].status_at(turn)
        return self.answer.value if self.answer.current_at(turn) else None


@dataclass(frozen=True)
class Conversation:
    """A generated conversation and its ground truth."""

    seed: int
    phrasing: str
    messages: tuple[tuple[str, str], ...]
    facts: tuple[PlantedFact, ...]
    cases: dict[str, CaseTruth]
    probes: tuple[Probe, ...]

    @property
    def name(self) -> str:
        return f"{self.phrasing}-{self.seed}"

    def open_cases(self, turn: int) -> set[str]:
        """Keys of the cases open after message `turn` (the customer always is)."""
        return {key for key, case in self.cases.items() if case.is_open_at(turn)}

    def facts_at(self, turn: int, *, open_only: bool) -> list[PlantedFact]:
        """Current facts after message `turn`, of open cases only or of every case."""
        open_keys = self.open_cases(turn)
        return [
            fact
            for fact in self.facts
            if fact.current_at(turn) and (not open_only or fact.case in open_keys)
        ]


# --- the world: names, products, formats ----------------------------------------------------

FIRST_NAMES = (
    "Dana",
    "Priya",
    "Tomasz",
    "Ines",
    "Kwame",
    "Sofia",
    "Lukas",
    "Amara",
    "Mateo",
    "Yuki",
    "Elif",
    "Jonas",
    "Chiara",
    "Omar",
    "Freya",
    "Nikolai",
    "Aoife",
    "Rahul",
    "Marta",
    "Tobias",
)
LAST_NAMES = (
    "Whitfield",
    "Raman",
    "Kowalski",
    "Ferreira",
    "Mensah",
    "Lindqvist",
    "Brandt",
    "Okafor",
    "Alvarez",
    "Tanaka",
    "Demir",
    "Novak",
    "Russo",
    "Haddad",
    "Nilsson",
    "Petrov",
    "Byrne",
    "Mehta",
    "Santos",
    "Keller",
)
MAIL_DOMAINS = ("example.com", "mail.example.org", "post.example.net")
PRODUCTS = (
    "standing desk",
    "oak bookshelf",
    "robot vacuum",
    "espresso machine",
    "office chair",
    "air purifier",
    "floor lamp",
    "wardrobe",
    "bed frame",
    "dishwasher",
    "coffee grinder",
    "soundbar",
    "sofa bed",
    "washing machine",
    "smart thermostat",
    "dining table",
)
PLANS = ("Basic", "Plus", "Premium", "Family", "Pro")
CARRIERS = ("DHL", "UPS", "DPD", "GLS", "Royal Mail", "PostNL", "FedEx")
CURRENCIES = ("EUR", "GBP", "USD", "CHF")


def _digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(count))


def _letters(rng: random.Random, count: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(count))


def _alnum(rng: random.Random, count: int) -> str:
    # At least one digit, so an alphanumeric block never reads as a word.
    chars = [rng.choice(string.ascii_uppercase + string.digits) for _ in range(count - 1)]
    chars.insert(rng.randrange(count), rng.choice(string.digits))
    return "".join(chars)


IdMaker = Callable[[random.Random], str]

ID_FORMATS: dict[str, tuple[IdMaker, ...]] = {
    "customer_no": (
        lambda r: f"CU {_digits(r, 4)} {_digits(r, 4)}",
        lambda r: f"C-{_digits(r, 7)}",
        lambda r: f"{_letters(r, 2)}{_digits(r, 6)}",
    ),
    "order": (
        lambda r: f"ORD-{_digits(r, 5)}",
        lambda r: f"{_letters(r, 2)}-{_digits(r, 6)}",
        lambda r: f"{_digits(r, 3)}-{_digits(r, 7)}-{_digits(r, 7)}",
    ),
    "ticket": (
        lambda r: f"TCK-{_digits(r, 5)}",
        lambda r: f"INC{_digits(r, 7)}",
        lambda r: f"CS-{_digits(r, 4)}-{_digits(r, 3)}",
    ),
    "refund_ref": (
        lambda r: f"RFD-{_digits(r, 6)}",
        lambda r: f"R-{_digits(r, 4)}-{_digits(r, 2)}",
        lambda r: f"RF {_digits(r, 4)} {_digits(r, 4)}",
    ),
    "rma": (
        lambda r: f"RMA-{_digits(r, 6)}",
        lambda r: f"RMA {_digits(r, 4)}-{_digits(r, 2)}",
        lambda r: f"RT{_digits(r, 8)}",
    ),
    "serial": (
        lambda r: f"{_alnum(r, 3)}-{_alnum(r, 3)}-{_alnum(r, 3)}",
        lambda r: f"{_letters(r, 3)}{_alnum(r, 7)}",
        lambda r: _alnum(r, 12),
    ),
    "booking": (
        lambda r: f"{_alnum(r, 2)} {_alnum(r, 3)} {_alnum(r, 2)}",
        lambda r: f"BK-{_digits(r, 5)}",
        lambda r: f"V{_digits(r, 6)}",
    ),
    "invoice": (
        lambda r: f"INV-{r.choice(['2024', '2025'])}-{_digits(r, 4)}",
        lambda r: f"F{_digits(r, 8)}",
        lambda r: f"INV {_digits(r, 6)}",
    ),
    "credit_note": (
        lambda r: f"CN-{_digits(r, 5)}",
        lambda r: f"CR{_digits(r, 6)}",
        lambda r: f"GS-{_digits(r, 4)}-{_digits(r, 2)}",
    ),
    "claim": (
        lambda r: f"WC-{_digits(r, 2)}-{_digits(r, 5)}",
        lambda r: f"CLM{_digits(r, 7)}",
        lambda r: f"W {_digits(r, 4)} {_digits(r, 4)}",
    ),
    "subscription": (
        lambda r: f"SUB-{_digits(r, 4)}-{_letters(r, 1)}",
        lambda r: f"S{_digits(r, 8)}",
    ),
}

TRACKING_FORMATS: dict[str, IdMaker] = {
    "UPS": lambda r: f"1Z{_alnum(r, 6)}{_digits(r, 10)}",
    "DHL": lambda r: f"JD01 {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)}",
    "DPD": lambda r: _digits(r, 14),
    "GLS": lambda r: f"{_digits(r, 4)} {_digits(r, 4)} {_digits(r, 3)}",
    "Royal Mail": lambda r: f"{_letters(r, 2)}{_digits(r, 9)}GB",
    "PostNL": lambda r: f"3S{_letters(r, 4)}{_digits(r, 9)}",
    "FedEx": lambda r: f"{_digits(r, 4)} {_digits(r, 4)} {_digits(r, 4)}",
}

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


DATE_FORMATS: tuple[Callable[[date], str], ...] = (
    lambda d: d.isoformat(),
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1][:3]}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}",
    lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    lambda d: f"{WEEKDAYS[d.weekday()]} {d.day} {MONTHS[d.month - 1]}",
    lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]}",
)


def _grouped(whole: int, separator: str) -> str:
    return f"{whole:,}".replace(",", separator)


def format_amount(rng: random.Random, currency: str, cents: int) -> str:
    """One of the ways people write `cents` of `currency`."""
    whole, rest = divmod(cents, 100)
    point = f"{_grouped(whole, ',')}.{rest:02d}"
    plain = f"{whole}.{rest:02d}"
    comma = f"{_grouped(whole, '.')},{rest:02d}"
    forms = {
        "EUR": [f"EUR {point}", f"€{point}", f"{plain} EUR", f"{comma} €", f"{point} euros"],
        "USD": [f"${point}", f"USD {point}", f"{plain} USD", f"US${point}"],
        "GBP": [f"£{point}", f"GBP {point}", f"{point} pounds"],
        "CHF": [f"CHF {point}", f"{plain} CHF", f"CHF {_grouped(whole, chr(39))}.{rest:02d}"],
    }[currency]
    return rng.choice(forms)


# --- case scripts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One exchange of a case: the user's event (None: small talk) and the agent's answer
    (None: a long general answer), after waiting `gap` turns (at least, at most) since the
    previous step; then the case's status, whether the step closes the case, and which slot
    a newly stated slot supersedes."""

    user: str | None
    assistant: str | None
    gap: tuple[int, int]
    status: str | None = None
    closes: bool = False
    supersedes: tuple[tuple[str, str], ...] = ()


_ORDER_START = (
    Step("order_problem", "order_shipped", (0, 0), "shipped"),
    Step("order_late", "carrier_ticket", (24, 76), "delayed"),
)
SCRIPTS: dict[str, tuple[tuple[Step, ...], ...]] = {
    "order": (
        (
            *_ORDER_START,
            Step("order_ping", "eta_update", (24, 76), "delayed", supersedes=(("eta2", "eta"),)),
            Step("order_arrived", "order_closed", (24, 76), "delivered", closes=True),
        ),
        (
            *_ORDER_START,
            Step("order_ping", "order_lost", (24, 76), "lost"),
            Step("choose_refund", "order_refunded", (2, 6), "refunded", closes=True),
        ),
        (
            *_ORDER_START,
            Step("order_ping", "order_lost", (24, 76), "lost"),
            Step(
                "choose_replacement",
                "replacement_shipped",
                (2, 6),
                "replacement shipped",
                supersedes=(("new_eta", "eta"),),
            ),
            Step("replacement_arrived", "replacement_closed", (24, 76), "delivered", closes=True),
        ),
    ),
    "return": (
        (
            Step("return_request", "return_authorised", (0, 0), "return authorised"),
            Step("return_sent", None, (6, 24)),
            Step("return_ping", "return_refunded", (24, 76), "refunded", closes=True),
        ),
    ),
    "ticket": (
        (
            Step("device_problem", "ticket_opened", (0, 0), "open"),
            Step("ticket_ping", "visit_booked", (24, 76), "escalated"),
            Step("visit_done", "ticket_resolved", (24, 76), "resolved", closes=True),
        ),
    ),
    "invoice": (
        (
            Step("invoice_wrong", "invoice_review", (0, 0), "disputed"),
            Step("invoice_ping", "invoice_corrected", (14, 50), "corrected"),
            Step("invoice_paid", "invoice_closed", (24, 76), "paid", closes=True),
        ),
    ),
    "claim": (
        (
            Step("claim_open", "claim_registered", (0, 0), "registered"),
            Step("claim_ping", "claim_parts", (40, 90), "waiting for parts"),
            Step("claim_ping", "claim_nothing_new", (40, 90)),
            Step(
                "claim_ping",
                "claim_parts_delay",
                (40, 90),
                "waiting for parts",
                supersedes=(("parts_eta2", "parts_eta"),),
            ),
            Step("claim_ping", "claim_repair", (60, 120), "repair scheduled"),
        ),
    ),
    "subscription": ((Step("plan_change", "plan_changed", (0, 0), "changed", closes=True),),),
    CUSTOMER: (
        (
            Step("intro", "intro_ack", (0, 0)),
            Step("phone", "phone_ack", (20, 120)),
        ),
    ),
}
CASE_WEIGHTS = {"order": 35, "return": 20, "ticket": 20, "invoice": 15, "subscription": 10}

# slot -> (fact kind, label); slots not listed here are flavour and plant nothing.
SLOTS: dict[str, tuple[str, str]] = {
    "name": ("name", "customer name"),
    "customer_no": ("id", "customer number"),
    "email": ("email", "email address"),
    "phone": ("phone", "phone number"),
    "order": ("id", "order number"),
    "total": ("amount", "order total"),
    "ordered": ("date", "order date"),
    "tracking": ("id", "tracking number"),
    "eta": ("date", "expected delivery"),
    "eta2": ("date", "expected delivery"),
    "ticket": ("id", "ticket id"),
    "refund": ("amount", "refund amount"),
    "refund_ref": ("id", "refund reference"),
    "refunded_on": ("date", "refund date"),
    "new_order": ("id", "replacement order number"),
    "new_tracking": ("id", "replacement tracking number"),
    "new_eta": ("date", "replacement delivery date"),
    "paid": ("amount", "price paid"),
    "bought": ("date", "purchase date"),
    "rma": ("id", "return authorisation"),
    "serial": ("id", "serial number"),
    "visit": ("date", "technician visit"),
    "booking": ("id", "booking reference"),
    "invoice": ("id", "invoice number"),
    "billed": ("amount", "amount billed"),
    "correct": ("amount", "plan price"),
    "credit": ("amount", "credit amount"),
    "credit_note": ("id", "credit note"),
    "due": ("date", "due date"),
    "claim": ("id", "claim number"),
    "price": ("amount", "price"),
    "parts_eta": ("date", "part expected"),
    "parts_eta2": ("date", "part expected"),
    "repair": ("date", "repair date"),
    "subscription": ("id", "subscription id"),
    "starts": ("date", "start date"),
}
PRIMARY_SLOT = {
    "order": "order",
    "return": "order",
    "ticket": "ticket",
    "invoice": "invoice",
    "claim": "claim",
    "subscription": "subscription",
}
# (question, cue slot, answer slot); every case also gets a status probe on its primary id.
PROBES: dict[str, tuple[tuple[str, str, str], ...]] = {
    CUSTOMER: (("What is {name}'s customer number?", "name", "customer_no"),),
    "order": (
        ("What is the tracking number of order {order}?", "order", "tracking"),
        ("Which ticket is open with the carrier for order {order}?", "order", "ticket"),
        ("How much was order {order}?", "order", "total"),
        ("Which order was the {refund} refund for?", "refund", "order"),
        ("Which replacement order was sent for {order}?", "order", "new_order"),
        ("When is the parcel for order {order} expected?", "order", "eta2"),
    ),
    "return": (
        ("Which order was the {refund} refund for?", "refund", "order"),
        ("What is the return authorisation for order {order}?", "order", "rma"),
    ),
    "ticket": (
        ("Which serial number is ticket {ticket} about?", "ticket", "serial"),
        ("When is the technician visit for ticket {ticket}?", "ticket", "visit"),
        ("What is the booking reference for ticket {ticket}?", "ticket", "booking"),
    ),
    "invoice": (
        ("How much is credit note {credit_note}?", "credit_note", "credit"),
        ("Which invoice does credit note {credit_note} correct?", "credit_note", "invoice"),
        ("When is invoice {invoice} due?", "invoice", "due"),
    ),
    "claim": (
        ("What is the serial number on claim {claim}?", "claim", "serial"),
        ("When is the spare part for claim {claim} expected?", "claim", "parts_eta2"),
        ("Which claim is for the item bought on {bought}?", "bought", "claim"),
    ),
    "subscription": (("How much does subscription {subscription} cost?", "subscription", "price"),),
}


# --- generation ------------------------------------------------------------------------------


@dataclass
class _Case:
    key: str
    kind: str
    steps: tuple[Step, ...]
    values: dict[str, Any]
    next_step: int = 0
    due: int = 0
    opened: int | None = None
    closed: int | None = None
    statuses: list[tuple[int, str]] = field(default_factory=list)


class _Writer:
    """Builds one conversation: schedules the cases' steps between filler exchanges and
    records which message first states each slot."""

    def __init__(self, *, seed: int, phrasing: str, turns: int) -> None:
        self.rng = random.Random(f"{phrasing}:{seed}")
        self.seed = seed
        self.phrasing_name = phrasing
        self.phrasing: Phrasing = PHRASINGS[phrasing]
        self.turns = turns
        self.start = datetime(2024, 1, 8) + timedelta(days=self.rng.randrange(540))
        self.elapsed = timedelta()
        self.currency = self.rng.choice(CURRENCIES)
        self.id_formats = {slot: self.rng.choice(makers) for slot, makers in ID_FORMATS.items()}
        self.messages: list[tuple[str, str]] = []
        self.planted: dict[tuple[str, str], PlantedFact] = {}
        self.used_ids: set[str] = set()
        self.customer = self._customer()
        self.cases = [self.customer, *self._cases()]

    # values ----------------------------------------------------------------------------------

    def _new_id(self, slot: str) -> str:
        while True:
            value = self.id_formats[slot](self.rng)
            if value not in self.used_ids:
                self.used_ids.add(value)
                return value

    def _amount(self, low: int, high: int) -> tuple[str, int]:
        currency = self.currency if self.rng.random() < 0.8 else self.rng.choice(CURRENCIES)
        cents = self.rng.randrange(low * 100, high * 100)
        if self.rng.random() < 0.3:
            cents -= cents % 100  # whole amounts are common too
        return currency, cents

    @property
    def today(self) -> date:
        """The conversation's clock: a few hours pass with each exchange."""
        return (self.start + self.elapsed).date()

    def _date(self, offset_days: int) -> date:
        return self.today + timedelta(days=offset_days)

    def _customer(self) -> _Case:
        first, last = self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)
        values = {
            "name": f"{first} {last}",
            "first": first,
            "customer_no": self._new_id("customer_no"),
            "email": f"{first}.{last}@{self.rng.choice(MAIL_DOMAINS)}".lower(),
            "phone": f"+{self.rng.choice(['44', '49', '41', '31'])} {_digits(self.rng, 2)} "
            f"{_digits(self.rng, 4)} {_digits(self.rng, 4)}",
        }
        return _Case(CUSTOMER, CUSTOMER, SCRIPTS[CUSTOMER][0], values)

    def _case_values(self, kind: str) -> dict[str, Any]:
        """Everything a case of `kind` may state; dates are offsets from when it is stated."""
        rng = self.rng
        carrier = rng.choice(CARRIERS)
        values: dict[str, Any] = {
            "product": rng.choice(PRODUCTS),
            "carrier": carrier,
            "order": self._new_id("order"),
            "ticket": self._new_id("ticket"),
        }
        if kind == "order":
            total = self._amount(40, 2400)
            values |= {
                "total": total,
                "ordered": -rng.randrange(3, 12),
                "tracking": TRACKING_FORMATS[carrier](rng),
                "eta": rng.randrange(2, 7),
                "eta2": rng.randrange(3, 10),
                "refund": total,
                "refund_ref": self._new_id("refund_ref"),
                "refunded_on": 0,
                "new_order": self._new_id("order"),
                "new_tracking": TRACKING_FORMATS[carrier](rng),
                "new_eta": rng.randrange(3, 8),
            }
        elif kind == "return":
            currency, cents = self._amount(30, 1800)
            fee = cents // 10 if rng.random() < 0.5 else 0
            values |= {
                "paid": (currency, cents),
                "bought": -rng.randrange(5, 25),
                "rma": self._new_id("rma"),
                "refund": (currency, cents - fee),
                "refund_ref": self._new_id("refund_ref"),
                "refunded_on": 0,
            }
        elif kind == "ticket":
            values |= {
                "serial": self._new_id("serial"),
                "error": rng.choice([f"E{_digits(rng, 3)}", f"0x{_digits(rng, 4)}", "F-07"]),
                "visit": rng.randrange(3, 12),
                "booking": self._new_id("booking"),
            }
        elif kind == "invoice":
            currency, correct = self._amount(15, 120)
            extra = rng.randrange(5, 60) * 100 + rng.choice([0, 50, 99])
            values |= {
                "invoice": self._new_id("invoice"),
                "billed": (currency, correct + extra),
                "correct": (currency, correct),
                "credit": (currency, extra),
                "credit_note": self._new_id("credit_note"),
                "due": rng.randrange(10, 30),
            }
        elif kind == "claim":
            values |= {
                "claim": self._new_id("claim"),
                "serial": self._new_id("serial"),
                "bought": -rng.randrange(200, 600),
                "price": self._amount(150, 2500),
                "parts_eta": rng.randrange(14, 40),
                "parts_eta2": rng.randrange(14, 40),
                "repair": rng.randrange(5, 15),
            }
        elif kind == "subscription":
            values |= {
                "subscription": self._new_id("subscription"),
                "plan": rng.choice(PLANS),
                "price": self._amount(5, 60),
                "starts": rng.randrange(1, 20),
            }
        return values

    def _cases(self) -> list[_Case]:
        """The long-running claim from the start, an early order, then a case every ~32 turns
        (evenly spread with jitter, so some are still open at the end)."""
        rng = self.rng
        starts = [(2, "claim"), (8, "order")]
        count = max(1, self.turns // 32)
        spacing = max(1, (self.turns - 30) // count)
        kinds = list(CASE_WEIGHTS)
        weights = list(CASE_WEIGHTS.values())
        for index in range(count):
            start = 12 + index * spacing + rng.randrange(spacing)
            starts.append((min(start, self.turns - 2), *rng.choices(kinds, weights)))
        cases = []
        for index, (start, kind) in enumerate(sorted(starts)):
            script = rng.choice(SCRIPTS[kind])
            case = _Case(f"{kind}-{index + 1}", kind, script, self._case_values(kind), due=start)
            cases.append(case)
        return cases

    # rendering -------------------------------------------------------------------------------

    def _surface(self, case: _Case, slot: str, turn: int) -> str:
        value = case.values[slot]
        kind = SLOTS.get(slot, ("flavour", ""))[0]
        if kind == "amount":
            return format_amount(self.rng, *value)
        if kind == "date":
            return self.rng.choice(DATE_FORMATS)(self._resolved_date(case, slot, turn))
        return str(value)

    def _resolved_date(self, case: _Case, slot: str, turn: int) -> date:
        """A date slot holds an offset until first stated, then the date itself."""
        value = case.values[slot]
        if isinstance(value, int):
            value = self._date(value)
            case.values[slot] = value
        return value

    def _canonical(self, case: _Case, slot: str) -> str:
        value = case.values[slot]
        kind = SLOTS[slot][0]
        if kind == "amount":
            currency, cents = value
            return f"{currency} {cents // 100}.{cents % 100:02d}"
        if kind == "date":
            return value.isoformat()
        return str(value)

    def _fill(self, template: str, case: _Case, turn: int) -> str:
        slots: dict[str, str] = {"first": self.customer.values["first"]}
        for slot in _template_slots(template):
            if slot in case.values:
                slots[slot] = self._surface(case, slot, turn)
        text = template.format(**slots)
        for slot in _template_slots(template):
            if slot in SLOTS and (case.key, slot) not in self.planted:
                self._plant(case, slot, turn)
        return text

    def _plant(self, case: _Case, slot: str, turn: int) -> None:
        kind, label = SLOTS[slot]
        self.planted[(case.key, slot)] = PlantedFact(
            case=case.key,
            slot=slot,
            kind=kind,
            label=label,
            value=self._canonical(case, slot),
            turn=turn,
        )

    def _supersede(self, case: _Case, step: Step, turn: int) -> None:
        for new, old in step.supersedes:
            previous = self.planted.get((case.key, old))
            if previous is not None and (case.key, new) in self.planted:
                self.planted[(case.key, old)] = replace(previous, superseded_at=turn)

    def _flavour(self) -> dict[str, str]:
        rng = self.rng
        return {
            "days": str(rng.choice([3, 5, 10, 14, 30])),
            "threshold": format_amount(rng, self.currency, rng.choice([50, 100, 500]) * 100),
            "volume": f"{rng.randrange(8, 40)},000",
            "kb": _digits(rng, 4),
            "version": f"{rng.randrange(2, 6)}.{rng.randrange(0, 9)}.{rng.randrange(0, 9)}",
        }

    def _padded(self, parts: list[str], pool: list[str], target_words: int) -> list[str]:
        """`parts` plus distinct pieces of `pool` (flavour filled in) until `target_words`."""
        extra = self.rng.sample(pool, len(pool))
        while extra and sum(len(part.split()) for part in parts) < target_words:
            parts.append(extra.pop().format(**self._flavour()))
        return parts

    def _user_message(self, event: str | None, case: _Case | None, turn: int) -> str:
        rng = self.rng
        parts = []
        if rng.random() < 0.35:
            parts.append(rng.choice(self.phrasing.small_talk))
        if event is not None and case is not None:
            parts.append(self._fill(rng.choice(self.phrasing.events[event]), case, turn))
        else:
            parts.append(rng.choice(self.phrasing.small_talk))
        pool = self.phrasing.rants + self.phrasing.small_talk
        return " ".join(self._padded(parts, pool, rng.randrange(USER_WORDS[0], USER_WORDS[1])))

    def _assistant_message(self, event: str | None, case: _Case | None, turn: int) -> str:
        rng = self.rng
        lead = rng.choice(self.phrasing.acks)
        if event is not None and case is not None:
            lead = f"{lead} {self._fill(rng.choice(self.phrasing.events[event]), case, turn)}"
        target = rng.randrange(ASSISTANT_WORDS[0], ASSISTANT_WORDS[1])
        return "\n\n".join(self._padded([lead], self.phrasing.paragraphs, target))

    # scheduling ------------------------------------------------------------------------------

    def write(self) -> Conversation:
        for turn in range(0, self.turns, 2):
            case = self._due_case(turn)
            step = case.steps[case.next_step] if case else None
            self._exchange(turn, case, step)
        return self._conversation()

    def _due_case(self, turn: int) -> _Case | None:
        due = [c for c in self.cases if c.next_step < len(c.steps) and c.due <= turn]
        return min(due, key=lambda c: (c.due, c.key)) if due else None

    def _exchange(self, turn: int, case: _Case | None, step: Step | None) -> None:
        self.elapsed += timedelta(hours=self.rng.randrange(2, 14))
        user_event = step.user if step else None
        self.messages.append(("user", self._user_message(user_event, case, turn)))
        if turn + 1 < self.turns:
            assistant_event = step.assistant if step else None
            self.messages.append(
                ("assistant", self._assistant_message(assistant_event, case, turn + 1))
            )
        if case is None or step is None:
            return
        if case.opened is None:
            case.opened = turn
        changed = turn + 1 if turn + 1 < self.turns else turn
        self._supersede(case, step, changed)
        if step.status and (not case.statuses or case.statuses[-1][1] != step.status):
            case.statuses.append((changed, step.status))
        if step.closes:
            case.closed = changed
        case.next_step += 1
        if case.next_step < len(case.steps):
            low, high = case.steps[case.next_step].gap
            case.due = turn + 2 + self.rng.randrange(low, high + 1)

    def _conversation(self) -> Conversation:
        facts = tuple(sorted(self.planted.values(), key=lambda f: (f.turn, f.case, f.slot)))
        cases = {
            case.key: CaseTruth(
                key=case.key,
                kind=case.kind,
                opened=case.opened,
                closed=case.closed,
                statuses=tuple(case.statuses),
            )
            for case in self.cases
            if case.opened is not None
        }
        return Conversation(
            seed=self.seed,
            phrasing=self.phrasing_name,
            messages=tuple(self.messages),
            facts=facts,
            cases=cases,
            probes=tuple(self._probes(cases)),
        )

    def _probes(self, cases: dict[str, CaseTruth]) -> list[Probe]:
        probes = []
        for case in self.cases:
            if case.key not in cases:
                continue
            planted = {slot: fact for (key, slot), fact in self.planted.items() if key == case.key}
            for question, cue, answer in PROBES.get(case.kind, ()):
                if cue in planted and answer in planted:
                    text = question.format(**{cue: planted[cue].value, **_values_of(planted)})
                    probes.append(Probe(case.key, text, planted[cue], planted[answer]))
            primary = PRIMARY_SLOT.get(case.kind)
            if primary in planted:
                question = f"What is the status of {planted[primary].value}?"
                probes.append(Probe(case.key, question, planted[primary], None))
        return probes


def _template_slots(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def _values_of(planted: dict[str, PlantedFact]) -> dict[str, str]:
    return {slot: fact.value for slot, fact in planted.items()}


def generate(*, seed: int, phrasing: str = "dev", turns: int = DEFAULT_TURNS) -> Conversation:
    """The conversation of `seed` in `phrasing` (a key of `PHRASINGS`), `turns` messages long
    (alternating user / assistant, the user first). Deterministic."""
    if phrasing not in PHRASINGS:
        raise ValueError(f"unknown phrasing {phrasing!r}; known: {', '.join(PHRASINGS)}")
    if turns < 2:
        raise ValueError("a conversation needs at least 2 turns")
    return _Writer(seed=seed, phrasing=phrasing, turns=turns).write()


def split_conversations(split: str, *, turns: int = DEFAULT_TURNS) -> list[Conversation]:
    """The conversations of a split: "dev" (seeds 1-20 in the four dev phrasings) for tuning,
    "heldout" (seeds 1001-1010 and 2001-2010 in the two held-out phrasings) for reporting."""
    return [generate(seed=seed, phrasing=phrasing, turns=turns) for phrasing, seed in SPLITS[split]]
