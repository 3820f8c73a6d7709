import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from convmem.demo import demo_seed

DEMO_STAFF = [("support", "Support"), ("compliance", "Compliance")]


def _staff_user(username: str, group: str) -> str:
    """(Re)create a staff user in ``group`` with a fresh password, and return the password."""
    password = secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.is_staff = True
    user.is_superuser = False
    user.set_password(password)
    user.save()
    user.groups.set([Group.objects.get(name=group)])
    return password


class Command(BaseCommand):
    help = (
        "Create (or refresh) the demo tenant, a fresh demo API key, a staff superuser and a "
        "Support and a Compliance staff user."
    )

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
            # Staff in the groups the audit migration creates: what each role sees in the admin.
            staff = {name: _staff_user(name, group) for name, group in DEMO_STAFF}
        self.stdout.write(
            f"Demo thread: {seeded.thread.public_id} (user_ref {seeded.thread.user_ref})"
        )
        self.stdout.write(
            f"Long demo thread (memos appear once the worker runs): {seeded.long_thread.public_id}"
        )
        self.stdout.write(f"Deletion request to review: {seeded.deletion.public_id}")
        self.stdout.write(f"Admin login: admin / {password}")
        for name, group in DEMO_STAFF:
            self.stdout.write(f"{group} login: {name} / {staff[name]}")
        self.stdout.write(f"Demo tenant '{seeded.tenant.name}' API key: {seeded.key}")
