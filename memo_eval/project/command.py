"""The body of `manage.py eval_memos`: chained memos over long generated conversations, scored
against what the generator planted (see `memo_eval.project`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from compaction.backends import DEFAULT_BACKEND, get_backend
from memo_eval.project.generator import DEFAULT_TURNS, PHRASINGS, SPLITS, generate
from memo_eval.project.report import evaluate_split, format_report
from memo_eval.project.simulate import (
    DEFAULT_CHECKPOINTS,
    DEFAULT_MEMO_TOKENS,
    DEFAULT_RESERVE,
    DEFAULT_SEGMENT_TOKENS,
    DEFAULT_WINDOW,
    LoopSettings,
    Run,
)


class Command(BaseCommand):
    help = (
        "Run the production memo loop (chained memos over ~3k-token segments) on long generated "
        "support conversations and print, per checkpoint turn: planted facts of still-open cases "
        "in memo + recent turns (and in the memo alone), all planted facts, probes answered, memo "
        "size and compression. --split dev is for tuning, --split heldout for reporting."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--backend",
            action="append",
            dest="backends",
            metavar="NAME",
            help="backend name or dotted path; repeat for several (default: the configured one)",
        )
        parser.add_argument("--split", choices=sorted(SPLITS), default="dev")
        parser.add_argument(
            "--seed",
            type=int,
            action="append",
            dest="seeds",
            help="run only this seed (repeatable) with --phrasing, instead of a split",
        )
        parser.add_argument("--phrasing", choices=sorted(PHRASINGS), default="dev")
        parser.add_argument("--turns", type=int, default=DEFAULT_TURNS)
        parser.add_argument("--memo-tokens", type=int, default=DEFAULT_MEMO_TOKENS)
        parser.add_argument("--segment-tokens", type=int, default=DEFAULT_SEGMENT_TOKENS)
        parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
        parser.add_argument("--reserve", type=int, default=DEFAULT_RESERVE)
        parser.add_argument(
            "--checkpoints",
            default=",".join(str(turn) for turn in DEFAULT_CHECKPOINTS),
            help="comma-separated turns (messages seen) to measure at",
        )
        parser.add_argument(
            "--verbose", action="store_true", help="also print each conversation's last memo"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        loop = self._loop(options)
        if options["seeds"]:
            conversations = [
                generate(seed=seed, phrasing=options["phrasing"], turns=options["turns"])
                for seed in options["seeds"]
            ]
            title = f"seeds {', '.join(map(str, options['seeds']))} ({options['phrasing']})"
        else:
            conversations = [
                generate(seed=seed, phrasing=phrasing, turns=options["turns"])
                for phrasing, seed in SPLITS[options["split"]]
            ]
            title = f"split {options['split']}"
        names = options["backends"] or [
            getattr(settings, "CONVMEM_SUMMARIZER_BACKEND", DEFAULT_BACKEND)
        ]
        for name in names:
            try:
                backend = get_backend(name)
            except ValueError as error:
                raise CommandError(str(error)) from error
            progress = self._print_run if options["verbose"] else None
            report = evaluate_split(backend, conversations, loop, progress=progress)
            for line in format_report(report, title=title):
                self.stdout.write(line)
            self.stdout.write("")

    @staticmethod
    def _loop(options: dict[str, Any]) -> LoopSettings:
        try:
            checkpoints = tuple(int(turn) for turn in options["checkpoints"].split(","))
        except ValueError as error:
            raise CommandError("--checkpoints takes comma-separated numbers") from error
        numbers = [options[key] for key in ("turns", "memo_tokens", "segment_tokens", "window")]
        if min(numbers) < 1 or options["reserve"] < 0 or min(checkpoints) < 1:
            raise CommandError("sizes and checkpoints must be positive")
        return LoopSettings(
            memo_tokens=options["memo_tokens"],
            segment_tokens=options["segment_tokens"],
            window=options["window"],
            reserve=options["reserve"],
            checkpoints=checkpoints,
        )

    def _print_run(self, run: Run) -> None:
        last = run.checkpoints[-1] if run.checkpoints else None
        if last is None:
            return
        self.stdout.write(
            f"{run.conversation}: turn {last.turn}, open facts {last.open_facts.hit}/"
            f"{last.open_facts.total}, memo {last.memo_tokens} tokens"
        )
        self.stdout.write(last.memo)
        for fact in last.missing_open_facts:
            self.stdout.write(f"  missing: {fact.case} {fact.label} {fact.value}")
        self.stdout.write("")
