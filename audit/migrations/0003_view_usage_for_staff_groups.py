"""Support and Compliance may open the usage and cost page (``usage.view_usagereport``).

Both groups answer questions about what a tenant's conversations cost; before this, both got a
403 on the page while it said one of them had the permission.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GRANTS = {
    "Support": [("usage", "view_usagereport")],
    "Compliance": [("usage", "view_usagereport")],
}


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations (post_migrate); make them now.
    config = apps.get_app_config("usage")
    config.models_module = True
    create_permissions(config, apps=apps, verbosity=0)
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in GRANTS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for app_label, codename in wanted:
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in GRANTS.items():
        group = Group.objects.filter(name=name).first()
        if group is None:
            continue
        for app_label, codename in wanted:
            group.permissions.remove(
                *Permission.objects.filter(content_type__app_label=app_label, codename=codename)
            )


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_permission_groups"),
        ("usage", "0001_initial"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
