"""The curator is pure: these tests need no database, only turns, memos and budgets."""

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compaction.curator import (
    CURATOR_1,
    VERSION,
    Budget,
    BudgetTooSmall,
    Memo,
    MemoRequest,
    Plan,
    Policy,
    Turn,
    UnknownCuratorVersion,
    curate,
    curate_v1,
    get_curator,
)

# Overhead 0 keeps the example arithmetic readable; the properties use random overheads.
PLAIN = Policy(min_recent_turns=2, high_water=0.75, message_overhead=0)


def conversation(*tokens: int, first_id: int = 1) -> list[Turn]:
    """Turns alternating user / assistant, starting with the user, ids counting up."""
    roles = ("user", "assistant")
    return [
        Turn(id=first_id + index, role=roles[index % 2], tokens=count)
        for index, count in enumerate(tokens)
    ]


# --- examples ---------------------------------------------------------------------------------


def test_it_keeps_everything_when_it_fits() -> None:
    path = conversation(10, 10, 10, 10)

    plan = curate(path, [], Budget(window=1000, reserve=100, system=20), Policy())

    assert plan.version == VERSION
    assert plan.recent == (1, 2, 3, 4)
    assert (plan.memo, plan.covered, plan.anchor, plan.dropped) == (None, (), (), ())
    assert plan.request is None
    assert plan.tokens.recent == 4 * (10 + Policy().message_overhead)
    assert plan.tokens.total == 20 + plan.tokens.recent


def test_it_uses_a_ready_memo_for_the_older_range() -> None:
    path = conversation(*[100] * 10)
    memo = Memo(id=7, first_id=1, last_id=6, tokens=50, chain_depth=0)

    plan = curate(path, [memo], Budget(window=800, reserve=100), PLAIN)

    assert plan.memo == memo
    assert plan.covered == (1, 2, 3, 4, 5, 6)
    assert plan.recent == (7, 8, 9, 10)
    assert (plan.anchor, plan.dropped, plan.request) == ((), (), None)
    assert (plan.tokens.memo, plan.tokens.recent, plan.tokens.total) == (50, 400, 450)


def test_without_a_memo_it_keeps_the_task_statement_and_requests_a_memo() -> None:
    path = conversation(*[100] * 10)

    plan = curate(path, [], Budget(window=600, reserve=100), PLAIN)

    assert plan.anchor == (1,)
    assert plan.recent == (7, 8, 9, 10)
    assert plan.dropped == (2, 3, 4, 5, 6)
    assert plan.request == MemoRequest(
        first_id=1, last_id=8, base_memo_id=None, new_ids=(1, 2, 3, 4, 5, 6, 7, 8)
    )
    assert plan.tokens.total + plan.tokens.reserve == 600


def test_high_water_requests_a_memo_before_anything_is_dropped() -> None:
    budget = Budget(window=800, reserve=100)  # 700 available, high water at 525

    below = curate(conversation(*[100] * 5), [], budget, PLAIN)
    above = curate(conversation(*[100] * 6), [], budget, PLAIN)

    assert below.dropped == above.dropped == ()
    assert below.request is None
    assert above.request == MemoRequest(
        first_id=1, last_id=4, base_memo_id=None, new_ids=(1, 2, 3, 4)
    )


def test_high_water_extends_the_memo_in_use() -> None:
    path = conversation(*[100] * 10)
    memo = Memo(id=7, first_id=1, last_id=4, tokens=50, chain_depth=1)

    plan = curate(path, [memo], Budget(window=800, reserve=100), PLAIN)

    assert plan.memo == memo
    assert plan.request == MemoRequest(first_id=1, last_id=8, base_memo_id=7, new_ids=(5, 6, 7, 8))


def test_budget_too_small_states_the_arithmetic() -> None:
    path = conversation(100, 896)
    budget = Budget(window=2000, reserve=1024, system=120)

    with pytest.raises(BudgetTooSmall) as raised:
        curate(path, [], budget, Policy(message_overhead=4))

    assert str(raised.value) == "system 120 + current turn 900 + reserve 1024 = 2044 > window 2000"
    assert raised.value.shortfall == 44


