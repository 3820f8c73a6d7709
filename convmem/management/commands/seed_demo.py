import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from convmem.demo import demo_seed


class Command(BaseCommand):
    help = "Create (or refresh) the demo tenant, a fresh demo API key and a staff superuser."

    def handle(self, *args: object, **options: object) -> None:
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            seeded = demo_seed()
            user, _ = get_user_model().objects.get_or_create(
                username="admin", defaults={"is_staff": True, "is_superuser": True}
            )
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
        self.stdout.write(
            f"Demo thread: {seeded.thread.public_id} (user_ref {seeded.thread.user_ref})"
        )
        self.stdout.write(f"Admin login: admin / {password}")
        self.stdout.write(f"Demo tenant '{seeded.tenant.name}' API key: {seeded.key}")
