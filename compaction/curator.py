"""The curator: what part of a conversation path the model sees, within a token budget.

``curate`` is a pure function of (path, ready memos, budget, policy) -> ``Plan``: no Django, no
database, no clock, no I/O. The same inputs always give the same plan.

Costs are arithmetic on stored token counts: every turn and the memo render as one message and
cost ``tokens + policy.message_overhead``; ``Budget.system`` and ``Budget.retrieved`` arrive
with their overheads included (see ``convmem.tokens``). The plan guarantees::

    system + memo + anchor + retrieved + recent + reserve <= window

**Units.** An assistant turn that calls tools and the tool results after it are one unit: the
curator shows, summarises or drops a unit whole, so the model input never holds a tool call
without its results or a result without its call. Tool results at the start of the path whose
call lies before it (the bounded read stopped inside a unit) can never be shown.

**The budget is the trigger.** Levers, in order:

1. The whole history fits verbatim: everything is shown; nothing is summarised or dropped.
2. It fits once old bulky tool results are elided (``Turn.elided_tokens``: results before
   the current exchange -- the last unit opening with a user turn -- and, when that exchange
   is big, those outside the last ``min_recent_turns`` turns too, shown as a short marker;
   see ``_elision_end``): everything is shown so.
3. Otherwise the window is split, in blocks (the stable prefix). The memo shown is the ready
   memo ending *earliest* that stands before every turn after it: it costs at most a memo
   slot (``memo_max_tokens`` + overhead), ends before the last ``min_recent_turns`` turns,
   and with every turn after it verbatim fits the room (less the recall slot, see "Recall").
   The previous input's memo (``previous``) is kept while it still stands; when it does not
   (a block boundary), the memo shown is the one ending *latest* that stands. As the
   conversation grows the same memo keeps standing, so turn after turn the input starts with
   the same system prompt, memo and first verbatim turn, and the next input is the previous
   one plus its answer and the new turn: a provider's prompt cache can serve it. Only when
   the turns after the memo overflow does the input move to the next memo of the chain (a
   block boundary), which was asked for ahead of need, ending at the low-water mark.
4. When no memo stands so (the memo the path needs is late, or there is none yet), the
   recent turns take the longest suffix of units that fits the room a memo slot leaves (never
   fewer than the last ``min_recent_turns`` turns, when those fit at all); beside them goes
   the ready memo that ends latest and fits what is left or, when the path has no ready memo
   at all, the task statement (the conversation's first turn, if it is a user turn). Turns
   that neither the memo nor the recent turns show are dropped; those newer than the memo
   shown are ``Plan.lost`` (the input's ``memo_lag``) and the chain is extended (a request).

**A late memo does not lose the middle while the window can hold it**: whenever a ready memo
fits its slot and every turn after it fits beside it (the last ``min_recent_turns`` turns
outside it), it stands, and nothing newer than it is dropped (property-tested).

**A bigger window never shows less.** Without a previous prefix (a thread's first input, as
every input of curator/3) the choice is monotone in the window: a bigger window lets every
memo that stands in a smaller one stand (and so an earlier one, with more verbatim turns), and
the fallback's recent turns reach at least as far back as any memo that could stand (they fit
the room a memo of the slot's size leaves), so it never shows fewer original turns. With a
previous prefix, stability wins over that: the memo kept, or at a block boundary the memo
ending latest that stands, may end later in a bigger window (a later, bigger memo stands there
and not in the smaller one), so turns the smaller window shows verbatim are then in the bigger
window's memo -- never left out: every turn a smaller window shows verbatim, a bigger one
shows verbatim or summarised by its memo (both property-tested). No rule can keep both: any
rule that prefers a later memo to an earlier standing one shows fewer verbatim turns wherever
a bigger window lets the later one stand.

**Memos are requested ahead of need** (see ``curate`` for the rule) as rolling state: each
request extends the newest ready memo on the path with the next segment of turns, at most
``policy.segment_tokens`` of them, so a memo writer never reads more than one memo and one
bounded segment. ``goal_id`` says how far the chain should reach; the writer requests the
following segments itself. Since the memo shown changes only at block boundaries, a request is
made about once per block, not once per few turns.

**A fast thread asks earlier** (``lead_messages``): the messages that came to the thread while
its last memo was being written (the caller knows; 0 for a thread at a human pace). A memo asked
for at the high-water mark is needed once the verbatim room overflows, about
``(1 - high_water)`` x the room later; where turns come faster than memos are written (an agent
loop, a client replaying history), that is before the memo is ready, and the input must drop
turns newer than the memo shown. So the request is made when the turns after the newest memo,
plus what ``lead_messages`` more messages cost at the stretch's average, pass the high-water
mark. The memo covers the same turns as it would have (to the low-water mark of the moment it
is asked for); the turns that come while it is written are verbatim after the boundary, so a
fast thread's blocks are shorter by about that lead.

**Recall.** When the history does not fit, the caller may pass ``recalled``: older turns that
match the current turn (found by a full-text index), best first. The curator then keeps a
recall slot of ``recall_slot(available)`` tokens free of recent turns (the memo slot is not
touched: the memo stays the stable account of the history, recall adds to it) and places the
candidates in rank order, each as one message, skipping any already shown (recent turns,
anchor) and any that does not fit the room the plan left, never more than
``policy.recall_max_tokens`` in all. Memo requests reckon with the smaller verbatim room. The
recall slot is kept whenever recall is on and the history does not fit, whether or not this
turn has candidates, so that the stable prefix does not move with them (unless keeping it
would cost the middle or move the input back to a memo ending earlier: that input goes
without recall, see ``curate``). The caller renders
the recalled turns (and retrieved items) after the stable history, before the current turn.
The budget becomes::

    system + memo + anchor + recalled + retrieved + recent + reserve <= window
"""

