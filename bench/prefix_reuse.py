"""How much of each model input a prompt cache can serve: curator/3, /4, /5 and langmem.

A provider's prompt cache serves the longest prefix of a request that equals an earlier
request. Here, for every user turn after the history first overflows, the *reuse share* is the
length of the common prefix of this input and (the previous input + its answer), over the
length of this input, in tokens. Printed per workload and curator: mean and p10 reuse, input
tokens per turn, input cost per turn with cached tokens priced at 10% and 50% of the input
price (relative to curator/3 with no cache), memo writer calls per 1,000 turns, inputs that
lost turns between the memo and the recent turns, and the median time of one ``curate()`` call.
``--why`` also prints where each input's prefix broke (``break_cause``).

curator/4 and curator/5 run twice: with recall off, and with recall on as profiles have it by
default (``recall_max_tokens`` 512). Recall finds different older messages every turn, so its
section sits after the stable history and before the current turn; here each turn recalls 0-3
random older messages of the path (the real lookup matches the new turn's words).

All curators run on the same turns in one run. curator/5 is the one in ``compaction.curator``;
curator/3 and curator/4 are loaded from the commits where they last ran (``CURATOR3_COMMIT``,
``CURATOR4_COMMIT``, read with ``git show``), so they are measured as they were, not
re-implemented (curator/5 differs from curator/4 only in when a bulky tool result is elided).
The curators are pure functions: this bench drives them directly with stored token counts,
renders each input as a sequence of token identities (system prompt, memo, messages, an elided
result's marker) and writes every requested memo at once, as a worker that keeps pace would,
segment by segment up to the chain's goal (each segment a writer call and a ready memo).
(Memo quality through the real services is ``memo_eval``'s job.)

On the support workload, langmem's ``summarize_messages`` (the peer the issue quotes at 0.95)
runs on the same turns too (``LangmemRun``): its summary is a fake model's, counted at a
written memo's size, and each new summary is one writer call.

Workloads:
- ``support``: the realistic 5,000-turn conversation of ``bench/long_conversation.py`` (a
  ~100-token question, a ~240-token answer);
- ``agent``: a tool-heavy agent (a question, then 1-3 steps of a tool call and its results of
  150-2,500 tokens, then an answer).

    .venv/bin/python bench/prefix_reuse.py                 # 5,000 turns each
    .venv/bin/python bench/prefix_reuse.py --turns 1000 --why --workload support
"""

import argparse
import dataclasses
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compaction import curator as current  # noqa: E402

CURATOR3_COMMIT = "8078aa1"
CURATOR4_COMMIT = "d482f01"
# Windows per workload: the support conversation's 8,192 (as the other benches); the agent's
# 32,768, since an agent whose steps read files and logs runs on a larger model window.
WINDOWS = {"support": 8_192, "agent": 32_768}
RESERVE, SYSTEM = 1_024, 60
# A written memo's size as a share of the profile's memo size (480 of the curator's 512).
MEMO_FILL = 15 / 16
# The path handed to the curator: the last turns, as context assembly reads a bounded stretch.
PATH_TURNS = 400
ELIDE_ABOVE = 1_024  # a profile's tool_result_elide_tokens
ELIDED_TOKENS = 12
# Recall as production runs it (a profile's default recall_max_tokens).
RECALL_TOKENS = 512


@dataclass
class Message:
    id: int
    role: str
    tokens: int


