"""How much of each model input a prompt cache can serve: curator/3 and curator/4 side by side.

A provider's prompt cache serves the longest prefix of a request that equals an earlier
request. Here, for every user turn after the history first overflows, the *reuse share* is the
length of the common prefix of this input and (the previous input + its answer), over the
length of this input, in tokens. Printed per workload and curator: mean and p10 reuse, input
tokens per turn, input cost per turn with cached tokens priced at 10% and 50% of the input
price (relative to curator/3 with no cache), memo writer calls per 1,000 turns, inputs that
lost turns between the memo and the recent turns, and the median time of one ``curate()`` call.

curator/4 runs twice: with recall off, and with recall on as profiles have it by default
(``recall_max_tokens`` 512). Recall finds different older messages every turn, so its section
sits after the stable history and before the current turn; here each turn recalls 0-3 random
older messages of the path (the real lookup matches the new turn's words).

Both curators run on the same turns in one run. curator/4 is the one in ``compaction.curator``;
curator/3 is loaded from the commit where it last ran (``CURATOR3_COMMIT``, read with
``git show``), so it is measured as it was, not re-implemented. The curators are pure
functions: this bench drives them directly with stored token counts, renders each input as a
sequence of token identities (system prompt, memo, messages, an elided result's marker) and
writes every requested memo at once, as a worker that keeps pace would. (Memo quality through
the real services is ``memo_eval``'s job.)

Workloads:
- ``support``: the realistic 5,000-turn conversation of ``bench/long_conversation.py`` (a
  ~100-token question, a ~240-token answer);
- ``agent``: a tool-heavy agent (a question, then 1-3 steps of a tool call and its results of
  150-2,500 tokens, then an answer).

    .venv/bin/python bench/prefix_reuse.py                 # 5,000 turns each
    .venv/bin/python bench/prefix_reuse.py --turns 1000
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compaction import curator as curator4  # noqa: E402

CURATOR3_COMMIT = "8078aa1"
# Windows per workload: the support conversation's 8,192 (as the other benches); the agent's
# 32,768, since an agent whose steps read files and logs runs on a larger model window.
WINDOWS = {"support": 8_192, "agent": 32_768}
RESERVE, SYSTEM = 1_024, 60
MEMO_TOKENS = 480
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


def load_curator3() -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{CURATOR3_COMMIT}:compaction/curator.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("curator3", file.name)
    module = importlib.util.module_from_spec(spec)
    sys.modules["curator3"] = module
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


class Run:
    """One curator over one workload: assembles an input whenever the path ends with a turn
    the model must answer, renders it as token identities and compares it with the previous
    input plus what followed it."""

    def __init__(self, module: ModuleType, window: int, *, recall: bool = False) -> None:
        self.module = module
        self.policy = module.Policy()
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
        elided = ELIDED_TOKENS if message.role == "tool" and message.tokens > ELIDE_ABOVE else None
        kwargs = {"calls_tools": message.role == "assistant"} if self._has_calls_tools else {}
        return module_turn(message.id, message.role, message.tokens, elided_tokens=elided, **kwargs)

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
        self.previous_plan = plan
        rendered = self.render(plan, current)
        if plan.memo is not None or plan.anchor or plan.dropped:
            self.overflowed = True
        if self.overflowed and self.previous is not None:
            self.measure(plan, rendered, current)
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
            tokens += [("memo", plan.memo.id, k) for k in range(MEMO_TOKENS)]
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

    def measure(self, plan: object, rendered: list[tuple], current: list[Message]) -> None:
        # The previous input followed by its answer (what the model said after it), as a
        # cache holds it; the new turn's own messages are not part of it.
        new = {m.id for m in current if m.role != "assistant"}
        followed = self.previous + [
            ("message", m.id, k)
            for m in self.path[-PATH_TURNS:]
            if m.id > self.previous_last_id and m.id not in new
            for k in range(m.tokens)
        ]
        common = 0
        for a, b in zip(rendered, followed, strict=False):
            if a != b:
                break
            common += 1
        self.result.reuse.append(common / len(rendered))
        self.result.input_tokens.append(len(rendered))
        self.result.uncached.append(len(rendered) - common)
        if plan.memo is not None and plan.dropped:
            memo_end = plan.memo.last_id
            self.result.lost_middle += any(i > memo_end for i in plan.dropped)

    def write_memo(self, request: object) -> None:
        self.result.memo_calls += 1
        fields = self.module.Memo.__dataclass_fields__
        extra = {"chain_depth": 0} if "chain_depth" in fields else {}
        self.memos.append(
            self.module.Memo(
                id=len(self.memos) + 1,
                first_id=request.first_id,
                last_id=request.last_id,
                tokens=MEMO_TOKENS,
                **extra,
            )
        )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(workload: str, turns: int, curators: dict[str, ModuleType]) -> dict[str, Result]:
    runs = {name: Run(module, WINDOWS[workload]) for name, module in curators.items()}
    runs["curator/4 + recall"] = Run(curators["curator/4"], WINDOWS[workload], recall=True)
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


def report(workload: str, results: dict[str, Result]) -> None:
    today = statistics.fmean(results["curator/3"].input_tokens)
    print(f"\n{workload} (window {WINDOWS[workload]:,}): per input after the first overflow")
    print(
        f"{'curator':<18} {'inputs':>7} {'reuse mean':>10} {'p10':>6} {'tokens':>7} "
        f"{'cost@10%':>9} {'cost@50%':>9} {'memos/1k turns':>15} {'lost middle':>12}"
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5_000)
    args = parser.parse_args()
    curators = {"curator/3": load_curator3(), "curator/4": curator4}
    for workload in ("support", "agent"):
        report(workload, run(workload, args.turns, curators))
    return 0


if __name__ == "__main__":
    sys.exit(main())
