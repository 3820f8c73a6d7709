from django.apps import AppConfig


class ConvmemConfig(AppConfig):
    name = "convmem"
    default_auto_field = "django.db.models.BigAutoField"