from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, replace
from itertools import accumulate
from math import floor

VERSION = "curator/5"
# Versions whose records can still be replayed (rendered from their stored items): curator/1
# and curator/2 grew one memo from the first message; curator/3 slid the verbatim window by
# one turn every turn and had no recall; curator/4 kept the stable prefix as this one does but
# elided a bulky tool result when it left the last ``min_recent_turns`` turns (in the middle
# of the input, so a prompt cache lost the turns after it) and at a block boundary moved to the
# memo ending earliest that stands (a chain's first segment, so a shorter block). None of them
# runs any more.
KNOWN_VERSIONS = ("curator/1", "curator/2", "curator/3", "curator/4", VERSION)
TASK_ROLE = "user"
# The most of the available budget the memo slot (and the recall slot) may take: in a small
# window the memo is written smaller, so the verbatim turns keep three quarters.
SLOT_SHARE = 0.25
TOOL_ROLE = "tool"


class BudgetTooSmall(ValueError):
    """The current turn (its whole unit) does not fit next to the system section, retrieved
    and reserve."""

    def __init__(
        self, *, window: int, reserve: int, system: int, retrieved: int, current_turn: int
    ) -> None:
        self.window = window
        self.reserve = reserve
        self.system = system
        self.retrieved = retrieved
        self.current_turn = current_turn
        self.needed = system + retrieved + current_turn + reserve
        self.shortfall = self.needed - window
        super().__init__(self._arithmetic())

    def _arithmetic(self) -> str:
        terms = [f"system {self.system}"]
        if self.retrieved:
            terms.append(f"retrieved {self.retrieved}")
        terms += [f"current turn {self.current_turn}", f"reserve {self.reserve}"]
        return f"{' + '.join(terms)} = {self.needed} > window {self.window}"


class UnknownCuratorVersion(LookupError):
    """No curator is known under that version string."""


