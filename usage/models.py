"""No tables: the staff admin's usage page hangs off a proxy model, so it is listed on the admin
index and guarded by a permission of its own (``usage.view_usagereport``)."""

from threads.models import Message


class UsageReport(Message):
    class Meta:
        proxy = True
        verbose_name = "usage and cost"
        verbose_name_plural = "usage and cost"
        default_permissions = ("view",)
