from django.apps import AppConfig


class RespondConfig(AppConfig):
    name = "respond"
    verbose_name = "Respond"
    default_auto_field = "django.db.models.BigAutoField"
