import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from convmem import crypto, seal_existing


class Command(BaseCommand):
    help = (
        "Seal the content written before encryption was turned on (CONVMEM_ENCRYPT_CONTENT) "
        "with each subject's data key, in short batches while the service runs. Resumable: "
        "rows already sealed are skipped (docs/erasure.md, 'Sealing existing rows')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=seal_existing.BATCH_SIZE)
        parser.add_argument(
            "--dry-run", action="store_true", help="Count the rows in clear; write nothing."
        )

    def handle(self, *args: object, batch_size: int, dry_run: bool, **options: object) -> None:
        if not crypto.encryption_enabled():
            raise CommandError(
                "CONVMEM_ENCRYPT_CONTENT is off: turn it on in every process first, or the "
                "rows they write meanwhile stay in clear."
            )
        for model in seal_existing.sealed_models():
            label = model._meta.label
            if dry_run:
                clear = seal_existing.clear_rows_count(model, batch_size=batch_size)
                self.stdout.write(f"{label}: {clear} rows in clear")
                continue
            with tqdm(
                total=seal_existing.sealable_rows(model).count(),
                unit="row",
                desc=label,
                file=sys.stderr,
            ) as bar:
                sealed = seal_existing.clear_rows_seal(
                    model, batch_size=batch_size, on_batch=lambda read, _sealed: bar.update(read)
                )
            self.stdout.write(f"{label}: sealed {sealed} rows")
