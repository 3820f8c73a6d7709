from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from convmem.models import KNOWN_SCOPES
from convmem.tenancy import tenant_create


class Command(BaseCommand):
    help = "Create a tenant (a product app) with a first API key; prints the key last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Tenant name (a slug, e.g. 'acme').")
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            dest="scopes",
            choices=KNOWN_SCOPES,
            help="Extra scope for the key (repeatable); 'export' allows full-history exports.",
        )

    def handle(self, *args: object, name: str, scopes: list[str], **options: object) -> None:
        try:
            tenant, api_key, key = tenant_create(name=name, scopes=scopes)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(
            f"Created tenant {tenant.name} with key {api_key.prefix} (scopes: "
            f"{', '.join(api_key.scopes) or 'none'}). It is shown only once."
        )
        self.stdout.write(f"API key: {key}")