def test_budget_too_small_names_retrieved_material_when_there_is_some() -> None:
    with pytest.raises(BudgetTooSmall, match=r"system 0 \+ retrieved 50 \+ current turn 60"):
        curate(conversation(60), [], Budget(window=100, reserve=0, retrieved=50), PLAIN)


def test_get_curator_keeps_versions_runnable() -> None:
    assert get_curator(VERSION) is curate
    assert get_curator(CURATOR_1) is curate_v1
    with pytest.raises(UnknownCuratorVersion, match="curator/0"):
        get_curator("curator/0")


def test_head_is_the_task_statement_when_the_path_does_not_reach_the_root() -> None:
    head = Turn(id=1, role="user", tokens=100)
    path = conversation(*[100] * 6, first_id=21)

    plan = curate(path, [], Budget(window=600, reserve=100), PLAIN, head=head)

    assert plan.anchor == (1,)
    assert plan.recent == (23, 24, 25, 26)
    assert plan.dropped == (21, 22)


def test_the_task_statement_is_kept_beside_a_memo_that_does_not_cover_it() -> None:
    head = Turn(id=1, role="user", tokens=100)
    path = conversation(*[100] * 10, first_id=21)
    from_path_start = Memo(id=7, first_id=21, last_id=26, tokens=50, chain_depth=0)
    from_root = Memo(id=8, first_id=1, last_id=26, tokens=50, chain_depth=0)

    beside = curate(path, [from_path_start], Budget(window=900, reserve=100), PLAIN, head=head)
    covering = curate(path, [from_root], Budget(window=900, reserve=100), PLAIN, head=head)

    assert (beside.anchor, covering.anchor) == ((1,), ())


def test_a_first_turn_that_is_not_from_the_user_is_not_an_anchor() -> None:
    path = [Turn(id=1, role="system", tokens=100), *conversation(*[100] * 9, first_id=2)]

    plan = curate(path, [], Budget(window=600, reserve=100), PLAIN)

    assert plan.anchor == ()
    assert plan.recent == (6, 7, 8, 9, 10)


def test_memos_reaching_into_the_recent_turns_or_too_big_are_passed_over() -> None:
    path = conversation(*[100] * 10)
    into_recent = Memo(id=9, first_id=1, last_id=9, tokens=10, chain_depth=0)
    too_big = Memo(id=8, first_id=1, last_id=7, tokens=900, chain_depth=0)
    fitting = Memo(id=7, first_id=1, last_id=5, tokens=50, chain_depth=0)

    plan = curate(path, [into_recent, too_big, fitting], Budget(window=800, reserve=100), PLAIN)

    assert plan.memo == fitting


def test_a_requested_memo_leaves_half_of_high_water_verbatim() -> None:
    # 20 turns of 20 tokens (400) pass high water (0.75 x 500 = 375); half of it is 187 tokens,
    # which the newest 9 turns fit in: the memo covers turns 1-11, the rest stays verbatim.
    path = conversation(*[20] * 20)
    budget = Budget(window=600, reserve=100)

    plan = curate(path, [], budget, PLAIN)

    assert plan.version == VERSION
    assert plan.request == MemoRequest(
        first_id=1, last_id=11, base_memo_id=None, new_ids=tuple(range(1, 12))
    )


def test_curator_1_ends_the_memo_just_before_the_recent_floor() -> None:
    path = conversation(*[20] * 20)

    plan = curate_v1(path, [], Budget(window=600, reserve=100), PLAIN)

    assert plan.version == CURATOR_1
    assert plan.request is not None
    assert plan.request.last_id == 18


def test_no_request_when_it_would_not_advance_past_the_memo() -> None:
    path = conversation(*[100] * 4)
    memo = Memo(id=7, first_id=1, last_id=2, tokens=50, chain_depth=0)

    plan = curate(path, [memo], Budget(window=300, reserve=0), PLAIN)

    assert plan.memo == memo
    assert plan.request is None


def test_recent_turns_alone_above_high_water_do_not_ask_for_a_memo_per_turn() -> None:
    # 700 available, high water at 525; the two recent turns (600) sit above it on their own.
    path = conversation(10, 50, 300, 300)
    memo = Memo(id=7, first_id=1, last_id=1, tokens=10, chain_depth=0)

    plan = curate(path, [memo], Budget(window=800, reserve=100), PLAIN)

    assert plan.memo == memo
    assert plan.recent == (2, 3, 4)
    assert plan.request is None  # it would summarise 50 tokens, less than (1 - 0.75) x 700


