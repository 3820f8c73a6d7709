"""``manage.py upgrade_app_split``: bring a database made before the December 2026 app split to
the current layout, keeping every row. A no-op on a current database; ``migrate`` refuses to run
until it has been done (system check ``convmem.E001``).

The split moved models between apps and started each app's migrations afresh, so the old
history cannot be migrated forward. This does by hand, in one transaction, what those
migrations would have done:

- rename the tables of the models that moved (the audit log to ``auditlog``, assembly records
  and content blobs to ``compaction``, model profiles to ``convmem``); foreign keys follow;
- replace ``threads_message.assembly_id`` (a foreign key into the old audit app) with
  ``assembly_public_id``, the assembly's public id, copied row by row;
- move the content types of the moved models (their permissions and the staff groups holding
  them come along) and the ``export_history`` permission to the compliance app;
- record the migrations of the split layout as applied in place of the old ones (``migrate``
  then applies whatever came later).
"""

from django.contrib.contenttypes.models import ContentType
from django.core.management.base import BaseCommand
from django.db import connection, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.db.migrations.state import ProjectState

from convmem.checks import MOVED_MODELS, PRE_SPLIT_TABLE, is_pre_split

OUR_APPS = ("convmem", "auditlog", "threads", "compaction", "usage", "respond", "audit")
# The migrations that make the layout of the split; ``migrate`` applies any later ones.
SPLIT_MIGRATIONS = [
    *((app, "0001_initial") for app in OUR_APPS),
    ("audit", "0002_permission_groups"),
]


class Command(BaseCommand):
    help = "Upgrade a database made before the December 2026 app split (keeps every row)."
    requires_system_checks = []

    def handle(self, *args: object, **options: object) -> None:
        if not is_pre_split(connection):
            if options["verbosity"]:
                self.stdout.write("The database already has the current layout; nothing to do.")
            return
        with connection.schema_editor(atomic=True) as editor:
            for old_app, model, new_app in MOVED_MODELS:
                editor.alter_db_table(None, f"{old_app}_{model}", f"{new_app}_{model}")
            _message_assembly_by_public_id(editor)
            _move_content_types()
            _record_new_migrations()
        self.stdout.write(
            self.style.SUCCESS(
                f"Upgraded to the app split layout ({PRE_SPLIT_TABLE} is now "
                "auditlog_auditevent); run migrate for anything newer."
            )
        )


def _split_state() -> ProjectState:
    """The models as the split's migrations leave them (later migrations come after)."""
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    return loader.project_state(nodes=SPLIT_MIGRATIONS, at_end=True)


def _message_assembly_by_public_id(editor) -> None:
    """Add ``assembly_public_id``, fill it from the old foreign key, then drop the key (on SQLite
    by rebuilding the table, as Django's own migrations do). Works on the message model as the
    split left it, so that a rebuilt table holds no column of a later migration."""
    state = _split_state()
    with_old_key = state.clone()
    with_old_key.models["threads", "message"].fields["assembly"] = models.ForeignKey(
        "compaction.AssemblyRecord", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    message = state.apps.get_model("threads", "message")
    editor.add_field(message, message._meta.get_field("assembly_public_id"))
    table = message._meta.db_table
    editor.execute(
        f"UPDATE {table} SET assembly_public_id = ("
        "SELECT a.public_id FROM compaction_assemblyrecord a "
        f"WHERE a.id = {table}.assembly_id) WHERE assembly_id IS NOT NULL"
    )
    old_message = with_old_key.apps.get_model("threads", "message")
    editor.remove_field(old_message, old_message._meta.get_field("assembly"))


def _move_content_types() -> None:
    for old_app, model, new_app in MOVED_MODELS:
        # One a later post_migrate may have made for the new label holds nothing yet.
        ContentType.objects.filter(app_label=new_app, model=model).delete()
        ContentType.objects.filter(app_label=old_app, model=model).update(app_label=new_app)
    ContentType.objects.clear_cache()
    deletion_request = ContentType.objects.get(app_label="audit", model="deletionrequest")
    audit_event = ContentType.objects.get(app_label="auditlog", model="auditevent")
    audit_event.permission_set.filter(codename="export_history").update(
        content_type=deletion_request
    )


def _record_new_migrations() -> None:
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app__in=OUR_APPS).delete()
    for app_label, name in SPLIT_MIGRATIONS:
        recorder.record_applied(app_label, name)
