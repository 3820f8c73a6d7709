import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from convmem import key_rotation
from convmem.key_providers import key_provider


class Command(BaseCommand):
    help = (
        "Re-wrap every live data key under the key provider's current key-encryption key "
        "(CONVMEM_MASTER_KEY), unwrapping under CONVMEM_MASTER_KEY_PREVIOUS; content is not "
        "rewritten. Resumable: a re-run re-wraps only the keys still under an old key "
        "(docs/erasure.md, 'Rotating the master key')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=key_rotation.BATCH_SIZE)
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Unwrap and re-wrap in memory only: counts, and the keys no configured key opens.",
        )

    def handle(self, *args: object, batch_size: int, dry_run: bool, **options: object) -> None:
        provider = key_provider()
        for kek_id, count in key_rotation.live_keys_by_kek().items():
            current = " (current)" if kek_id == provider.kek_id else ""
            self.stdout.write(f"{count} live data keys under {kek_id}{current}")
        total = key_rotation.keys_to_rewrap(provider).count()
        with tqdm(total=total, unit="key", file=sys.stderr) as bar:
            report = key_rotation.data_keys_rewrap(
                batch_size=batch_size, dry_run=dry_run, on_batch=bar.update
            )
        verb = "Would re-wrap" if dry_run else "Re-wrapped"
        self.stdout.write(f"{verb} {report.rewrapped} of {total} data keys under {provider.kek_id}")
        if report.changed_meanwhile:
            self.stdout.write(
                f"{report.changed_meanwhile} were destroyed or re-wrapped by another run meanwhile"
            )
        if report.unopenable:
            raise CommandError(
                f"{len(report.unopenable)} data keys open under no configured master key "
                f"(first: {', '.join(report.unopenable[:5])}): add the key that wrapped them to "
                "CONVMEM_MASTER_KEY_PREVIOUS and run again."
            )