@pytest.mark.parametrize(
    ("field", "value"),
    [("min_recent_turns", 0), ("high_water", 0.0), ("high_water", 1.5), ("message_overhead", -1)],
)
def test_policy_rejects_meaningless_values(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        Policy(**{field: value})


def test_path_must_not_be_empty_or_repeat_ids() -> None:
    with pytest.raises(ValueError, match="at least the current turn"):
        curate([], [], Budget(window=100, reserve=0), PLAIN)
    with pytest.raises(ValueError, match="unique"):
        curate(conversation(1) * 2, [], Budget(window=100, reserve=0), PLAIN)


# --- properties -------------------------------------------------------------------------------

ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True)
class Case:
    path: list[Turn]
    memos: list[Memo]
    budget: Budget
    policy: Policy
    head: Turn | None

    def plan(self) -> Plan:
        return curate(self.path, self.memos, self.budget, self.policy, head=self.head)

    def position(self, turn_id: int) -> int:
        return [turn.id for turn in self.path].index(turn_id)

    def cost(self, turns: Sequence[Turn]) -> int:
        return sum(turn.tokens + self.policy.message_overhead for turn in turns)

    def current_turn_fits(self) -> bool:
        return self.cost(self.path[-1:]) <= self.budget.available


@st.composite
def cases(draw: st.DrawFn) -> Case:
    length = draw(st.integers(min_value=1, max_value=30))
    ids = draw(
        st.lists(st.integers(1, 10_000), min_size=length + 3, max_size=length + 3, unique=True)
    )
    path_ids, off_path_ids = ids[:length], ids[length:]  # off-path ids lie before the path
    path = [
        Turn(id=turn_id, role=draw(st.sampled_from(ROLES)), tokens=draw(st.integers(0, 300)))
        for turn_id in path_ids
    ]
    head = draw(
        st.none()
        | st.builds(Turn, st.just(off_path_ids[0]), st.sampled_from(ROLES), st.integers(0, 300))
    )
    memo = st.builds(
        Memo,
        id=st.integers(1, 50),
        first_id=st.sampled_from(ids),
        last_id=st.sampled_from(ids),
        tokens=st.integers(0, 600),
        chain_depth=st.integers(0, 5),
    )
    budget = st.builds(
        Budget,
        window=st.integers(0, 6000),
        reserve=st.integers(0, 1500),
        system=st.integers(0, 500),
        retrieved=st.integers(0, 500),
    )
    policy = st.builds(
        Policy,
        min_recent_turns=st.integers(1, 6),
        memo_max_tokens=st.integers(0, 600),
        high_water=st.floats(0.05, 1.0),
        message_overhead=st.integers(0, 5),
    )
    return Case(path, draw(st.lists(memo, max_size=5)), draw(budget), draw(policy), head)


def plans() -> st.SearchStrategy[tuple[Case, Plan]]:
    """Cases whose current turn fits, with their plans."""
    return cases().filter(Case.current_turn_fits).map(lambda case: (case, case.plan()))


@given(cases())
def test_budget_too_small_exactly_when_the_current_turn_cannot_fit(case: Case) -> None:
    if case.current_turn_fits():
        case.plan()
    else:
        with pytest.raises(BudgetTooSmall):
            case.plan()


@given(plans())
def test_never_over_budget(case_plan: tuple[Case, Plan]) -> None:
    case, plan = case_plan
    tokens = plan.tokens
    by_id = {turn.id: turn for turn in case.path}

    assert tokens.total + tokens.reserve <= tokens.window == case.budget.window
    assert tokens.total == (
        tokens.system + tokens.memo + tokens.anchor + tokens.retrieved + tokens.recent
    )
    assert tokens.recent == case.cost([by_id[turn_id] for turn_id in plan.recent])


@given(plans())
def test_recent_is_a_suffix_ending_with_the_current_turn(case_plan: tuple[Case, Plan]) -> None:
    case, plan = case_plan

    assert plan.recent
    assert plan.recent == tuple(turn.id for turn in case.path[len(case.path) - len(plan.recent) :])


