"""Memo quality on held-out 500-turn conversations: what the assembled context still holds.

Runs the production memo loop (``memo_eval.project``: ~3k-token segments, each memo written
from the previous memo and the next segment, memo of 512 tokens, window 8192, reserve 1024) on
the held-out conversations: seeds 1001-1010 in the "heldout" phrasings and 2001-2010 in the
"heldout2" phrasings, which no tuning run used ("heldout2" was written after the embedded
summarizer was frozen). Prints, per checkpoint and per phrasing set: planted facts of
still-open cases in memo + recent turns (and in the memo alone), all planted facts, probes
answered, memo size and compression. The goal: at turn 500 at least 0.9 of the still-open
facts, every memo within its size. Exits 1 if it is not met. No database is used.

    .venv/bin/python bench/memo_quality.py                     # embedded backend, held-out
    .venv/bin/python bench/memo_quality.py --split dev         # the tuning conversations
    .venv/bin/python bench/memo_quality.py --backend openai    # any configured backend
    .venv/bin/python bench/memo_quality.py --services          # through the real services

With ``--services`` the conversations go through convmem itself instead of the simulation, in
a scratch database (``bench_database``; PostgreSQL if ``DATABASE_URL`` names one): every message
is appended with the threads service, the context is assembled after each user turn (window
8192, reserve 1024, the memo size of threads without a profile,
``CONVMEM_DEFAULT_MEMO_MAX_TOKENS``), pending memos are written at once by the memo writer
(rolling memos, segments sized by the summarizer's context), and each checkpoint scores the
model input the context endpoint returns — the memo and the recent turns exactly as the model
would read them.
"""

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def through_services(backend, conversation, loop):
    """One conversation through the real services; a ``Run`` of its checkpoints."""
    from auditlog.events import Actor
    from compaction import services as compaction_services
    from compaction.context import context_assemble
    from compaction.models import Summary
    from convmem.tenancy import tenant_create
    from convmem.tokens import MESSAGE_OVERHEAD
    from memo_eval.project.simulate import Run, measure
    from threads import services
    from threads.models import Message, Thread

    actor = Actor.system("memo-quality")
    tenant, _, _ = tenant_create(name=f"quality-{conversation.name}")
    thread = services.thread_create(tenant=tenant, actor=actor, user_ref=conversation.name)
    run = Run(conversation=conversation.name)
    checkpoints = set(loop.checkpoints)

    def assemble():
        current = Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk)
        assembly = context_assemble(
            thread=current, actor=actor, window_tokens=loop.window, reserve_tokens=loop.reserve
        )
        while pending := Summary.objects.filter(thread=thread, status="pending").first():
            run.calls += 1
            compaction_services.summary_write(summary_id=pending.pk, backend=backend)
        return assembly

    for index, (role, content) in enumerate(conversation.messages):
        services.message_append(thread=thread, actor=actor, role=role, content=content)
        turn = index + 1
        if role == "user" or turn in checkpoints:
            assembly = assemble()
        if turn not in checkpoints:
            continue
        memo = assembly.sections["memo"]
        shown = memo and memo["status"] == "ready"
        text = Summary.objects.get(public_id=memo["summary_id"]).text if shown else ""
        recent = assembly.sections["recent"]
        first_recent = Message.objects.get(public_id=recent[0]).depth
        covered = Message.objects.filter(thread=thread, depth__lt=first_recent).exclude(role="root")
        run.checkpoints.append(
            measure(
                conversation,
                turn=turn,
                memo_text=text,
                memo_tokens=assembly.tokens["memo"] - MESSAGE_OVERHEAD if shown else 0,
                covered_tokens=sum(covered.values_list("token_count", flat=True)),
                recent_messages=len(recent),
                dropped_messages=len(assembly.sections["dropped"]),
                context="\n".join(str(m["content"]) for m in assembly.messages),
            )
        )
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backend", default="embedded")
    parser.add_argument("--split", choices=["heldout", "dev"], default="heldout")
    parser.add_argument("--services", action="store_true", help="through convmem's services")
    args = parser.parse_args()
    if args.services:
        from bench import bench_database

        with bench_database():
            return evaluate(args)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")
    import django

    django.setup()
    return evaluate(args)


def evaluate(args: argparse.Namespace) -> int:
    from django.conf import settings

    from compaction.backends import get_backend
    from compaction.profiles import writer_segment_tokens
    from memo_eval.project.generator import SPLITS, generate
    from memo_eval.project.report import evaluate_split, format_report, goal_met, merged
    from memo_eval.project.simulate import DEFAULT_LOOP

    backend = get_backend(args.backend)
    started = time.monotonic()
    by_phrasing: dict[str, list] = {}
    for phrasing, seed in SPLITS[args.split]:
        by_phrasing.setdefault(phrasing, []).append(generate(seed=seed, phrasing=phrasing))
    reports = []
    for phrasing, conversations in by_phrasing.items():
        seeds = [conversation.seed for conversation in conversations]
        if args.services:
            # The memo size of threads without a profile; segments are the curator's: at most
            # this many tokens, usually ending earlier.
            memo_tokens = settings.CONVMEM_DEFAULT_MEMO_MAX_TOKENS
            loop = replace(
                DEFAULT_LOOP,
                memo_tokens=memo_tokens,
                segment_tokens=writer_segment_tokens(
                    context_tokens=backend.context_tokens, memo_max_tokens=memo_tokens
                ),
            )
            report = evaluate_split(backend, [], loop)
            report.runs = [through_services(backend, c, loop) for c in conversations]
        else:
            report = evaluate_split(backend, conversations)
        reports.append(report)
        how = "through the services" if args.services else "simulated loop"
        title = f"{phrasing} (seeds {seeds[0]}-{seeds[-1]}), {how}"
        print("\n".join(format_report(reports[-1], title=title)), end="\n\n")
    pooled = merged(reports)
    title = f"{args.split}, all {len(pooled.runs) + len(pooled.failures)} conversations"
    print("\n".join(format_report(pooled, title=title)))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0 if goal_met(pooled) else 1


if __name__ == "__main__":
    sys.exit(main())
