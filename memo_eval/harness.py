"""The independent memo evaluation, driven through convmem's real services.

Each conversation of the outside evaluator's dataset (``memo_eval/independent``, never read by
the memo writer's author beyond its README, its scorer's interface and the dev data) is appended
message by message with the threads service (tool calls and tool results as such); after every
user turn the context is assembled as the context endpoint does (window 8192, reserve 1024 by
default); the memos that assembly asks for are written by a **real Celery worker** process (the
harness waits until the thread has no pending memo before the next message, as a worker keeping
up with a live conversation would). At the evaluator's indices (checkpoints, probes, after
corrections) the model input is scored with the evaluator's own ``score_input``, and so is the
memo alone. ``--inline`` writes the memos in this process instead (quicker, for tuning).

    .venv/bin/python -m memo_eval.harness --split dev              # tuning
    .venv/bin/python -m memo_eval.harness --split heldout --json out.json   # the final report
    .venv/bin/python -m memo_eval.harness --split fresh       # the second evaluator's set

Tune only on ``dev``; ``heldout`` and ``fresh`` are for the report. A third outside evaluator
(agenteval) wrote ``memo_eval/agentic`` for agents at work: ``--split agentic-dev`` is tuned on,
``--split agentic-heldout`` is for the report only. The database is a scratch one
(``bench.bench_database``: PostgreSQL when ``DATABASE_URL`` names one, else SQLite in a
temporary directory); the worker's broker is the Redis of ``REDIS_URL`` when given, else the
filesystem broker in that directory.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INDEPENDENT = Path(__file__).resolve().parent / "independent"
# The splits: the first evaluator's dev (for tuning) and held-out, and a second evaluator's
# ``fresh`` set (``memo_eval/fresh``), written later from the list of kinds and formats
# alone, never looked at beyond its README and run only for reports.
SPLITS = {
    "dev": INDEPENDENT / "memo_eval_data" / "data" / "dev.jsonl",
    "heldout": INDEPENDENT / "memo_eval_data" / "data" / "heldout.jsonl",
    "fresh": Path(__file__).resolve().parent / "fresh" / "fresh.jsonl",
    # A third outside evaluator's set of agents at work (``memo_eval/agentic``: coding, data,
    # ops and research agents whose facts sit in tool outputs and tool-call arguments). Tune
    # only on ``agentic-dev``; ``agentic-heldout`` is for reports.
    "agentic-dev": Path(__file__).resolve().parent / "agentic" / "dev.jsonl",
    "agentic-heldout": Path(__file__).resolve().parent / "agentic" / "heldout.jsonl",
}
WORKER_READY_TIMEOUT = 90.0
DRAIN_TIMEOUT = 300.0

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(INDEPENDENT))  # the evaluator's package keeps its own name


def scorer() -> Any:
    """The evaluator's ``score`` module, unchanged."""
    from memo_eval_data import score

    return score


@dataclass
class ConversationResult:
    """What one conversation scored: the model input and the memo alone, at each index."""

    conversation: str
    domain: str
    inputs: list[dict[str, Any]] = field(default_factory=list)
    memo_only: list[dict[str, Any]] = field(default_factory=list)
    memo_tokens: list[int] = field(default_factory=list)
    max_memo_tokens: int = 0
    memos_written: int = 0
    final_memo: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)


def openai_tool_calls(calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The dataset's ``{id, name, arguments}`` calls in the Chat Completions shape."""
    if not calls:
        return None
    return [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]},
        }
        for call in calls
    ]


