"""The curator: what part of a conversation path the model sees, within a token budget.

``curate`` is a pure function of (path, ready memos, budget, policy) -> ``Plan``: no Django, no
database, no clock, no I/O. The same inputs always give the same plan, so a recorded assembly
can be replayed; old versions stay runnable through ``CURATORS`` / ``get_curator``.

Costs are arithmetic on stored token counts. Every turn and the memo each render as one message
and cost ``tokens + policy.message_overhead``; ``Budget.system`` and ``Budget.retrieved`` arrive
with their overheads included (see ``compaction.tokens``). The plan guarantees::

    system + memo + anchor + retrieved + recent + reserve <= window

Levers, in order (when the history does not fit):

a. keep the last ``min_recent_turns`` turns verbatim, newest first, at least the current turn
   (``BudgetTooSmall`` when even that cannot fit);
b. use the newest ready memo that ends on the path before those turns and fits;
c. keep the task statement (the real path's first turn, when it is a user turn) verbatim if the
   memo and the recent turns do not already include it and it fits;
d. extend the recent turns backwards, verbatim, while they fit (never past the memo's end);
e. drop the rest: only history older than what the memo and recent turns show.

Render order is chronological: anchor, memo, recent (where retrieved material goes is the
assembler's choice). Memos are requested ahead of need; see ``curate`` for the exact rule.

Versions: ``curator/1`` ended each requested memo just before the last ``min_recent_turns``
turns, so right after a memo became ready the model saw little more than the memo and those
few turns. ``curator/2`` (the default) ends the memo earlier, leaving about half of the
high-water mark verbatim, so more of the window holds the original words.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

CURATOR_1 = "curator/1"
VERSION = "curator/2"
TASK_ROLE = "user"


class BudgetTooSmall(ValueError):
    """The current turn alone does not fit next to the system section, retrieved and reserve."""

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
    """No curator is registered under that version string."""


def _require_non_negative(**values: int) -> None:
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message on the path; ``tokens`` is its stored content count (no overhead)."""

    id: int
    role: str
    tokens: int

    def __post_init__(self) -> None:
        _require_non_negative(tokens=self.tokens)


@dataclass(frozen=True, slots=True)
class Memo:
    """A ready summary of the contiguous path range ``first_id`` … ``last_id`` (inclusive).

    ``tokens`` is its stored content count; it renders as one message. ``chain_depth`` is 0 for a
    memo written from originals and ``base.chain_depth + 1`` for one extending another memo.
    ``last_id`` must lie on the given path or the memo is ignored; ``first_id`` may precede the
    path (the caller's read is bounded), and the memo then covers the path from its start.
    """

    id: int
    first_id: int
    last_id: int
    tokens: int
    chain_depth: int

    def __post_init__(self) -> None:
        _require_non_negative(tokens=self.tokens, chain_depth=self.chain_depth)


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

    ``min_recent_turns`` (>= 1) turns are kept verbatim when they fit; a memo is requested once
    the unsummarised tail passes ``high_water`` (0 < hw <= 1) of the available budget.
    ``memo_max_tokens`` is the size the memo writer must stay under (the curator only reads
    memos' real sizes). ``message_overhead`` equals ``compaction.tokens.MESSAGE_OVERHEAD`` for
    cl100k chat models.
    """

    min_recent_turns: int = 4
    memo_max_tokens: int = 512
    high_water: float = 0.75
    message_overhead: int = 4

    def __post_init__(self) -> None:
        if self.min_recent_turns < 1:
            raise ValueError(f"min_recent_turns must be >= 1, got {self.min_recent_turns}")
        if not 0 < self.high_water <= 1:
            raise ValueError(f"high_water must be in (0, 1], got {self.high_water}")
        _require_non_negative(
            memo_max_tokens=self.memo_max_tokens,
            message_overhead=self.message_overhead,
        )


@dataclass(frozen=True, slots=True)
class MemoRequest:
    """The memo to write next, covering ``first_id`` … ``last_id`` of the path.

    ``base_memo_id`` is the memo it extends (the new memo's chain_depth is then the base's + 1),
    or None to write it from originals (chain_depth 0). ``new_ids`` are the path turns the writer
    must render besides the base memo: those after the base's last turn (or from the path's
    first turn) through ``last_id``, in path order.
    """

    first_id: int
    last_id: int
    base_memo_id: int | None
    new_ids: tuple[int, ...]


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


@dataclass(frozen=True, slots=True)
class Plan:
    """What the model sees, as ids.

    ``covered`` (the path turns the memo stands in for), ``anchor`` (the kept task statement),
    ``recent`` (a suffix of the path ending with the current turn) and ``dropped`` are in path
    order; covered, recent, dropped and the anchor when it is on the path partition the path.
    The anchor may instead be the ``head`` turn, which is not on the path.
    """

    version: str
    memo: Memo | None
    covered: tuple[int, ...]
    anchor: tuple[int, ...]
    recent: tuple[int, ...]
    dropped: tuple[int, ...]
    request: MemoRequest | None
    tokens: Tokens


class Curator(Protocol):
    """The signature every registered curator version keeps."""

    def __call__(
        self,
        path: Sequence[Turn],
        memos: Sequence[Memo],
        budget: Budget,
        policy: Policy,
        *,
        head: Turn | None = None,
    ) -> Plan: ...


class RequestEnd(Protocol):
    """Where a requested memo ends: an index into the path, given each turn's cost."""

    def __call__(self, costs: Sequence[int], available: int, policy: Policy) -> int: ...


