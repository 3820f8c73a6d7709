from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from auditlog.events import Actor
from convmem.errors import InvalidRequest
from convmem.models import Tenant
from imports import formats
from imports.services import FAILED, IMPORTED, SKIPPED, conversations_import

OPERATOR = Actor.system("manage.py import_conversations")


class Command(BaseCommand):
    help = (
        "Import conversations into threads of a tenant: a ChatGPT or Claude data export's "
        "conversations.json, or a convmem JSON export. Branches stay branches; a conversation "
        "imported before is skipped, so running it twice creates nothing new."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="conversations.json, or a convmem export (.json).")
        parser.add_argument("--tenant", required=True, metavar="NAME")
        parser.add_argument(
            "--user-ref",
            metavar="REF",
            help="The end user the threads belong to (needed for ChatGPT and Claude exports).",
        )
        parser.add_argument(
            "--format", choices=formats.FORMATS, dest="fmt", help="Default: detected."
        )

    def handle(
        self,
        *args: object,
        file: str,
        tenant: str,
        user_ref: str | None,
        fmt: str | None,
        **options: object,
    ) -> None:
        owner = Tenant.objects.filter(name=tenant).first()
        if owner is None:
            raise CommandError(f"No tenant named {tenant!r}.")
        try:
            data = formats.loads(Path(file).read_bytes())
            fmt = fmt or formats.detect(data)
            with tqdm(
                total=formats.conversation_count(data, fmt),
                unit="conversation",
                file=self.stderr._out,
                disable=None,  # no bar when stderr is not a terminal
            ) as bar:
                report = conversations_import(
                    tenant=owner,
                    actor=OPERATOR,
                    data=data,
                    fmt=fmt,
                    user_ref=user_ref,
                    on_result=lambda result: bar.update(1),
                )
        except (OSError, InvalidRequest) as error:
            raise CommandError(str(getattr(error, "detail", error))) from None
        for result in report.results:
            if result.status == FAILED:
                self.stderr.write(f"failed {result.source_id}: {result.detail}")
        self.stdout.write(
            f"{report.format}: {report.count(IMPORTED)} imported, {report.count(SKIPPED)} "
            f"skipped (imported before), {report.count(FAILED)} failed."
        )