def _require_non_negative(**values: int) -> None:
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message on the path; ``tokens`` is its stored count (no per-message overhead).

    ``elided_tokens``: for a bulky tool result, what its elided form (a marker) costs; None if
    it is never elided.
    """

    id: int
    role: str
    tokens: int
    elided_tokens: int | None = None

    def __post_init__(self) -> None:
        _require_non_negative(tokens=self.tokens)
        if self.elided_tokens is not None:
            _require_non_negative(elided_tokens=self.elided_tokens)


@dataclass(frozen=True, slots=True)
class Memo:
    """A ready memo standing for the contiguous path range ``first_id`` … ``last_id``.

    ``tokens`` is its stored content count; it renders as one message. ``last_id`` must lie on
    the given path or the memo is ignored; ``first_id`` may precede the path (the caller's read
    is bounded), and the memo then stands for the path from its start.
    """

    id: int
    first_id: int
    last_id: int
    tokens: int

    def __post_init__(self) -> None:
        _require_non_negative(tokens=self.tokens)


@dataclass(frozen=True, slots=True)
class Budget:
    """Token budget of one model input.

    ``system`` and ``retrieved`` already include their message overheads (``system`` also the
    reply priming); ``reserve`` is kept free for the model's answer.
    """

    window: int
    reserve: int
    system: int = 0
    retrieved: int = 0

    def __post_init__(self) -> None:
        _require_non_negative(
            window=self.window, reserve=self.reserve, system=self.system, retrieved=self.retrieved
        )

    @property
    def available(self) -> int:
        """Tokens left for memo, anchor and recent turns (negative when nothing fits)."""
        return self.window - self.reserve - self.system - self.retrieved


@dataclass(frozen=True, slots=True)
class Policy:
    """How a model profile curates.

    ``min_recent_turns`` (>= 1) turns are kept verbatim when they fit. The memo slot is
    ``memo_max_tokens`` (+ overhead), at most ``SLOT_SHARE`` of the available budget; a slot
    smaller than ``min_memo_tokens`` is not worth a memo. ``recall_max_tokens`` caps the
    recalled section (overheads included; 0: recall off); its slot is at most ``SLOT_SHARE``
    of the available budget too. A memo is requested once the
    turns after the newest memo pass ``high_water`` (0 < hw <= 1) of the verbatim room,
    reaching to where ``low_water`` (0 <= lw < hw) of the room is left after it: the block's
    marks. One request covers at most ``segment_tokens`` of new turns (what a memo writer can read
    next to the previous memo). ``message_overhead`` equals
    ``convmem.tokens.MESSAGE_OVERHEAD`` for cl100k chat models.
    """

    min_recent_turns: int = 4
    memo_max_tokens: int = 512
    high_water: float = 0.85
    low_water: float = 0.1
    message_overhead: int = 4
    segment_tokens: int = 8192
    min_memo_tokens: int = 96
    recall_max_tokens: int = 0

    def __post_init__(self) -> None:
        if self.min_recent_turns < 1:
            raise ValueError(f"min_recent_turns must be >= 1, got {self.min_recent_turns}")
        if not 0 < self.high_water <= 1:
            raise ValueError(f"high_water must be in (0, 1], got {self.high_water}")
        if not 0 <= self.low_water < self.high_water:
            raise ValueError(
                f"low_water must be in [0, high_water), got {self.low_water} "
                f"(high_water {self.high_water})"
            )
        if self.segment_tokens < 1:
            raise ValueError(f"segment_tokens must be >= 1, got {self.segment_tokens}")
        _require_non_negative(
            memo_max_tokens=self.memo_max_tokens,
            message_overhead=self.message_overhead,
            min_memo_tokens=self.min_memo_tokens,
            recall_max_tokens=self.recall_max_tokens,
        )


@dataclass(frozen=True, slots=True)
class Prefix:
    """Where an input's stable prefix ends: the memo it showed (None: none) and its first
    verbatim turn."""

    memo_id: int | None
    first_id: int


@dataclass(frozen=True, slots=True)
class MemoRequest:
    """The memo to write next: it stands for ``first_id`` … ``last_id``.

    It extends ``base_memo_id`` (which stands for ``first_id`` … the turn before
    ``segment_first_id``) with the turns ``new_ids`` = ``segment_first_id`` … ``last_id``, in
    path order; without a base it is written from ``new_ids`` alone (``first_id`` =
    ``segment_first_id``). ``goal_id`` is where the chain should end; past ``last_id`` the
    writer requests the next segments. ``max_tokens`` is the memo's size (header included).
    """

    first_id: int
    segment_first_id: int
    last_id: int
    base_memo_id: int | None
    new_ids: tuple[int, ...]
    goal_id: int
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Tokens:
    """Per-section costs; ``total`` excludes ``reserve`` and ``total + reserve <= window``."""

    window: int
    reserve: int
    system: int
    memo: int
    anchor: int
    retrieved: int
    recent: int
    total: int
    recalled: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    """What the model sees, as ids.

    ``covered`` (path turns the memo stands for and that are not shown verbatim), ``anchor``
    (the task statement, when it is on the path), ``recent`` (a suffix of whole units ending
    with the current turn) and ``dropped`` partition the path, each in path order. The anchor
    may instead be the ``head`` turn, which is not on the path. ``elided`` lists the recent
    tool results shown as a marker. ``lost`` is the part of ``dropped`` newer than the memo
    shown (all of it when no memo is shown): the middle of the conversation, which nothing
    in the input stands for because the memo that would is late (or could not fit).
    ``recalled`` (in id order, which is path order) are older turns shown as excerpts: never a
    recent or anchor turn; one on the given path stays in ``covered`` or ``dropped`` too (it
    lost its place in the conversation, not its content). ``current`` is the current unit
    (the end of ``recent``): what the input answers, placed after anything that changes every
    turn.
    """

    version: str
    memo: Memo | None
    covered: tuple[int, ...]
    anchor: tuple[int, ...]
    recent: tuple[int, ...]
    dropped: tuple[int, ...]
    elided: tuple[int, ...]
    lost: tuple[int, ...]
    request: MemoRequest | None
    tokens: Tokens
    recalled: tuple[int, ...] = ()
    current: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Unit:
    """Path indices ``start`` … ``end`` shown or hidden together; ``orphan`` when its tool
    results lost their call (they start the path)."""

    start: int
    end: int
    orphan: bool


def split_units(path: Sequence[Turn]) -> list[Unit]:
    """The path cut into units: a tool result joins the unit before it."""
    units: list[Unit] = []
    for index, turn in enumerate(path):
        if turn.role == TOOL_ROLE and units:
            last = units[-1]
            units[-1] = Unit(last.start, index, last.orphan)
        else:
            units.append(Unit(index, index, turn.role == TOOL_ROLE))
    return units


def memo_slot(available: int, policy: Policy) -> int:
    """Tokens set aside for the memo (or the task statement) when the history does not fit:
    the memo's size plus its overhead, at most ``SLOT_SHARE`` of ``available``."""
    share = floor(SLOT_SHARE * max(available, 0))
    return max(0, min(policy.memo_max_tokens + policy.message_overhead, share))