@dataclass(frozen=True, slots=True)
class _PlacedMemo:
    """A usable memo with the path indices it covers (``start`` … ``end``) and its cost."""

    memo: Memo
    start: int
    end: int
    cost: int


def curate(
    path: Sequence[Turn],
    memos: Sequence[Memo],
    budget: Budget,
    policy: Policy,
    *,
    head: Turn | None = None,
) -> Plan:
    """Lay out the model input for ``path`` within ``budget`` (see the module docstring).

    ``path`` is a non-empty run of turns in root -> leaf order with unique ids: a contiguous
    suffix of the thread's real path whose last turn is the current one (always kept verbatim).
    ``head`` is the real path's first turn when it is not in ``path`` (the task statement).
    ``memos`` are ready summaries only. Raises ``BudgetTooSmall`` if the current turn cannot fit.

    A memo is requested when history is being lost (no memo is used and something is dropped)
    or ahead of need: when the turns after the used memo (all turns, without one) cost more than
    ``high_water`` x available and the request would summarise at least ``(1 - high_water)`` x
    available of them, so a long conversation asks for a memo about once per that many tokens,
    never once per turn. The requested range leaves the newest turns worth about
    ``high_water / 2`` x available verbatim (never fewer than ``min_recent_turns``) and must end
    after the used memo's last turn.
    """
    return _curate(path, memos, budget, policy, head, VERSION, _end_leaving_half_high_water)


def curate_v1(
    path: Sequence[Turn],
    memos: Sequence[Memo],
    budget: Budget,
    policy: Policy,
    *,
    head: Turn | None = None,
) -> Plan:
    """``curator/1``: as ``curate``, but a requested memo ends just before the last
    ``min_recent_turns`` turns. Kept runnable for assemblies recorded with it."""
    return _curate(path, memos, budget, policy, head, CURATOR_1, _end_before_recent_floor)


def _end_before_recent_floor(costs: Sequence[int], available: int, policy: Policy) -> int:
    return len(costs) - policy.min_recent_turns - 1


def _end_leaving_half_high_water(costs: Sequence[int], available: int, policy: Policy) -> int:
    """The last index a memo should cover so that the turns after it cost about
    ``high_water / 2`` x available: what stays verbatim once the memo is ready."""
    keep = policy.high_water / 2 * available
    end, tail = len(costs) - 1, 0
    while end >= 0 and tail + costs[end] <= keep:
        tail += costs[end]
        end -= 1
    return min(end, _end_before_recent_floor(costs, available, policy))


def _curate(
    path: Sequence[Turn],
    memos: Sequence[Memo],
    budget: Budget,
    policy: Policy,
    head: Turn | None,
    version: str,
    request_end: RequestEnd,
) -> Plan:
    _check_path(path, head)
    costs = [turn.tokens + policy.message_overhead for turn in path]
    floor_start, room = _keep_recent_floor(costs, budget, policy.min_recent_turns)
    memo = _choose_memo(path, memos, floor_start, room, policy.message_overhead)
    room -= memo.cost if memo else 0
    anchor = _choose_anchor(path, head, memo, floor_start, room, policy.message_overhead)
    anchor_cost = anchor.tokens + policy.message_overhead if anchor else 0
    anchor_on_path = anchor is not None and head is None
    lowest = max(memo.end + 1 if memo else 0, 1 if anchor_on_path else 0)
    recent_start, _ = _extend_backwards(costs, floor_start, lowest, room - anchor_cost)

    # (e) whatever neither the memo, the anchor nor the recent turns show is dropped
    covered = range(memo.start, memo.end + 1) if memo else range(0)
    shown = set(covered) | set(range(recent_start, len(path))) | ({0} if anchor_on_path else set())
    dropped = tuple(turn.id for index, turn in enumerate(path) if index not in shown)
    return Plan(
        version=version,
        memo=memo.memo if memo else None,
        covered=tuple(path[index].id for index in covered),
        anchor=(anchor.id,) if anchor else (),
        recent=tuple(turn.id for turn in path[recent_start:]),
        dropped=dropped,
        request=_memo_request(
            path,
            costs,
            memo,
            bool(dropped),
            budget.available,
            policy,
            request_end(costs, budget.available, policy),
        ),
        tokens=_tokens(budget, memo, anchor_cost, sum(costs[recent_start:])),
    )


def _check_path(path: Sequence[Turn], head: Turn | None) -> None:
    if not path:
        raise ValueError("path must contain at least the current turn")
    ids = {turn.id for turn in path}
    if len(ids) != len(path):
        raise ValueError("path turn ids must be unique")
    if head is not None and head.id in ids:
        raise ValueError(f"head {head.id} is on the path; pass it only when the path omits it")


