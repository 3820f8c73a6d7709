from django.apps import AppConfig


class ConvmemConfig(AppConfig):
    name = "convmem"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from convmem import checks  # noqa: F401 (registers the system checks)
        from convmem.telemetry import tracing_start

        tracing_start()  # nothing unless an OTLP endpoint is configured
