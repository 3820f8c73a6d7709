from django.apps import AppConfig


class ConvmemConfig(AppConfig):
    name = "convmem"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from convmem import checks  # noqa: F401 (registers the system checks)