def recall_slot(available: int, policy: Policy) -> int:
    """Tokens set aside for recalled turns when the history does not fit:
    ``recall_max_tokens``, at most ``SLOT_SHARE`` of ``available``."""
    share = floor(SLOT_SHARE * max(available, 0))
    return max(0, min(policy.recall_max_tokens, share))


def curate(
    path: Sequence[Turn],
    memos: Sequence[Memo],
    budget: Budget,
    policy: Policy,
    *,
    head: Turn | None = None,
    recalled: Sequence[Turn] = (),
    previous: Prefix | None = None,
    lead_messages: int = 0,
) -> Plan:
    """Lay out the model input for ``path`` within ``budget``, with room for ``recalled``
    candidates (best first; see "Recall" in the module docstring) when the history does not
    fit. Otherwise as ``curate_history``; ``previous`` is the stable prefix of the thread's
    previous input, if any (its memo is kept while it stands); ``lead_messages``: see "A fast
    thread asks earlier" in the module docstring."""
    layout = _Layout.of(path, budget, policy, head)
    plan = _curated(layout, memos, previous, lead_messages)
    if policy.recall_max_tokens == 0 or not _history_hidden(plan, head):
        return plan
    # The same path and costs, with the recall slot kept from the recent turns.
    base = _curated(
        layout.keeping(recall_slot(budget.available, policy)), memos, previous, lead_messages
    )
    if plan.memo is not None and not plan.lost and base.lost:
        return plan  # recall never costs the middle between a memo and the recent turns
    if len(base.recent) > len(plan.recent):
        # Recall takes room from the oldest recent turns, never from the memo: at a block
        # boundary the memo ending latest that stands is shown, and with the recall slot kept
        # a bigger memo may no longer stand where an earlier, smaller one does -- which would
        # move the input back to the earlier memo. Then this input goes without recall.
        return plan
    return _with_recalled(base, budget, policy, recalled) or base


def _history_hidden(plan: Plan, head: Turn | None) -> bool:
    """Whether some of the history is not shown verbatim (so recall has something to do)."""
    return bool(plan.dropped or plan.covered or head is not None)


def _with_recalled(
    base: Plan, budget: Budget, policy: Policy, candidates: Sequence[Turn]
) -> Plan | None:
    """``base`` (planned with the recall slot kept from the recent turns) with the candidates
    that fit placed, in rank order, within the room ``base`` left and ``recall_max_tokens``;
    None when none fits."""
    spent = base.tokens.total
    room = min(policy.recall_max_tokens, budget.window - budget.reserve - spent)
    taken: set[int] = {*base.recent, *base.anchor}
    placed: list[int] = []
    cost = 0
    for turn in candidates:
        turn_cost = turn.tokens + policy.message_overhead
        if turn.id in taken or cost + turn_cost > room:
            continue
        taken.add(turn.id)
        placed.append(turn.id)
        cost += turn_cost
    if not placed:
        return None
    tokens = replace(base.tokens, recalled=cost, total=spent + cost)
    return replace(base, recalled=tuple(sorted(placed)), tokens=tokens)


