"""Memo quality on held-out 500-turn conversations: what the assembled context still holds.

Runs the production memo loop (``compaction.memo_eval``: ~3k-token segments, each memo written
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
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backend", default="embedded")
    parser.add_argument("--split", choices=["heldout", "dev"], default="heldout")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")
    import django

    django.setup()
    from compaction.backends import get_backend
    from compaction.memo_eval.generator import SPLITS, generate
    from compaction.memo_eval.report import evaluate_split, format_report, goal_met, merged

    backend = get_backend(args.backend)
    started = time.monotonic()
    by_phrasing: dict[str, list] = {}
    for phrasing, seed in SPLITS[args.split]:
        by_phrasing.setdefault(phrasing, []).append(generate(seed=seed, phrasing=phrasing))
    reports = []
    for phrasing, conversations in by_phrasing.items():
        seeds = [conversation.seed for conversation in conversations]
        reports.append(evaluate_split(backend, conversations))
        title = f"{phrasing} (seeds {seeds[0]}-{seeds[-1]})"
        print("\n".join(format_report(reports[-1], title=title)), end="\n\n")
    pooled = merged(reports)
    title = f"{args.split}, all {len(pooled.runs) + len(pooled.failures)} conversations"
    print("\n".join(format_report(pooled, title=title)))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0 if goal_met(pooled) else 1


if __name__ == "__main__":
    sys.exit(main())
