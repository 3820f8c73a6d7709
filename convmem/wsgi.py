"""WSGI entry point (``gunicorn convmem.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")

application = get_wsgi_application()