def curate_history(
    path: Sequence[Turn],
    memos: Sequence[Memo],
    budget: Budget,
    policy: Policy,
    *,
    head: Turn | None = None,
    recall_room: int = 0,
    previous: Prefix | None = None,
    lead_messages: int = 0,
) -> Plan:
    """Lay out the model input for ``path`` within ``budget`` (see the module docstring).
    ``recall_room``: tokens the recent turns leave free for recalled turns when the history
    does not fit (the memo slot is not touched; see ``curate``). ``lead_messages``: messages
    expected while a memo is written (asks for it earlier; see the module docstring).

    ``path`` is a non-empty run of turns in root -> leaf order with unique ids: a contiguous
    suffix of the thread's real path whose last unit is the current one (always shown whole,
    never elided). ``head`` is the real path's first turn when it is not in ``path``.
    ``memos`` are ready memos only. Raises ``BudgetTooSmall`` if the current unit cannot fit.

    A memo is requested when history is being lost (something the newest memo does not
    stand for is dropped), or ahead of need: when the turns after the newest memo (all
    turns, without one), plus ``lead_messages`` at their average cost, cost more than
    ``high_water`` x the verbatim room (available less the memo and recall slots) and the
    request would absorb at least ``(1 - high_water)`` x that room. The requested chain ends
    where the turns after it cost about ``low_water`` x the room (never inside the last
    ``min_recent_turns`` turns). Once the memo shown overflows, the input moves to that memo:
    the turns after it then cost about ``(1 - high_water + low_water)`` x the room, and a
    block is about ``(high_water - low_water)`` x the room. No memo is requested when the slot
    is smaller than ``min_memo_tokens``.
    """
    return _curated(
        _Layout.of(path, budget, policy, head, recall_room), memos, previous, lead_messages
    )


def _curated(
    layout: "_Layout", memos: Sequence[Memo], previous: Prefix | None, lead_messages: int
) -> Plan:
    """``curate_history`` on a path already laid out."""
    placed = layout.placed_memos(memos)
    kept = layout.still_standing(placed, previous)
    if layout.history_fits(elide=False):
        plan = layout.everything(elide=False)
    elif kept is not None:
        plan = layout.stable(kept)
    elif layout.history_fits(elide=True):
        plan = layout.everything(elide=True)
    else:
        plan = layout.split(placed, boundary=previous is not None)
    return _with_request(plan, layout, memos, lead_messages)


@dataclass(frozen=True, slots=True)
class _Sections:
    memo: Memo | None
    memo_start: int
    memo_end: int
    anchor: Turn | None
    recent_start: int
    elide: bool


