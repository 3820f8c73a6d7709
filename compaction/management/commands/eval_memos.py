"""`manage.py eval_memos`: score summarizer backends on the synthetic memo eval dataset."""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from compaction.backends import DEFAULT_BACKEND, get_backend
from compaction.evals import DEFAULT_DATA_DIR, EvalRow, evaluate, load_dataset

DEFAULT_MAX_TOKENS = 250
_HEADER = "conversation" + " " * 14 + "recall  planted  unsupported  compression"


class Command(BaseCommand):
    help = (
        "Summarise each conversation of the memo eval dataset with each backend and print, per "
        "backend: fact recall, planted-fact recall, unsupported-fact rate and compression."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--backend",
            action="append",
            dest="backends",
            metavar="NAME",
            help="backend name or dotted path; repeat for several (default: the configured one)",
        )
        parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR")

    def handle(self, *args: Any, **options: Any) -> None:
        conversations = load_dataset(options["data"])
        if not conversations:
            raise CommandError(f"No *.json conversations in {options['data']}")
        if options["max_tokens"] < 1:
            raise CommandError("--max-tokens must be positive")
        names = options["backends"] or [
            getattr(settings, "CONVMEM_SUMMARIZER_BACKEND", DEFAULT_BACKEND)
        ]
        for name in names:
            try:
                backend = get_backend(name)
            except ValueError as error:
                raise CommandError(str(error)) from error
            rows = evaluate(backend, conversations, max_tokens=options["max_tokens"])
            self._print_table(name, rows, max_tokens=options["max_tokens"])

    def _print_table(self, name: str, rows: list[EvalRow], *, max_tokens: int) -> None:
        drafts = [row.draft for row in rows if row.draft]
        about = f", model {drafts[0].model}, prompt {drafts[0].prompt_version}" if drafts else ""
        self.stdout.write(f"backend {name}{about}, max_tokens {max_tokens}")
        self.stdout.write(_HEADER)
        measured = []
        for row in rows:
            if row.scores is None or row.planted_recall is None:
                self.stdout.write(f"{row.conversation:<24} failed: {row.error}")
                continue
            values = (
                row.scores.fact_recall,
                row.planted_recall,
                row.scores.unsupported_rate,
                row.scores.compression,
            )
            measured.append(values)
            self.stdout.write(_format_row(row.conversation, values))
        if measured:
            # Failed conversations are left out of the mean, and listed above it.
            means = tuple(fmean(column) for column in zip(*measured, strict=True))
            self.stdout.write(_format_row("mean", means))
        self.stdout.write("")


def _format_row(label: str, values: tuple[float, ...]) -> str:
    """Recall, planted recall, unsupported rate, compression, aligned under `_HEADER`."""
    recall, planted, unsupported, compression = values
    return f"{label:<24} {recall:>7.3f} {planted:>8.3f} {unsupported:>12.3f} {compression:>12.3f}"
