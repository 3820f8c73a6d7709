from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Threads stores which assembly an assistant turn answers without importing compaction
        # (it sits below); this tells it how to check that the id names one of the thread's.
        from compaction.selectors import ASSEMBLY_EXISTS_SQL, assembly_of_thread_exists
        from threads.services import assembly_check_register

        assembly_check_register(assembly_of_thread_exists, exists_sql=ASSEMBLY_EXISTS_SQL)