class _Layout:
    """The path with its units and costs for one budget; builds the candidate plans."""

    def __init__(
        self,
        path: Sequence[Turn],
        budget: Budget,
        policy: Policy,
        head: Turn | None,
        units: list[Unit],
        elidable: frozenset[int],
    ) -> None:
        self.path = path
        self.budget = budget
        self.policy = policy
        self.head = head
        self.units = units
        self.elidable = elidable
        self.available = budget.available
        self.recall_room = 0  # kept from the recent turns for recalled ones (see ``curate``)
        # The most a memo may cost to stand in front of the verbatim turns (see ``split``).
        self.memo_cap = policy.memo_max_tokens + policy.message_overhead
        self.position = {turn.id: index for index, turn in enumerate(path)}
        overhead = policy.message_overhead
        full = [turn.tokens + overhead for turn in path]
        shown = [
            (turn.elided_tokens if index in elidable else turn.tokens) + overhead
            for index, turn in enumerate(path)
        ]
        # Running sums of the costs, so any stretch's cost is one subtraction.
        self.sums = {False: [0, *accumulate(full)], True: [0, *accumulate(shown)]}

    @classmethod
    def of(
        cls,
        path: Sequence[Turn],
        budget: Budget,
        policy: Policy,
        head: Turn | None,
        recall_room: int = 0,
    ) -> "_Layout":
        _check_path(path, head)
        units = split_units(path)
        if units[-1].orphan:
            raise ValueError("the path must include the assistant turn the current results answer")
        elide_end = _elision_end(path, units, budget.available, policy)
        elidable = frozenset(
            index
            for index, turn in enumerate(path[:elide_end])
            if turn.role == TOOL_ROLE and turn.elided_tokens is not None
        )
        layout = cls(path, budget, policy, head, units, elidable)
        layout.recall_room = recall_room
        current = layout.unit_cost(units[-1], elide=False)
        if current > layout.available:
            raise BudgetTooSmall(
                window=budget.window,
                reserve=budget.reserve,
                system=budget.system,
                retrieved=budget.retrieved,
                current_turn=current,
            )
        return layout

    def keeping(self, recall_room: int) -> "_Layout":
        """This layout with ``recall_room`` tokens kept from the recent turns (the path, its
        units and costs are the same)."""
        kept = copy(self)
        kept.recall_room = recall_room
        return kept

    def span_cost(self, start: int, end: int, *, elide: bool) -> int:
        """The cost of the turns ``start`` … ``end`` (elided where they may be, if ``elide``)."""
        sums = self.sums[elide]
        return sums[end + 1] - sums[start]

    def unit_cost(self, unit: Unit, *, elide: bool) -> int:
        return self.span_cost(unit.start, unit.end, elide=elide)

    def history_fits(self, *, elide: bool) -> bool:
        if self.head is not None or self.units[0].orphan:
            return False
        return self.span_cost(0, len(self.path) - 1, elide=elide) <= self.available

    def everything(self, *, elide: bool) -> Plan:
        return self._plan(_Sections(None, 0, -1, None, 0, elide))

    def split(self, placed: list[tuple[Memo, int, int]], *, boundary: bool = False) -> Plan:
        """The memo ending earliest that stands before every turn after it or, at a block
        ``boundary`` (the previous input's prefix no longer stands), the one ending latest: the
        chain was asked for to end at the low-water mark, and its earlier segments' memos
        would start a shorter block; else the fallback."""
        standing = [p for p in placed if self._stands(*p)]
        if boundary:
            chosen = max(standing, key=lambda p: (p[2], p[0].id), default=None)
        else:
            chosen = min(standing, key=lambda p: (p[2], p[1], p[0].id), default=None)
        if chosen is not None:
            return self.stable(chosen)
        return self._fallback(placed)

    def stable(self, placed: tuple[Memo, int, int]) -> Plan:
        """``placed``'s memo with every turn after it verbatim."""
        memo, start, end = placed
        return self._plan(_Sections(memo, start, end, None, end + 1, True))

    def still_standing(
        self, placed: list[tuple[Memo, int, int]], previous: Prefix | None
    ) -> tuple[Memo, int, int] | None:
        """The previous input's memo, if it can still stand before every turn after it.

        Without this an agent's inputs would flip between memos (or between a memo and the
        whole history elided): the turns after a memo cost *less* once a bulky tool result
        leaves the last turns and is elided, or when the current turn is small, so a memo
        given up on one turn would fit again on the next. Keeping the previous one while it
        stands makes the choice move forward only, once per block."""
        if previous is None or previous.memo_id is None:
            return None
        kept = next((p for p in placed if p[0].id == previous.memo_id), None)
        if kept is None or self.position.get(previous.first_id) != kept[2] + 1:
            return None
        return kept if self._stands(*kept) else None

    def _stands(self, memo: Memo, start: int, end: int) -> bool:
        """``memo`` can be shown with every turn after it verbatim: it costs no more than a memo
        slot, ends before the last ``min_recent_turns`` turns, and the whole fits the room
        the recall slot leaves."""
        floor_start = _floor_start(self.units, len(self.path), self.policy.min_recent_turns)
        cost = self._memo_cost(memo)
        return (
            end + 1 <= floor_start
            and cost <= self.memo_cap
            and cost + self.cost_from(end + 1) <= self.available - self.recall_room
        )

    def _fallback(self, placed: list[tuple[Memo, int, int]]) -> Plan:
        """No memo stands: the recent turns take the room a memo of the slot's size (and the
        recall slot) leave; beside them the memo ending latest that fits what is left, else
        the task statement."""
        recent_start = self._recent_start(self.available - self.memo_cap - self.recall_room)
        left = self.available - self.cost_from(recent_start)
        memo = max(
            (p for p in placed if self._memo_cost(p[0]) <= left),
            key=lambda p: (p[2], p[0].id),
            default=None,
        )
        if memo is None:
            slot = memo_slot(self.available, self.policy)
            anchor = None if placed else self._anchor(recent_start, min(slot, left))
            return self._plan(_Sections(None, 0, -1, anchor, recent_start, True))
        return self._plan(_Sections(memo[0], memo[1], memo[2], None, recent_start, True))

    def _memo_cost(self, memo: Memo) -> int:
        return memo.tokens + self.policy.message_overhead

    def placed_memos(self, memos: Sequence[Memo]) -> list[tuple[Memo, int, int]]:
        """Memos ending on the path at the end of a unit before the current one: (memo, start
        index, end index). (This curator never asks for a memo ending inside a unit.)"""
        ends = {unit.end for unit in self.units[:-1]}
        placed = []
        for memo in memos:
            end = self.position.get(memo.last_id)
            start = self.position.get(memo.first_id, 0)  # a first_id off the path lies before it
            if end in ends and start <= end:
                placed.append((memo, start, end))
        return placed

    def cost_from(self, start: int) -> int:
        return self.span_cost(start, len(self.path) - 1, elide=True)

    def _recent_start(self, room: int) -> int:
        """The start of the longest suffix of whole units fitting ``room`` (elided costs), or
        of the last ``min_recent_turns`` turns' units that fit ``available``, if longer."""
        start = self._suffix_start(room)
        floor_start = _floor_start(self.units, len(self.path), self.policy.min_recent_turns)
        return min(start, max(floor_start, self._suffix_start(self.available)))

    def _suffix_start(self, room: int) -> int:
        start = self.units[-1].start
        spent = self.unit_cost(self.units[-1], elide=True)
        for unit in reversed(self.units[:-1]):
            cost = self.unit_cost(unit, elide=True)
            if unit.orphan or spent + cost > room:
                break
            spent += cost
            start = unit.start
        return start

    def _anchor(self, recent_start: int, room: int) -> Turn | None:
        """The task statement, in the slot when the path has no memo: the real first turn (the
        head, or the path's first turn), if it is a user turn not shown and it fits."""
        if self.head is not None:
            task = self.head
        elif recent_start > 0 and not self.units[0].orphan:
            task = self.path[0]
        else:
            return None
        fits = task.tokens + self.policy.message_overhead <= room
        return task if task.role == TASK_ROLE and fits else None

    def _plan(self, sections: _Sections) -> Plan:
        path = self.path
        recent = range(sections.recent_start, len(path))
        covered = range(sections.memo_start, min(sections.memo_end + 1, sections.recent_start))
        anchor_index = 0 if sections.anchor is not None and self.head is None else None
        shown = set(recent) | set(covered) | ({anchor_index} if anchor_index is not None else set())
        memo_cost = sections.memo.tokens + self.policy.message_overhead if sections.memo else 0
        anchor_cost = (
            sections.anchor.tokens + self.policy.message_overhead if sections.anchor else 0
        )
        recent_cost = self.span_cost(sections.recent_start, len(path) - 1, elide=sections.elide)
        dropped = [i for i in range(len(path)) if i not in shown]
        memo_end = sections.memo_end if sections.memo else -1
        return Plan(
            version=VERSION,
            memo=sections.memo,
            covered=tuple(path[i].id for i in covered),
            anchor=(sections.anchor.id,) if sections.anchor else (),
            recent=tuple(path[i].id for i in recent),
            dropped=tuple(path[i].id for i in dropped),
            elided=tuple(path[i].id for i in recent if sections.elide and i in self.elidable),
            lost=tuple(path[i].id for i in dropped if i > memo_end),
            request=None,
            tokens=_tokens(self.budget, memo_cost, anchor_cost, recent_cost),
            current=tuple(turn.id for turn in path[self.units[-1].start :]),
        )