def input_text(messages: list[dict[str, Any]]) -> str:
    """The model input as one text: every message's content and tool calls, as sent."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content)
        parts.append(f"{message['role']}: {content or ''}")
        for call in message.get("tool_calls") or ():
            parts.append(f"{call['function']['name']}({call['function']['arguments']})")
    return "\n".join(parts)


def run_conversation(
    conversation: dict[str, Any], *, window: int, reserve: int, inline: bool
) -> ConversationResult:
    """One conversation through the services; see the module docstring."""
    from auditlog.events import Actor
    from compaction import services as compaction_services
    from compaction.context import context_assemble
    from compaction.models import Summary
    from convmem.tenancy import tenant_create
    from convmem.tokens import MESSAGE_OVERHEAD
    from threads import services
    from threads.models import Thread

    score = scorer()
    actor = Actor.system("memo-eval")
    # The tenant's name (and its key's, which adds " default") must fit 50 characters: the
    # agentic set's ids are long ("agentic-research_assistant_agent-heldout-1").
    name = f"eval-{conversation['id'][-28:]}-{uuid.uuid4().hex[:6]}"
    tenant, _, _ = tenant_create(name=name)
    thread = services.thread_create(tenant=tenant, actor=actor, user_ref=conversation["id"])
    indices = set(score.evaluation_indices(conversation))
    result = ConversationResult(conversation["id"], conversation["domain"])

    for index, message in enumerate(conversation["messages"]):
        services.message_append(
            thread=thread,
            actor=actor,
            role=message["role"],
            content=message.get("content") or "",
            tool_calls=openai_tool_calls(message.get("tool_calls")),
            tool_call_id=message.get("tool_call_id"),
        )
        if message["role"] != "user":
            continue
        current = Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk)
        assembly = context_assemble(
            thread=current, actor=actor, window_tokens=window, reserve_tokens=reserve
        )
        if index in indices:
            memo = assembly.sections.get("memo")
            shown = bool(memo) and memo.get("status") == "ready"
            memo_text = Summary.objects.get(public_id=memo["summary_id"]).text if shown else ""
            result.inputs.append(
                score.score_input(conversation, index, input_text(assembly.messages))
            )
            result.memo_only.append(score.score_input(conversation, index, memo_text))
            memo_tokens = assembly.tokens.get("memo", 0) - (MESSAGE_OVERHEAD if shown else 0)
            result.memo_tokens.append(max(0, memo_tokens))
            result.final_memo = memo_text
            result.details.append(_details(conversation, index, memo_text, assembly))
        if inline:
            while pending := Summary.objects.filter(thread=thread, status="pending").first():
                compaction_services.summary_write(summary_id=pending.pk)
        else:
            _drain(thread.pk)
    ready = Summary.objects.filter(thread=thread, status="ready")
    result.memos_written = ready.count()
    result.max_memo_tokens = max(ready.values_list("token_count", flat=True), default=0)
    return result


def _details(
    conversation: dict[str, Any], at: int, memo_text: str, assembly: Any
) -> dict[str, Any]:
    """For reading a run: the memo at ``at``, and the open values neither it nor the input
    holds, and the stale values still in the memo."""
    score = scorer()
    model_input = score.norm(input_text(assembly.messages))
    memo = score.norm(memo_text)
    facts = conversation["facts"]
    return {
        "at": at,
        "memo": memo_text,
        "missing": [
            f"{f['kind']}:{f['value']}"
            for f in facts
            if score.is_open(f, at) and not score.present(f["value"], model_input)
        ],
        "stale_in_memo": [
            f["value"]
            for f in facts
            if f["superseded_at"] is not None
            and f["superseded_at"] <= at
            and score.present(f["value"], memo)
        ],
    }


def _drain(thread_id: int) -> None:
    """Wait until the worker has written (or failed) every pending memo of the thread."""
    from compaction.models import Summary

    deadline = time.monotonic() + DRAIN_TIMEOUT
    while Summary.objects.filter(thread_id=thread_id, status="pending").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the worker did not write the pending memos in time")
        time.sleep(0.05)


@contextmanager
def celery_worker() -> Iterator[subprocess.Popen[bytes]]:
    """A real ``celery -A convmem worker`` on the harness's database and broker."""
    from django.conf import settings

    log = Path(os.environ["CONVMEM_VAR_DIR"]) / "worker.log"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "convmem.settings", "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "convmem",
        "worker",
        "--loglevel=INFO",
        "--pool=solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        # Every queue: memo writing is routed to its own (``CELERY_TASK_ROUTES``), which a
        # worker given no queues never consumes.
        "--queues",
        ",".join(settings.CELERY_QUEUE_NAMES),
        "-n",
        f"memo-eval-{uuid.uuid4().hex[:8]}@%h",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WORKER_READY_TIMEOUT
        while " ready." not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"celery worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def report(results: list[ConversationResult]) -> dict[str, Any]:
    """The evaluator's aggregates for the model input and for the memo alone, and memo sizes."""
    score = scorer()
    sizes = [tokens for result in results for tokens in result.memo_tokens]
    return {
        "model_input": score.aggregate([r for result in results for r in result.inputs]),
        "memo_alone": score.aggregate([r for result in results for r in result.memo_only]),
        "memo_tokens": {
            "max_stored": max((result.max_memo_tokens for result in results), default=0),
            "mean_at_indices": round(sum(sizes) / len(sizes), 1) if sizes else 0,
        },
        "memos_written": sum(result.memos_written for result in results),
        "conversations": [result.conversation for result in results],
    }


