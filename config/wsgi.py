import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.cache import caches
from django.core.wsgi import get_wsgi_application
from django.template import Engine
from django.template.loader import get_template
from django.urls import get_resolver
from django.utils.formats import get_format
from django.utils.module_loading import import_string

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# What a worker's first request would otherwise load (0.2-0.4 s; docs/annotation.md): every view
# (the URLconf), the session engine, the cache backend (its client library), the template engine with
# its tag libraries and the labeling page's templates (the page annotators open most). No connection
# is opened here: the cache and the database connect on first use, in the worker.
get_resolver()._populate()  # every view imported and the reverse() tables built (the {% url %} tags)
import_module(settings.SESSION_ENGINE)
import_string(settings.SESSION_SERIALIZER)
import_string(settings.MESSAGE_STORAGE)
getattr(caches["default"], "_cache", None)  # the backend's client class (Redis: no connection yet)
Engine.get_default().template_context_processors  # noqa: B018
get_format("DATE_FORMAT")
get_template("annotation/label.html")
# Full collections scan every tracked object: at start-up ~200k (modules, classes, the URLconf), and a
# collection took 0.2-0.7 s under load (one request in 10-20 at full size: docs/scale.md). Frozen
# objects are never scanned again; what requests create is collected as before.
gc.freeze()