def _elision_end(
    path: Sequence[Turn], units: Sequence[Unit], available: int, policy: Policy
) -> int:
    """Where the turns whose bulky tool results may be elided end: the start of the current
    exchange (the last unit that opens with a user turn), so a result is shown whole while its
    exchange runs and as its marker from the next user turn on -- an elision then changes the
    input only just before the new turn, where a prompt cache loses little. When the current
    exchange shown whole would take more than half of ``available``, the results outside the
    last ``min_recent_turns`` turns are elided too (those of the exchange's older steps): the
    end is the later of the two, so every result before the exchange is elided in either case
    and the next user turn, whichever case it falls in, elides only results of this exchange.
    A path holding no user turn elides the results outside the last turns."""
    floor_start = _floor_start(units, len(path), policy.min_recent_turns)
    start = next((u.start for u in reversed(units) if path[u.start].role == TASK_ROLE), None)
    if start is None:
        return floor_start
    overhead = policy.message_overhead
    exchange = sum(turn.tokens + overhead for turn in path[start:])
    return start if 2 * exchange <= available else max(start, floor_start)


def _floor_start(units: Sequence[Unit], length: int, min_recent: int) -> int:
    """The start of the units holding the last ``min_recent`` turns."""
    wanted = max(0, length - min_recent)
    for unit in reversed(units):
        if unit.start <= wanted:
            return unit.start if not unit.orphan else unit.end + 1
    return 0


def _check_path(path: Sequence[Turn], head: Turn | None) -> None:
    if not path:
        raise ValueError("path must contain at least the current turn")
    ids = {turn.id for turn in path}
    if len(ids) != len(path):
        raise ValueError("path turn ids must be unique")
    if head is not None and head.id in ids:
        raise ValueError(f"head {head.id} is on the path; pass it only when the path omits it")


def _with_request(plan: Plan, layout: _Layout, memos: Sequence[Memo], lead_messages: int) -> Plan:
    request = _memo_request(plan, layout, memos, lead_messages)
    return plan if request is None else replace(plan, request=request)