@given(plans())
def test_the_last_turns_that_fit_are_always_kept(case_plan: tuple[Case, Plan]) -> None:
    case, plan = case_plan
    fitting = max(
        count
        for count in range(1, case.policy.min_recent_turns + 1)
        if count <= len(case.path) and case.cost(case.path[-count:]) <= case.budget.available
    )

    kept = {turn.id for turn in case.path[-fitting:]}
    assert kept <= set(plan.recent)
    assert not kept & (set(plan.covered) | set(plan.dropped))


@given(plans())
def test_sections_partition_the_path_in_order(case_plan: tuple[Case, Plan]) -> None:
    case, plan = case_plan
    path_ids = [turn.id for turn in case.path]
    anchor_on_path = tuple(turn_id for turn_id in plan.anchor if turn_id in path_ids)

    sections = (plan.covered, anchor_on_path, plan.recent, plan.dropped)
    assert sorted(turn_id for section in sections for turn_id in section) == sorted(path_ids)
    for section in sections:
        positions = [case.position(turn_id) for turn_id in section]
        assert positions == sorted(positions)


@given(plans())
def test_memo_and_anchor_are_what_they_claim(case_plan: tuple[Case, Plan]) -> None:
    case, plan = case_plan

    if plan.memo is not None:
        assert plan.memo in case.memos
        assert plan.covered[-1] == plan.memo.last_id
        assert case.position(plan.memo.last_id) < case.position(plan.recent[0])
    if plan.anchor:
        task = case.head or case.path[0]
        assert plan.anchor == (task.id,)
        assert task.role == "user"


@given(cases().filter(Case.current_turn_fits))
def test_curation_is_deterministic(case: Case) -> None:
    again = Case(list(case.path), list(case.memos), case.budget, case.policy, case.head)

    assert case.plan() == again.plan()


@given(plans())
def test_requests_never_cover_the_recent_turns_and_always_advance(
    case_plan: tuple[Case, Plan],
) -> None:
    case, plan = case_plan
    request = plan.request
    if request is None:
        return
    last = case.position(request.last_id)
    new_positions = [case.position(turn_id) for turn_id in request.new_ids]

    assert last < len(case.path) - case.policy.min_recent_turns
    assert new_positions == list(range(new_positions[0], last + 1))
    if plan.memo is not None:
        assert last > case.position(plan.memo.last_id)
    if request.base_memo_id is None:
        assert (request.first_id, new_positions[0]) == (case.path[0].id, 0)
    else:
        assert plan.memo is not None
        assert request.base_memo_id == plan.memo.id
        assert request.first_id == plan.memo.first_id
        assert new_positions[0] == case.position(plan.memo.last_id) + 1


@given(
    sizes=st.lists(st.integers(10, 200), min_size=1, max_size=300),
    high_water=st.floats(0.5, 0.95),
    delay=st.integers(0, 3),
)
def test_a_growing_conversation_asks_for_few_memos(
    sizes: list[int], high_water: float, delay: int
) -> None:
    """Simulate the caller: one request in flight at a time, ready ``delay`` turns later."""
    policy = Policy(min_recent_turns=4, high_water=high_water, message_overhead=4)
    budget = Budget(window=3000, reserve=500, system=100)
    path: list[Turn] = []
    memos: list[Memo] = []
    pending: tuple[int, MemoRequest] | None = None
    requests = 0
    for index, size in enumerate(sizes):
        path.append(Turn(id=index + 1, role=("user", "assistant")[index % 2], tokens=size))
        if pending is not None and pending[0] <= index:
            memos.append(ready_memo(len(memos) + 1, pending[1], memos))
            pending = None
        plan = curate(path, memos, budget, policy)
        if plan.request is not None and pending is None:
            requests += 1
            pending = (index + delay, plan.request)

    conversation_tokens = sum(size + policy.message_overhead for size in sizes)
    assert requests <= 1 + conversation_tokens / ((1 - high_water) * budget.available)


def ready_memo(memo_id: int, request: MemoRequest, memos: list[Memo]) -> Memo:
    base = next((memo for memo in memos if memo.id == request.base_memo_id), None)
    depth = base.chain_depth + 1 if base else 0
    return Memo(memo_id, request.first_id, request.last_id, tokens=200, chain_depth=depth)
