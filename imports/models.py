"""What was imported from where: the record that makes an import idempotent."""

from django.db import models


class ImportedConversation(models.Model):
    """One conversation of an outside export (or of a convmem export) made into a thread.

    The unique source id per tenant is what makes importing a file twice create nothing new,
    even when two imports of it run at once. The row outlives its thread (``thread`` null), so
    a conversation erased since is not brought back by importing the same file again.
    """

    class Source(models.TextChoices):
        CHATGPT = "chatgpt"
        CLAUDE = "claude"
        CONVMEM = "convmem"

    tenant = models.ForeignKey("convmem.Tenant", on_delete=models.CASCADE)
    source = models.CharField(max_length=16, choices=Source.choices)
    source_id = models.CharField(max_length=255)
    thread = models.ForeignKey("threads.Thread", null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "source", "source_id"], name="imported_conversation_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.source_id}"
