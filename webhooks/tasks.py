"""Celery tasks of webhooks: thin, take ids. ``deliver`` runs on the ``webhooks`` queue, is
retried with exponential backoff (``CONVMEM_WEBHOOKS_MAX_RETRIES``; a retry sends the same
``webhook-id``) and then marks the delivery failed (staff may redeliver it from the admin)."""

from celery import Task, shared_task
from django.conf import settings

from webhooks import services


@shared_task(bind=True, name=services.DELIVER_TASK, acks_late=True, max_retries=None)
def deliver(self: Task, delivery_id: int) -> None:
    try:
        services.delivery_send(delivery_id=delivery_id)
    except services.DeliveryFailed as error:
        if self.request.retries >= settings.CONVMEM_WEBHOOKS_MAX_RETRIES:
            services.delivery_give_up(delivery_id=delivery_id)
            return
        delay = settings.CONVMEM_WEBHOOKS_BACKOFF * 2**self.request.retries
        raise self.retry(countdown=delay, exc=error) from error
