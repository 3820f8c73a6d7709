import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from audit.exports import FORMATS, Export, export_begin
from auditlog.events import Actor
from convmem.models import Tenant
from threads.models import Message, Role, Thread

OPERATOR = Actor.system("manage.py export_history")


class Command(BaseCommand):
    help = (
        "Export the full history of a thread, or of every thread of a tenant's end user, in the "
        "convmem.export/2 format (docs/export-schema.md). Writes to stdout unless --output."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        subject = parser.add_mutually_exclusive_group(required=True)
        subject.add_argument("--thread", metavar="ID", help="A thread id (thr_…).")
        subject.add_argument("--user-ref", metavar="REF", help="An end user (needs --tenant).")
        parser.add_argument("--tenant", metavar="NAME", help="The tenant of --user-ref.")
        parser.add_argument("--output", metavar="FILE", help="Write here (with a progress bar).")
        parser.add_argument("--format", choices=list(FORMATS), default="json", dest="fmt")

    def handle(
        self,
        *args: object,
        thread: str | None,
        user_ref: str | None,
        tenant: str | None,
        output: str | None,
        fmt: str,
        **options: object,
    ) -> None:
        if fmt == "pdf" and output is None:
            raise CommandError("--format pdf needs --output (a PDF is not written to a terminal).")
        export = self._begin(thread, user_ref, tenant, fmt)
        if fmt == "pdf":
            with open(output, "wb") as file:
                file.write(export.pdf())
            self._wrote(output, export)
            return
        if output is None:
            for chunk in export.chunks():
                self.stdout.write(chunk, ending="")
            return
        messages = Message.objects.filter(thread__in=export.threads()).exclude(role=Role.ROOT)
        with (
            open(output, "w", encoding="utf-8") as file,
            tqdm(total=messages.count(), unit="msg", file=sys.stderr) as bar,
        ):

            def tick(kind: str) -> None:
                if kind == "message":
                    bar.update()

            for chunk in export.chunks(on_record=tick):
                file.write(chunk)
        self._wrote(output, export)

    def _wrote(self, output: str, export: Export) -> None:
        self.stderr.write(
            f"Wrote {output}: " + ", ".join(f"{n} {k}" for k, n in export.counts.items())
        )

    def _begin(
        self, thread: str | None, user_ref: str | None, tenant: str | None, fmt: str
    ) -> Export:
        if thread is not None:
            found = Thread.objects.select_related("tenant").filter(public_id=thread).first()
            if found is None:
                raise CommandError(f"No thread {thread!r}.")
            return export_begin(tenant=found.tenant, actor=OPERATOR, thread=found, fmt=fmt)
        if tenant is None:
            raise CommandError("--user-ref needs --tenant.")
        owner = Tenant.objects.filter(name=tenant).first()
        if owner is None:
            raise CommandError(f"No tenant named {tenant!r}.")
        return export_begin(tenant=owner, actor=OPERATOR, user_ref=user_ref, fmt=fmt)
