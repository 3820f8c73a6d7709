"""Staff groups: Support reads conversations; Compliance also exports and handles erasure."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = [
    ("threads", "view_thread"),
    ("threads", "view_message"),
    ("compaction", "view_summary"),
    # Regenerate / mark stale a memo from its compare page in the admin.
    ("compaction", "change_summary"),
    ("compaction", "view_assemblyrecord"),
]
COMPLIANCE = [
    *SUPPORT,
    ("auditlog", "view_auditevent"),
    ("compaction", "view_contentblob"),
    ("audit", "export_history"),
    ("audit", "view_deletionrequest"),
    ("audit", "add_deletionrequest"),
    ("audit", "approve_deletionrequest"),
    ("audit", "execute_deletionrequest"),
    ("audit", "view_legalhold"),
    ("audit", "add_legalhold"),
    ("audit", "change_legalhold"),
    ("audit", "view_retentionpolicy"),
    ("audit", "add_retentionpolicy"),
    ("audit", "change_retentionpolicy"),
]
GROUPS = {"Support": SUPPORT, "Compliance": COMPLIANCE}


def create_groups(apps, schema_editor):
    # Permissions are normally created after all migrations (post_migrate); make them now.
    for label in ("auditlog", "threads", "compaction", "audit"):
        config = apps.get_app_config(label)
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in wanted:
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
        ("auditlog", "0001_initial"),
        ("threads", "0001_initial"),
        ("compaction", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