def _memo_request(
    plan: Plan, layout: _Layout, memos: Sequence[Memo], lead_messages: int
) -> MemoRequest | None:
    """The next memo of the chain, or None (the rule is in ``curate_history``)."""
    policy = layout.policy
    slot = memo_slot(layout.available, policy)
    if slot - policy.message_overhead < policy.min_memo_tokens:
        return None
    placed = layout.placed_memos(memos)
    base = max(placed, key=lambda p: (p[2], p[0].id), default=None)
    base_end = base[2] if base else -1
    units = [u for u in layout.units[:-1] if u.start > base_end and not u.orphan]
    if not units:
        return None
    costs = [layout.unit_cost(u, elide=True) for u in units]
    verbatim_room = layout.available - slot - layout.recall_room
    goal = _goal_index(units, costs, layout, verbatim_room=verbatim_room)
    if goal < 0:
        return None
    first_start = units[0].start
    lost = any(layout.position[i] > base_end for i in plan.dropped)
    unsummarised = layout.cost_from(first_start)
    summarisable = sum(costs[: goal + 1])
    # What the messages expected while the memo is written will cost, at the stretch's average.
    lead = lead_messages * unsummarised / (len(layout.path) - first_start)
    ahead = (
        unsummarised + lead > policy.high_water * verbatim_room
        and summarisable >= (1 - policy.high_water) * verbatim_room
    )
    if not (lost or ahead):
        return None
    path = layout.path
    last = first_start + next_segment(path[first_start : units[goal].end + 1], policy)
    new_ids = tuple(path[i].id for i in range(first_start, last + 1))
    return MemoRequest(
        first_id=base[0].first_id if base else path[first_start].id,
        segment_first_id=path[first_start].id,
        last_id=path[last].id,
        base_memo_id=base[0].id if base else None,
        new_ids=new_ids,
        goal_id=path[units[goal].end].id,
        max_tokens=slot - policy.message_overhead,
    )


def _goal_index(
    units: Sequence[Unit], costs: Sequence[int], layout: _Layout, *, verbatim_room: int
) -> int:
    """Index into ``units`` of the last unit a memo should stand for: the turns after it cost
    about ``low_water`` x the verbatim room (the block's low-water mark), and the last
    ``min_recent_turns`` turns stay out."""
    policy = layout.policy
    keep = policy.low_water * verbatim_room
    tail = layout.unit_cost(layout.units[-1], elide=True)
    floor_start = _floor_start(layout.units, len(layout.path), policy.min_recent_turns)
    goal = len(units) - 1
    while goal >= 0 and (units[goal].end >= floor_start or tail + costs[goal] <= keep):
        tail += costs[goal]
        goal -= 1
    return goal


def next_segment(turns: Sequence[Turn], policy: Policy) -> int:
    """Index into ``turns`` of the last turn of the next segment a memo writer reads.

    ``turns`` are what the memo chain has yet to cover, in path order, starting at a unit's
    start and outside the last ``min_recent_turns`` turns (so a bulky tool result counts at
    its elided size when it has one). The segment is the longest run of whole units from the
    start within ``policy.segment_tokens`` (each turn at its stored count plus the message
    overhead), and at least the first unit, however big (its writer trims it). The curator's
    requests and the memo writer's continuation of a chain (``compaction.services``) both
    size segments with this one function.
    """
    units = split_units(turns)
    overhead = policy.message_overhead
    spent, end = 0, -1
    for index, unit in enumerate(units):
        cost = sum(
            (turn.elided_tokens if _elidable(turn) else turn.tokens) + overhead
            for turn in turns[unit.start : unit.end + 1]
        )
        if index > 0 and spent + cost > policy.segment_tokens:
            break
        spent += cost
        end = unit.end
    return end


def _elidable(turn: Turn) -> bool:
    return turn.role == TOOL_ROLE and turn.elided_tokens is not None


def _tokens(budget: Budget, memo: int, anchor: int, recent: int) -> Tokens:
    return Tokens(
        window=budget.window,
        reserve=budget.reserve,
        system=budget.system,
        memo=memo,
        anchor=anchor,
        retrieved=budget.retrieved,
        recent=recent,
        total=budget.system + memo + anchor + budget.retrieved + recent,
    )


def check_version_known(version: str) -> None:
    """Raise ``UnknownCuratorVersion`` unless records of ``version`` can be replayed."""
    if version not in KNOWN_VERSIONS:
        raise UnknownCuratorVersion(f"no curator known as {version!r}")