def load_curator(name: str, commit: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{commit}:compaction/curator.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(name, file.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def support(turns: int, rng: random.Random) -> Iterator[list[Message]]:
    """Each exchange: the user's question (the input is assembled), then the answer."""
    next_id = iter(range(1, 10**9))
    for _ in range(turns):
        yield [Message(next(next_id), "user", rng.randint(70, 130))]
        yield [Message(next(next_id), "assistant", rng.randint(190, 290))]


def agent(turns: int, rng: random.Random) -> Iterator[list[Message]]:
    """A question, 1-3 tool steps (a call and 1-2 results each), then the answer; an input is
    assembled for the question and after every step's results."""
    next_id = iter(range(1, 10**9))
    for _ in range(turns):
        yield [Message(next(next_id), "user", rng.randint(40, 120))]
        for _ in range(rng.randint(1, 3)):
            step = [Message(next(next_id), "assistant", rng.randint(30, 90))]
            step += [
                Message(next(next_id), "tool", rng.choice((150, 400, 900, 1_600, 2_500)))
                for _ in range(rng.randint(1, 2))
            ]
            yield step
        yield [Message(next(next_id), "assistant", rng.randint(120, 260))]


@dataclass
class Result:
    reuse: list[float] = field(default_factory=list)
    input_tokens: list[int] = field(default_factory=list)
    uncached: list[int] = field(default_factory=list)
    memo_calls: int = 0
    lost_middle: int = 0
    exchanges: int = 0
    curate_seconds: list[float] = field(default_factory=list)
    breaks: "Breaks" = field(default_factory=lambda: Breaks())

    def record(self, rendered: list[tuple], followed: list[tuple]) -> int:
        """Count one input against what a cache holds (the previous input and what followed
        it); returns the tokens they share from the start."""
        common = 0
        for a, b in zip(rendered, followed, strict=False):
            if a != b:
                break
            common += 1
        self.reuse.append(common / len(rendered))
        self.input_tokens.append(len(rendered))
        self.uncached.append(len(rendered) - common)
        return common


@dataclass
class Breaks:
    """Where inputs lost their prefix, by cause: ``counts`` of inputs and the ``uncached``
    tokens after the break (the new turn's own tokens included)."""

    counts: Counter = field(default_factory=Counter)
    uncached: Counter = field(default_factory=Counter)

    def add(self, cause: str, uncached: int) -> None:
        self.counts[cause] += 1
        self.uncached[cause] += uncached


def break_cause(before: object, plan: object, new: tuple | None, old: tuple | None) -> str:
    """Why an input's prefix ended where it did: ``none`` (only the new turn is new), a block
    ``boundary`` (the memo, task statement or first verbatim turn moved), an ``elision`` (a
    tool result shown whole before is a marker now), a ``recall`` section (the previous
    input's stood where the history goes on; this one's stands before the current unit, whose
    tool call the previous answer held), else ``other``."""
    if new is None or old is None:
        return "none"
    if (before.memo, before.anchor, before.recent[0]) != (plan.memo, plan.anchor, plan.recent[0]):
        return "boundary"
    if new[0] == "elided" and old[0] == "message":
        return "elision"
    if "recalled" in (old[0], new[0]):
        return "recall"
    return "other"


class Run:
    """One curator over one workload: assembles an input whenever the path ends with a turn
    the model must answer, renders it as token identities and compares it with the previous
    input plus what followed it."""

    def __init__(
        self, module: ModuleType, window: int, *, recall: bool = False, memo_max: int | None = None
    ) -> None:
        self.module = module
        self.policy = module.Policy()
        if memo_max is not None:
            self.policy = dataclasses.replace(self.policy, memo_max_tokens=memo_max)
        self.memo_tokens = int(MEMO_FILL * self.policy.memo_max_tokens)
        if recall:
            self.policy = dataclasses.replace(self.policy, recall_max_tokens=RECALL_TOKENS)
        self.recall_rng = random.Random(11) if recall else None
        self.budget = module.Budget(window=window, reserve=RESERVE, system=SYSTEM + 4)
        self.path: list[Message] = []
        self.memos: list = []
        self.previous: list[tuple] | None = None
        self.previous_last_id = 0
        self.previous_plan = None
        self.overflowed = False
        self.result = Result()

    def turn(self, module_turn: type, message: Message) -> object:
        elided = self.elided_size(message)
        kwargs = {"calls_tools": message.role == "assistant"} if self._has_calls_tools else {}
        return module_turn(message.id, message.role, message.tokens, elided_tokens=elided, **kwargs)

    @staticmethod
    def elided_size(message: Message) -> int | None:
        return ELIDED_TOKENS if message.role == "tool" and message.tokens > ELIDE_ABOVE else None

    @property
    def _has_calls_tools(self) -> bool:
        return "calls_tools" in self.module.Turn.__dataclass_fields__

    def add(self, messages: list[Message]) -> None:
        self.path.extend(messages)
        if messages[0].role == "assistant" and messages[-1].role == "assistant":
            self.result.exchanges += 1
            return  # an answer: nothing to assemble
        self.assemble(messages)

    def assemble(self, current: list[Message]) -> None:
        shown = self.path[-PATH_TURNS:]
        head = self.path[0] if len(self.path) > PATH_TURNS else None
        turns = [self.turn(self.module.Turn, m) for m in shown]
        head_turn = self.turn(self.module.Turn, head) if head else None
        kwargs = {}
        if hasattr(self.module, "Prefix") and self.previous_plan is not None:
            kwargs["previous"] = self.module.Prefix(
                memo_id=self.previous_plan.memo.id if self.previous_plan.memo else None,
                first_id=self.previous_plan.recent[0],
            )
        if self.recall_rng is not None:
            kwargs["recalled"] = self.recall_candidates(turns[: -len(current)])
        started = time.perf_counter()
        plan = self.module.curate(
            turns, self.memos, self.budget, self.policy, head=head_turn, **kwargs
        )
        self.result.curate_seconds.append(time.perf_counter() - started)
        before, self.previous_plan = self.previous_plan, plan
        rendered = self.render(plan, current)
        if plan.memo is not None or plan.anchor or plan.dropped:
            self.overflowed = True
        if self.overflowed and self.previous is not None:
            self.measure(before, plan, rendered, current)
        self.previous = rendered
        self.previous_last_id = plan.recent[-1]
        if plan.request is not None:
            self.write_memo(plan.request)

    def recall_candidates(self, older: list) -> list:
        """What recall would find for this turn: a few older messages of the path, different
        every turn (the lookup matches the words of the new turn), best first."""
        count = min(len(older), self.recall_rng.randint(0, 3))
        return self.recall_rng.sample(older, count)

    def render(self, plan: object, current: list[Message]) -> list[tuple]:
        """Token identities in the order context assembly renders them: system prompt, memo,
        task statement and the verbatim history, the recalled excerpts, then the current turn."""
        tokens: list[tuple] = [("system", k) for k in range(SYSTEM)]
        if plan.memo is not None:
            tokens += [("memo", plan.memo.id, k) for k in range(self.memo_tokens)]
        by_id = {m.id: m for m in self.path[-PATH_TURNS - 1 :]}
        current_ids = {m.id for m in current}
        history = [i for i in (*plan.anchor, *plan.recent) if i not in current_ids]
        recalled = getattr(plan, "recalled", ())
        for kind, message_id in [
            *(("message", i) for i in history),
            *(("recalled", i) for i in recalled),
            *(("message", m.id) for m in current),
        ]:
            message = by_id.get(message_id) or self.path[0]
            if message_id in plan.elided:
                tokens += [("elided", message_id, k) for k in range(ELIDED_TOKENS)]
            else:
                tokens += [(kind, message_id, k) for k in range(message.tokens)]
        return tokens

    def measure(
        self, before: object, plan: object, rendered: list[tuple], current: list[Message]
    ) -> None:
        # The previous input followed by its answer (what the model said after it), as a
        # cache holds it; the new turn's own messages are not part of it.
        new = {m.id for m in current if m.role != "assistant"}
        followed = self.previous + [
            ("message", m.id, k)
            for m in self.path[-PATH_TURNS:]
            if m.id > self.previous_last_id and m.id not in new
            for k in range(m.tokens)
        ]
        common = self.result.record(rendered, followed)
        ended = common < min(len(rendered), len(followed))
        cause = break_cause(
            before,
            plan,
            rendered[common] if ended else None,
            followed[common] if ended else None,
        )
        self.result.breaks.add(cause, len(rendered) - common)
        if plan.memo is not None and plan.dropped:
            memo_end = plan.memo.last_id
            self.result.lost_middle += any(i > memo_end for i in plan.dropped)

    def write_memo(self, request: object) -> None:
        """The requested memo, then the chain's next segments up to its goal, as the memo
        writer continues a chain (``compaction.services``, sized by ``next_segment``): one
        writer call and one ready memo per segment."""
        self.add_memo(request.first_id, request.last_id)
        last = request.last_id
        while last < request.goal_id:
            # message ids count up from 1 along the path, so id n sits at index n - 1
            rest = [
                current.Turn(m.id, m.role, m.tokens, elided_tokens=self.elided_size(m))
                for m in self.path[last : request.goal_id]
            ]
            last = rest[current.next_segment(rest, self.policy)].id
            self.add_memo(request.first_id, last)

    def add_memo(self, first_id: int, last_id: int) -> None:
        self.result.memo_calls += 1
        fields = self.module.Memo.__dataclass_fields__
        extra = {"chain_depth": 0} if "chain_depth" in fields else {}
        self.memos.append(
            self.module.Memo(
                id=len(self.memos) + 1,
                first_id=first_id,
                last_id=last_id,
                tokens=self.memo_tokens,
                **extra,
            )
        )


class LangmemRun:
    """langmem's ``summarize_messages`` (the peer the issue measured at 0.95) on the same turns:
    the running summary and the messages after it, within ``max_tokens`` = window - reserve
    and ``max_summary_tokens`` = the memo size, as ``bench/turn_cost.py`` runs it. Its model is
    a fake one (a fixed summary, counted as a written memo is here: ``MEMO_FILL`` of its
    size); each call is one summary, counted as one writer call. Token counts are the
    workload's, so its inputs are rendered as token identities like the curators'."""

    SUMMARY = "A running summary of the conversation so far."

    def __init__(self, window: int, memo_max: int) -> None:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        self.model = FakeListChatModel(responses=[self.SUMMARY])
        self.max_tokens = window - RESERVE
        self.summary_max = memo_max
        self.memo_tokens = int(MEMO_FILL * memo_max)
        self.tokens: dict[str, int] = {}
        self.messages: list = []
        self.running = None
        self.previous: list[tuple] | None = None
        self.previous_last = 0
        self.overflowed = False
        self.result = Result()

    def count(self, messages: list) -> int:
        """Tokens as the workload has them; the summary as a written memo of its size."""
        total = 0
        for message in messages:
            if message.id is not None:
                total += self.tokens[message.id]
            elif self.SUMMARY in message.content:
                total += self.memo_tokens
            else:
                total += SYSTEM + 4
        return total

    def add(self, messages: list[Message]) -> None:
        from langchain_core.messages import AIMessage, HumanMessage

        for message in messages:
            kind = HumanMessage if message.role == "user" else AIMessage
            self.tokens[str(message.id)] = message.tokens
            self.messages.append(kind("…", id=str(message.id)))
        if messages[-1].role == "assistant":
            self.result.exchanges += 1
            return
        self.assemble(messages)

    def assemble(self, current: list[Message]) -> None:
        from langchain_core.messages import SystemMessage
        from langmem.short_term import summarize_messages

        before = self.running
        started = time.perf_counter()
        result = summarize_messages(
            [SystemMessage("system prompt"), *self.messages],
            running_summary=self.running,
            model=self.model,
            max_tokens=self.max_tokens,
            max_summary_tokens=self.summary_max,
            token_counter=self.count,
        )
        self.result.curate_seconds.append(time.perf_counter() - started)
        self.running = result.running_summary
        if self.running is not None and self.running is not before:
            self.result.memo_calls += 1
            self.overflowed = True
        rendered = self.render(result.messages)
        if self.overflowed and self.previous is not None:
            self.measure(rendered, current)
        self.previous = rendered
        self.previous_last = current[-1].id

    def render(self, messages: list) -> list[tuple]:
        tokens: list[tuple] = []
        for message in messages:
            if message.id is not None:
                tokens += [("message", int(message.id), k) for k in range(self.count([message]))]
            elif self.SUMMARY in message.content:
                version = self.running.last_summarized_message_id
                tokens += [("memo", version, k) for k in range(self.memo_tokens)]
            else:
                tokens += [("system", k) for k in range(SYSTEM)]
        return tokens

    def measure(self, rendered: list[tuple], current: list[Message]) -> None:
        answer = [m for m in self.messages if int(m.id) > self.previous_last]
        new = {m.id for m in current}
        followed = self.previous + [
            ("message", int(m.id), k)
            for m in answer
            if int(m.id) not in new
            for k in range(self.tokens[m.id])
        ]
        common = self.result.record(rendered, followed)
        cause = "none" if common == len(followed) else "boundary"
        self.result.breaks.add(cause, len(rendered) - common)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(
    workload: str, turns: int, curators: dict[str, ModuleType], memo_max: int | None = None
) -> dict[str, Result]:
    runs: dict[str, Run] = {}
    window = WINDOWS[workload]
    for name, module in curators.items():
        runs[name] = Run(module, window, memo_max=memo_max)
        if name != "curator/3":  # curator/3 had no recall
            runs[f"{name} + recall"] = Run(module, window, recall=True, memo_max=memo_max)
    if workload == "support":
        # The peer; its agent turns would need tool calls langmem can pair.
        memo_size = memo_max or current.Policy().memo_max_tokens
        runs["langmem"] = LangmemRun(window, memo_size)
    make = support if workload == "support" else agent
    for messages in make(turns, random.Random(7)):
        for one in runs.values():
            one.add(list(messages))
    return {name: one.result for name, one in runs.items()}


def cost(result: Result, cached_price: float) -> float:
    """Mean input cost per assembled input, in full-price input tokens."""
    per_input = [
        u + cached_price * (total - u)
        for u, total in zip(result.uncached, result.input_tokens, strict=True)
    ]
    return statistics.fmean(per_input)


def report(workload: str, results: dict[str, Result], *, why: bool = False) -> None:
    today = statistics.fmean(results["curator/3"].input_tokens)
    print(f"\n{workload} (window {WINDOWS[workload]:,}): per input after the first overflow")
    print(
        f"{'curator':<18} {'inputs':>7} {'reuse mean':>10} {'p10':>6} {'tokens':>7} "
        f"{'cost@10%':>9} {'cost@50%':>9} {'memos/1k turns':>15} {'lost middle':>12} "
        f"{'curate µs':>10}"
    )
    for name, result in results.items():
        print(
            f"{name:<18} {len(result.reuse):>7} {statistics.fmean(result.reuse):>10.3f} "
            f"{percentile(result.reuse, 0.1):>6.3f} {statistics.fmean(result.input_tokens):>7.0f} "
            f"{cost(result, 0.1) / today:>8.2f}x {cost(result, 0.5) / today:>8.2f}x "
            f"{1000 * result.memo_calls / max(result.exchanges, 1):>15.1f} "
            f"{result.lost_middle:>12} "
            f"{1e6 * statistics.median(result.curate_seconds):>10.0f}"
        )
    print("cost: relative to curator/3's mean input tokens at the full input price;")
    print("curate µs: median time of one curate() call (the pure function) on the same turns")
    if why:
        print_breaks(results)


def print_breaks(results: dict[str, Result]) -> None:
    """Per curator and cause: the share of inputs whose prefix broke so, and the tokens a
    cache could not serve per such input (see ``break_cause``)."""
    print("where the prefix ended: share of inputs / uncached tokens per such input")
    causes = ("none", "boundary", "elision", "recall", "other")
    print(f"{'curator':<18} " + " ".join(f"{cause:>18}" for cause in causes))
    for name, result in results.items():
        breaks, inputs = result.breaks, max(len(result.reuse), 1)
        cells = [
            f"{breaks.counts[c] / inputs:>8.3f} / "
            f"{breaks.uncached[c] / max(breaks.counts[c], 1):>7.0f}"
            for c in causes
        ]
        print(f"{name:<18} " + " ".join(f"{cell:>18}" for cell in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--why", action="store_true", help="print where prefixes broke")
    parser.add_argument("--workload", choices=("support", "agent"), action="append")
    parser.add_argument(
        "--memo-max-tokens",
        type=int,
        help="the profile's memo size (default: the curator's Policy default, 512; "
        "profiles without their own take CONVMEM_DEFAULT_MEMO_MAX_TOKENS, 1,024)",
    )
    args = parser.parse_args()
    curators = {
        "curator/3": load_curator("curator3", CURATOR3_COMMIT),
        "curator/4": load_curator("curator4", CURATOR4_COMMIT),
        current.VERSION: current,
    }
    for workload in args.workload or ("support", "agent"):
        results = run(workload, args.turns, curators, args.memo_max_tokens)
        report(workload, results, why=args.why)
    return 0


if __name__ == "__main__":
    sys.exit(main())