def format_report(summary: dict[str, Any], *, title: str) -> list[str]:
    lines = [title]
    for name in ("model_input", "memo_alone"):
        figures = summary[name]
        lines.append(
            f"  {name}: static recall {figures['static_recall']}, probes "
            f"{figures['probe_answerability']} (n={figures['n_probes']}), corrections "
            f"{figures['correction_score']} (newest present {figures['correction_newest_present']}"
            f", stale absent {figures['correction_stale_absent']}, "
            f"n={figures['n_corrections_scored']}), inputs {figures['n_inputs']}"
        )
        lines.append(f"    by checkpoint: {figures['static_recall_by_checkpoint']}")
        lines.append(f"    by domain: {figures['static_recall_by_domain']}")
        lines.append(f"    by kind: {figures['static_recall_by_kind']}")
    lines.append(
        f"  memo tokens: {summary['memo_tokens']}, memos written {summary['memos_written']}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
    parser.add_argument("--conversation", action="append", help="only this id (repeatable)")
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--reserve", type=int, default=1024)
    parser.add_argument("--inline", action="store_true", help="write memos in this process")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--memos", action="store_true", help="print each final memo")
    parser.add_argument("--details", type=Path, help="write each index's memo and misses here")
    args = parser.parse_args(argv)
    from bench import bench_database

    with bench_database(keep_redis=not args.inline) as database:
        return _evaluate(args, database)


def _evaluate(args: argparse.Namespace, database: str) -> int:
    score = scorer()
    conversations = score.load(SPLITS[args.split])
    if args.conversation:
        conversations = [c for c in conversations if c["id"] in set(args.conversation)]
    results: list[ConversationResult] = []
    started = time.monotonic()
    worker = None if args.inline else celery_worker()
    try:
        if worker is not None:
            worker.__enter__()
        for conversation in conversations:
            results.append(
                run_conversation(
                    conversation, window=args.window, reserve=args.reserve, inline=args.inline
                )
            )
            print(f"{conversation['id']}: {time.monotonic() - started:.0f}s", file=sys.stderr)
            if args.memos:
                print(f"--- {conversation['id']} final memo ---\n{results[-1].final_memo}\n")
    finally:
        if worker is not None:
            worker.__exit__(None, None, None)
    if args.details:
        details = {result.conversation: result.details for result in results}
        args.details.write_text(json.dumps(details, indent=1, ensure_ascii=False))
    summary = report(results)
    how = "memos written in-process" if args.inline else "memos written by a Celery worker"
    title = (
        f"independent {args.split} split, {len(results)} conversations, window {args.window}, "
        f"reserve {args.reserve}, {database}, {how}"
    )
    print("\n".join(format_report(summary, title=title)))
    if args.json:
        args.json.write_text(json.dumps({"title": title, **summary}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
