"""`manage.py erasure_scrub`: rewrite the content tables so erased content leaves the files."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit.scrub import database_scrub
from auditlog.events import Actor, audit_event_record

SCRUBBER = Actor.system("erasure-scrub")


class Command(BaseCommand):
    help = (
        "After erasures (deletion requests, retention, redactions): wait for older transactions, "
        "VACUUM FULL the content tables and, on PostgreSQL, checkpoint and switch the WAL, so "
        "the database files no longer hold erased content. Takes an exclusive lock on each "
        "table while it is rewritten: run it in a quiet hour. See docs/erasure.md."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="how long to wait for transactions older than now to end (default 60)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scrub = database_scrub(wait_seconds=options["wait"])
        audit_event_record(
            actor=SCRUBBER,
            action="erasure.scrubbed",
            tenant_id=None,
            thread_public_id="",
            object_ids=[],
            details={
                "vendor": scrub.vendor,
                "tables": scrub.tables,
                "steps": scrub.steps,
                "warnings": scrub.warnings,
            },
        )
        for step in scrub.steps:
            self.stdout.write(f"done: {step}")
        for warning in scrub.warnings:
            self.stdout.write(f"not reached: {warning}")
        verdict = "complete" if scrub.complete else "incomplete (see above)"
        self.stdout.write(f"erasure scrub {verdict}, waited {scrub.waited_seconds}s")
