from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from convmem.models import KNOWN_SCOPES, Tenant
from convmem.tenancy import api_key_create


class Command(BaseCommand):
    help = "Create another API key for a tenant; prints the key last (shown only once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="Tenant name.")
        parser.add_argument("--name", default="", help="A label for the key.")
        parser.add_argument(
            "--scope", action="append", default=[], dest="scopes", choices=KNOWN_SCOPES
        )

    def handle(
        self, *args: object, tenant: str, name: str, scopes: list[str], **options: object
    ) -> None:
        found = Tenant.objects.filter(name=tenant).first()
        if found is None:
            raise CommandError(f"No tenant named {tenant!r}.")
        try:
            api_key, key = api_key_create(tenant=found, name=name or f"{tenant} key", scopes=scopes)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(
            f"Created key {api_key.prefix} for {found.name} (scopes: "
            f"{', '.join(api_key.scopes) or 'none'}). It is shown only once."
        )
        self.stdout.write(f"API key: {key}")
