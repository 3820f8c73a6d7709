from django.apps import AppConfig


class AuditlogConfig(AppConfig):
    """The append-only audit log: the bottom app every other app writes to."""

    name = "auditlog"
    default_auto_field = "django.db.models.BigAutoField"
