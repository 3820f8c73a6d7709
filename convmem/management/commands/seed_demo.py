from django.core.management.base import BaseCommand

from convmem.demo import CREDENTIALS_FILE, DemoLogin, demo_credentials_path, demo_seed


def _login_line(login: DemoLogin) -> str:
    if login.password is not None:
        return f"{login.label} login: {login.username} / {login.password}"
    return (
        f"{login.label} login: {login.username} (password changed since the seed, or "
        f"{CREDENTIALS_FILE} was lost; set one with `manage.py changepassword {login.username}`)"
    )


class Command(BaseCommand):
    help = (
        "Create what is missing of the demo: the demo tenant and its API key, a staff superuser, "
        "a Support and a Compliance staff user, and demo threads. Existing users keep their "
        "passwords and the stored key is reused (see convmem.demo); prints the logins and the key."
    )

    def handle(self, *args: object, **options: object) -> None:
        seeded = demo_seed()
        self.stdout.write(
            f"Demo thread: {seeded.thread.public_id} (user_ref {seeded.thread.user_ref})"
        )
        self.stdout.write(
            f"Long demo thread (memos appear once the worker runs): {seeded.long_thread.public_id}"
        )
        self.stdout.write(f"Deletion request to review: {seeded.deletion.public_id}")
        for login in seeded.logins:
            self.stdout.write(_login_line(login))
        self.stdout.write(f"(Logins and key are kept in {demo_credentials_path()}.)")
        if seeded.key.minted_because:
            self.stdout.write(f"New demo API key ({seeded.key.minted_because}).")
        # The key is the last word of the last line, as with create_tenant / create_api_key.
        self.stdout.write(f"Demo tenant '{seeded.tenant.name}' API key: {seeded.key.key}")