def _keep_recent_floor(costs: Sequence[int], budget: Budget, min_recent: int) -> tuple[int, int]:
    """(a) Keep the current turn and up to ``min_recent - 1`` before it; return (start, room)."""
    current = costs[-1]
    if current > budget.available:
        raise BudgetTooSmall(
            window=budget.window,
            reserve=budget.reserve,
            system=budget.system,
            retrieved=budget.retrieved,
            current_turn=current,
        )
    last = len(costs) - 1
    return _extend_backwards(
        costs, last, max(0, len(costs) - min_recent), budget.available - current
    )


def _extend_backwards(costs: Sequence[int], start: int, lowest: int, room: int) -> tuple[int, int]:
    """Grow the verbatim suffix ``costs[start:]`` down to ``lowest`` while the next turn fits.

    Stops at the first turn that does not fit, so the result stays a contiguous suffix.
    Returns the new start and the room left.
    """
    while start > lowest and costs[start - 1] <= room:
        start -= 1
        room -= costs[start]
    return start, room


def _choose_memo(
    path: Sequence[Turn], memos: Sequence[Memo], floor_start: int, room: int, overhead: int
) -> _PlacedMemo | None:
    """(b) The memo ending latest before the kept recent turns that fits (newest id on ties)."""
    position = {turn.id: index for index, turn in enumerate(path)}
    usable = []
    for memo in memos:
        end = position.get(memo.last_id)
        start = position.get(memo.first_id, 0)  # a first_id off the path lies before it
        cost = memo.tokens + overhead
        if end is not None and start <= end < floor_start and cost <= room:
            usable.append(_PlacedMemo(memo=memo, start=start, end=end, cost=cost))
    return max(usable, key=lambda placed: (placed.end, placed.memo.id), default=None)


def _choose_anchor(
    path: Sequence[Turn],
    head: Turn | None,
    memo: _PlacedMemo | None,
    floor_start: int,
    room: int,
    overhead: int,
) -> Turn | None:
    """(c) The task statement, if it is a user turn not otherwise shown and it fits."""
    task = head if head is not None else path[0]
    if task.role != TASK_ROLE or task.tokens + overhead > room:
        return None
    if _task_already_shown(head, memo, floor_start):
        return None
    return task


def _task_already_shown(head: Turn | None, memo: _PlacedMemo | None, floor_start: int) -> bool:
    """Whether the memo or the recent turns already include the task statement.

    ``head`` is the real root, so a memo covers it only if the memo starts there.
    """
    if head is not None:
        return memo is not None and memo.memo.first_id == head.id
    return floor_start == 0 or (memo is not None and memo.start == 0)


def _memo_request(
    path: Sequence[Turn],
    costs: Sequence[int],
    memo: _PlacedMemo | None,
    dropped_any: bool,
    available: int,
    policy: Policy,
    end: int,
) -> MemoRequest | None:
    """The memo to write next, ending at index ``end``, or None (rule in ``curate``)."""
    base_end = memo.end if memo else -1
    if end <= base_end:
        return None
    history_lost = memo is None and dropped_any
    if not (history_lost or _past_high_water(costs, base_end, end, available, policy.high_water)):
        return None
    if memo is not None:
        new_turns = path[base_end + 1 : end + 1]
        return MemoRequest(
            first_id=memo.memo.first_id,
            last_id=path[end].id,
            base_memo_id=memo.memo.id,
            new_ids=tuple(turn.id for turn in new_turns),
        )
    return MemoRequest(
        first_id=path[0].id,
        last_id=path[end].id,
        base_memo_id=None,
        new_ids=tuple(turn.id for turn in path[: end + 1]),
    )


def _past_high_water(
    costs: Sequence[int], base_end: int, end: int, available: int, high_water: float
) -> bool:
    """Whether the unsummarised tail passed high water and a memo would absorb enough of it.

    The second condition keeps requests rare when the recent turns alone sit above high water:
    the memo must summarise at least ``(1 - high_water)`` x available tokens of new turns.
    """
    unsummarised = sum(costs[base_end + 1 :])
    summarisable = sum(costs[base_end + 1 : end + 1])
    return unsummarised > high_water * available and summarisable >= (1 - high_water) * available


def _tokens(budget: Budget, memo: _PlacedMemo | None, anchor: int, recent: int) -> Tokens:
    memo_cost = memo.cost if memo else 0
    return Tokens(
        window=budget.window,
        reserve=budget.reserve,
        system=budget.system,
        memo=memo_cost,
        anchor=anchor,
        retrieved=budget.retrieved,
        recent=recent,
        total=budget.system + memo_cost + anchor + budget.retrieved + recent,
    )


CURATORS: dict[str, Curator] = {CURATOR_1: curate_v1, VERSION: curate}


def get_curator(version: str) -> Curator:
    """Return the curator registered as ``version`` (``UnknownCuratorVersion`` if none)."""
    try:
        return CURATORS[version]
    except KeyError:
        raise UnknownCuratorVersion(f"no curator registered as {version!r}") from None
