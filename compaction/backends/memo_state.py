"""The state a structured memo carries, its text form, and fitting it into a token budget.

A state memo reads like this (one line per case, its facts attached to it)::

    Customer: Dana Whitfield; customer number CU 0899 5727; dana@example.com; +44 20 7946 0958
    Open cases:
    - order ORD-48213 (delayed): ordered 6 Nov 2024; paid EUR 615.09; tracking 1Z999AA1012345
      6784; due 12 Nov 2024; ticket TCK-5521
    - claim WC-88-21907 (waiting for parts): serial 4X7-99A-201; bought 3 Mar 2024; part due ...
    Closed cases:
    - order ORD-4410 (refunded): refund EUR 89.00; refund ref RFD-330912
    Closed earlier: ticket TCK-2001 (resolved); invoice INV-2024-0931 (paid)
    Open items:
    - ORD-48213: carrier trace running (TCK-5521)
    Changed since previous memo: new claim WC-88-21907; ORD-48213 shipped -> delayed

``parse_memo`` reads that text back into a ``MemoState`` (so each memo is written from the
previous memo's state plus the new messages), ``render_memo`` writes it, and ``fit_memo``
drops detail in a fixed order until the text fits: closed cases lose their facts first, then
the change list shrinks, then the oldest closed cases go, then the open items, then the least
important facts of open cases (notes and dates before amounts, amounts before identifiers);
only when every open case is down to its id and status does an open case go, the oldest
first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from convmem.tokens import count_tokens

CUSTOMER_HEADER = "Customer:"
OPEN_HEADER = "Open cases:"
CLOSED_HEADER = "Closed cases:"
CLOSED_EARLIER = "Closed earlier:"
ITEMS_HEADER = "Open items:"
CHANGED_HEADER = "Changed since previous memo:"
FOCUS_HEADER = "Last discussed:"

TERMINAL_STATUSES = frozenset(
    {"delivered", "refunded", "resolved", "paid", "closed", "changed", "cancelled", "done"}
)
# Facts of a case, most important first: what is dropped last when space runs out.
SLOT_ORDER = (
    "tracking",
    "ticket",
    "order",
    "replacement",
    "serial",
    "booking",
    "rma",
    "refund ref",
    "credit note",
    "ref",
    "refund",
    "credit",
    "paid",
    "billed",
    "monthly",
    "amount",
    "due",
    "part due",
    "visit",
    "repair",
    "from",
    "ordered",
    "bought",
    "issued",
    "date",
    "decided",
    "note",
)
# Slots holding one value: a new value replaces the old one (a revised delivery date).
SINGLE_SLOTS = frozenset(
    {"due", "part due", "visit", "repair", "from", "ordered", "bought", "issued", "decided"}
)
MAX_VALUES_PER_SLOT = 3
_SLOT_RANK = {slot: rank for rank, slot in enumerate(SLOT_ORDER)}
_SLOTS_LONGEST_FIRST = sorted(SLOT_ORDER, key=len, reverse=True)


@dataclass
class Fact:
    """One fact of a case: its slot ("tracking", "paid", "due" …) and its value as shown."""

    slot: str
    value: str

    def render(self) -> str:
        return f"{self.slot} {self.value}"


@dataclass
class Case:
    """One case (an order, a ticket, a claim …) under its primary id, with its facts."""

    key: str
    kind: str
    status: str = "open"
    facts: list[Fact] = field(default_factory=list)
    item: str = ""

    @property
    def closed(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def add(self, slot: str, value: str) -> bool:
        """Add a fact; returns whether anything changed. A single-valued slot is replaced;
        a multi-valued one keeps its newest `MAX_VALUES_PER_SLOT` distinct values."""
        value = value.replace(";", ",").strip()
        if not value or (slot != "ref" and value == self.key):
            return False
        same_slot = [fact for fact in self.facts if fact.slot == slot]
        if any(fact.value == value for fact in same_slot):
            return False
        if slot in SINGLE_SLOTS and same_slot:
            same_slot[0].value = value
            return True
        if len(same_slot) >= MAX_VALUES_PER_SLOT:
            self.facts.remove(same_slot[0])
        self.facts.append(Fact(slot, value))
        return True

    def values(self, slot: str) -> list[str]:
        return [fact.value for fact in self.facts if fact.slot == slot]

    def ordered_facts(self) -> list[Fact]:
        """Facts in a stable reading order: by slot importance, then as added; a value that
        repeats an earlier fact's ("paid EUR 80", then "refund EUR 80") comes last, so it is
        the first to go when space runs out."""
        ranked = sorted(self.facts, key=lambda fact: _SLOT_RANK.get(fact.slot, len(SLOT_ORDER)))
        seen: set[str] = set()
        firsts, repeats = [], []
        for fact in ranked:
            (repeats if fact.value in seen else firsts).append(fact)
            seen.add(fact.value)
        return firsts + repeats


@dataclass
class Customer:
    name: str = ""
    number: str = ""
    email: str = ""
    phone: str = ""

    def fields(self) -> list[str]:
        parts = [self.name] if self.name else []
        if self.number:
            parts.append(f"customer number {self.number}")
        return parts + [value for value in (self.email, self.phone) if value]


@dataclass
class MemoState:
    """Everything a memo knows: the customer, cases (in order of first mention) with aliases
    (other ids that name the same case), what changed in the last update, and the case
    discussed last (so the next range's first "it" finds its case)."""

    customer: Customer = field(default_factory=Customer)
    cases: dict[str, Case] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    focus: str | None = None

    def case_for(self, identifier: str) -> Case | None:
        key = self.aliases.get(normalise_id(identifier))
        return self.cases.get(key) if key else None

    def open_case(self, key: str, kind: str) -> Case:
        case = Case(key=key, kind=kind)
        self.cases[key] = case
        self.alias(key, key)
        return case

    def alias(self, identifier: str, key: str) -> None:
        self.aliases.setdefault(normalise_id(identifier), key)


def normalise_id(identifier: str) -> str:
    """The comparison form of an id: letters and digits only, upper case."""
    return "".join(char for char in identifier if char.isalnum()).upper()


# --- parsing ---------------------------------------------------------------------------------

_CASE_LINE = re.compile(
    r"^- (?P<kind>[a-z]+) (?P<key>[^()]+?) \((?P<status>[^()]*)\)(?::\s*(?P<facts>.*))?$"
)
_COMPACT_CASE = re.compile(r"^(?P<kind>[a-z]+) (?P<key>[^()]+?) \((?P<status>[^()]*)\)$")
_ITEM_LINE = re.compile(r"^- (?P<key>[^:]+): (?P<item>.+)$")


def parse_memo(text: str) -> tuple[MemoState, list[str]]:
    """Read a memo written by `render_memo` back into its state.

    Returns the state and the lines that are not in that form (a memo by another backend, or
    prose): the caller reads those like message text, so nothing they state is ignored.
    """
    state = MemoState()
    leftovers: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        header, _, rest = line.partition(":")
        header += ":"
        if header == CUSTOMER_HEADER:
            _parse_customer(state.customer, rest)
        elif header in (OPEN_HEADER, CLOSED_HEADER, ITEMS_HEADER):
            section = header
        elif header == CLOSED_EARLIER:
            section = header
            for entry in rest.split(";"):
                _parse_compact_case(state, entry.strip(), leftovers)
        elif header == CHANGED_HEADER:
            section = header
            state.changes = [change.strip() for change in rest.split(";") if change.strip()]
        elif header == FOCUS_HEADER:
            section = header
            case = state.case_for(rest.strip().partition(" ")[2])
            state.focus = case.key if case else None
        elif section == ITEMS_HEADER and (match := _ITEM_LINE.match(line)):
            case = state.case_for(match.group("key"))
            if case is not None:
                case.item = match.group("item")
            else:
                leftovers.append(line)
        elif section in (OPEN_HEADER, CLOSED_HEADER) and (match := _CASE_LINE.match(line)):
            case = state.open_case(match.group("key"), match.group("kind"))
            case.status = match.group("status")
            for fact_text in (match.group("facts") or "").split(";"):
                _parse_fact(state, case, fact_text.strip())
        else:
            leftovers.append(line)
    return state, leftovers


def _parse_customer(customer: Customer, rest: str) -> None:
    for part in (part.strip() for part in rest.split(";")):
        if part.startswith("customer number "):
            customer.number = part.removeprefix("customer number ")
        elif "@" in part:
            customer.email = part
        elif part.startswith("+"):
            customer.phone = part
        elif part:
            customer.name = part


def _parse_compact_case(state: MemoState, entry: str, leftovers: list[str]) -> None:
    match = _COMPACT_CASE.match(entry)
    if match is None:
        if entry:
            leftovers.append(entry)
        return
    case = state.open_case(match.group("key"), match.group("kind"))
    case.status = match.group("status")


def _parse_fact(state: MemoState, case: Case, text: str) -> None:
    if not text:
        return
    for slot in _SLOTS_LONGEST_FIRST:
        if text.startswith(slot + " "):
            value = text[len(slot) + 1 :]
            case.facts.append(Fact(slot, value))
            if slot in _LINKED_ID_SLOTS:
                state.alias(value, case.key)
            return
    case.facts.append(Fact("note", text))


# Slots whose values are ids naming the same case (so a later mention finds it).
_LINKED_ID_SLOTS = frozenset(
    {
        "tracking",
        "ticket",
        "order",
        "replacement",
        "serial",
        "booking",
        "rma",
        "refund ref",
        "credit note",
    }
)


def linked_id_slot(slot: str) -> bool:
    return slot in _LINKED_ID_SLOTS


# --- rendering -------------------------------------------------------------------------------


@dataclass
class Layout:
    """How much of the state to show; `fit_memo` shrinks it step by step."""

    full_closed: set[str]
    compact_closed: list[str]
    open_cases: list[str]
    items: list[str]
    changes: list[str]
    hidden_facts: dict[str, int]


def _case_line(case: Case, hidden: int = 0) -> str:
    facts = case.ordered_facts()
    if hidden:
        facts = facts[: max(0, len(facts) - hidden)]
    line = f"- {case.kind} {case.key} ({case.status})"
    return f"{line}: {'; '.join(fact.render() for fact in facts)}" if facts else line


def render_memo(state: MemoState, layout: Layout | None = None) -> str:
    """The memo text of `state` (all of it unless a `layout` says what to show)."""
    layout = layout or full_layout(state)
    lines = []
    customer = state.customer.fields()
    if customer:
        lines.append(f"{CUSTOMER_HEADER} {'; '.join(customer)}")
    if layout.open_cases:
        lines.append(OPEN_HEADER)
        lines += [
            _case_line(state.cases[key], layout.hidden_facts.get(key, 0))
            for key in layout.open_cases
        ]
    full = [key for key in state.cases if key in layout.full_closed]
    if full:
        lines.append(CLOSED_HEADER)
        lines += [_case_line(state.cases[key]) for key in full]
    if layout.compact_closed:
        compact = "; ".join(
            f"{state.cases[key].kind} {key} ({state.cases[key].status})"
            for key in layout.compact_closed
        )
        lines.append(f"{CLOSED_EARLIER} {compact}")
    if layout.items:
        lines.append(ITEMS_HEADER)
        lines += [f"- {key}: {state.cases[key].item}" for key in layout.items]
    shown = set(layout.open_cases) | layout.full_closed | set(layout.compact_closed)
    # A change is worth a line only while the memo still shows its case.
    keys = tuple(state.cases)
    changes = [c for c in layout.changes if not _keys_named(c, keys).isdisjoint(shown)]
    if changes:
        lines.append(f"{CHANGED_HEADER} {'; '.join(changes)}")
    if state.focus in shown:
        lines.append(f"{FOCUS_HEADER} {state.cases[state.focus].kind} {state.focus}")
    return "\n".join(lines)


@lru_cache(maxsize=4096)
def _keys_named(text: str, keys: tuple[str, ...]) -> frozenset[str]:
    """The ``keys`` that ``text`` names (not inside a longer word or id). Cached: ``fit_memo``
    renders a memo dozens of times with the same changes, and searching every change for
    every key on each rendering was most of a memo write's time."""
    return frozenset(
        key for key in keys if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", text)
    )


def full_layout(state: MemoState) -> Layout:
    closed = [key for key, case in state.cases.items() if case.closed]
    open_keys = [key for key, case in state.cases.items() if not case.closed]
    return Layout(
        full_closed=set(closed),
        compact_closed=[],
        open_cases=open_keys,
        items=[key for key in open_keys if state.cases[key].item],
        changes=list(state.changes),
        hidden_facts={},
    )


def _shrink_steps(state: MemoState, layout: Layout) -> Iterator[Callable[[], bool]]:
    """The ways to make the memo shorter, in the order they are tried; each returns False
    once it has nothing left to take."""

    def compact_a_closed_case() -> bool:
        for key in state.cases:
            if key in layout.full_closed:
                layout.full_closed.discard(key)
                layout.compact_closed.append(key)
                return True
        return False

    def shorten_changes() -> bool:
        if len(layout.changes) > 2:
            layout.changes.pop()
            return True
        return False

    def drop_oldest_closed_case() -> bool:
        if layout.compact_closed:
            layout.compact_closed.pop(0)
            return True
        return False

    def drop_changes() -> bool:
        if layout.changes:
            layout.changes.clear()
            return True
        return False

    def drop_an_open_item() -> bool:
        if layout.items:
            layout.items.pop(0)
            return True
        return False

    def hide_a_minor_fact() -> bool:
        # The least important fact of the open case with the most facts left, oldest first.
        candidates = [
            (len(state.cases[key].facts) - layout.hidden_facts.get(key, 0), -index, key)
            for index, key in enumerate(layout.open_cases)
        ]
        shown, _, key = max(candidates, default=(0, 0, ""))
        if shown <= 0:
            return False
        layout.hidden_facts[key] = layout.hidden_facts.get(key, 0) + 1
        return True

    def drop_oldest_open_case() -> bool:
        if layout.open_cases:
            key = layout.open_cases.pop(0)
            if key in layout.items:
                layout.items.remove(key)
            return True
        return False

    yield compact_a_closed_case
    yield shorten_changes
    yield drop_oldest_closed_case
    yield drop_changes
    yield drop_an_open_item
    yield hide_a_minor_fact
    yield drop_oldest_open_case


def fit_memo(state: MemoState, max_tokens: int) -> str:
    """The fullest rendering of `state` within `max_tokens` tokens ("" if even the customer
    line does not fit). Deterministic."""
    layout = full_layout(state)
    text = render_memo(state, layout)
    for step in _shrink_steps(state, layout):
        while count_tokens(text) > max_tokens and step():
            text = render_memo(state, layout)
    if count_tokens(text) <= max_tokens:
        return text
    # Only the customer line is left and it is too long: cut it at a field boundary.
    lines = text.split("; ")
    while lines and count_tokens("; ".join(lines)) > max_tokens:
        lines.pop()
    return "; ".join(lines) if len(lines) > 1 else ""
