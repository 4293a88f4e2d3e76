"""Settings, read from the environment (see README "Configuration").

Zero-setup default: SQLite under ./var and Celery's filesystem broker under ./var/broker.
Production: DATABASE_URL=postgres://..., CELERY_BROKER_URL=redis://... (or amqp://...), DEBUG=0.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_path, env_str

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("VAR_DIR", BASE_DIR / "var")

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0")
    SECRET_KEY = "dev-only-insecure-key-" + "x" * 40
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI files served locally (no CDN at run time)
    "django_htmx",
    "js_lib_htmx",
    "csp",
    "accounts",
    "curation",
    "annotation",
    "pipeline",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.RejectHostileInput",  # NUL bytes and over-long query values: 400 naming the field
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
try:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
except Exception as exc:  # dj_database_url raises several types on bad URLs
    raise ImproperlyConfigured(f"DATABASE_URL={DATABASE_URL!r} is not a database URL: {exc}") from exc
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["CONN_MAX_AGE"] = 0
    _db["OPTIONS"] = {
        # WAL lets the web server read while the worker writes; IMMEDIATE avoids
        # "database is locked" upgrades from read to write transactions.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    _db.setdefault("TEST", {})
elif _db["ENGINE"] == "django.db.backends.postgresql":
    _db["CONN_HEALTH_CHECKS"] = True
    if env_bool("DB_SERVER_SIDE_BINDING", True):
        # psycopg 3 server-side parameters, and statements run DB_PREPARE_THRESHOLD times on a
        # connection prepared (parsed and planned once). On by default: 1,000 annotators' answer p95
        # 2.4 s -> 180 ms on this machine (docs/annotation.md, "Capacity"); the whole suite passes on
        # PostgreSQL with it. DB_SERVER_SIDE_BINDING=0 turns it off (e.g. behind a transaction-pooling
        # PgBouncer, which cannot keep prepared statements)
        _db.setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=env_int("DB_PREPARE_THRESHOLD", 5))
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- auth -----------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
AUTHENTICATION_BACKENDS = ["accounts.login_guard.ThrottledModelBackend"]
# Login throttling (accounts/login_guard.py): this many failed logins for one user name lock it this long.
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 5)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900)
# HTTP Basic authentication on the API, only when asked for (scripts, schemathesis); sessions always work.
API_BASIC_AUTH = env_bool("API_BASIC_AUTH", False)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- files ----------------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")
MEDIA_ROOT = env_path("MEDIA_ROOT", VAR_DIR / "media")
MEDIA_URL = "/media/"
MODELS_DIR = env_path("MODELS_DIR", VAR_DIR / "models")
EXPORTS_DIR = env_path("EXPORTS_DIR", VAR_DIR / "exports")
IMPORTS_DIR = env_path("IMPORTS_DIR", VAR_DIR / "imports")  # uploads wait here for their import job
# sentence embeddings of the aligner's semantic channels, shared by workers and runs (alignment_engine.semantic.use_store)
EMBEDDINGS_CACHE = env_path("EMBEDDINGS_CACHE", VAR_DIR / "embeddings.sqlite3")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 50 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# A leveled corpus is one file per article level (Newsela-sized: about 9,400); an archive is one file.
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("DATA_UPLOAD_MAX_NUMBER_FILES", 20_000)

# --- security (production) -----------------------------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp), in every mode: only this site's own files run or style
# the pages; templates hold no inline script, style element or style attribute (static/js/page.js
# sets bar widths from data-width), and htmx is told not to inject its indicator style.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- REST API -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "accounts.authentication.BasicAuthentication",  # off unless API_BASIC_AUTH=1
    ],
    "EXCEPTION_HANDLER": "config.api_errors.exception_handler",
    # Request bodies are JSON (what the pages' scripts send); the schema then promises only JSON.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.IsStaffRole"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "accounts.params.StrictPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {"answers": env_str("ANSWER_RATE_LIMIT", "120/min")},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Simplification corpus workbench API",
    "DESCRIPTION": (
        "Read-only corpus data (corpora, articles, documents, document pairs and their sentences); "
        "labeling for annotators (jobs, next question, answers, own statistics, context); human "
        "evaluation studies (next page, answers, results for researchers); and, for researchers, the "
        "pipeline's jobs with progress and a stale flag, model versions with metrics, corpus alignment "
        "runs, and exports with download links. Log in first (session cookie; HTTP Basic only where "
        "the server sets API_BASIC_AUTH=1). Every error body is {detail, code}."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],  # schema and Swagger: logged-in users
    "SERVE_AUTHENTICATION": ["rest_framework.authentication.SessionAuthentication", "accounts.authentication.BasicAuthentication"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "config.api_schema.document_errors"],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "PipelineJobStatusEnum": "pipeline.models.Job.Status",
        "OpenStatusEnum": "annotation.models.LabelingJob.Status",  # labeling jobs and studies: open/paused/closed
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- cache (rate limits, locks) ------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "config.redis_cache.RedisCache", "LOCATION": REDIS_URL}}
    # sessions read from Redis, written through to the database (a cache miss or flush loses none);
    # saves the session SELECT of every request (labeling's answers: docs/scale.md)
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    CELERY_WORKER_ENABLE_REMOTE_CONTROL = False  # the filesystem transport has no fanout
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A task not acknowledged within this time (its worker machine died) is delivered again.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
# Task names are stable and explicit (pipeline/tasks.py); each goes to its own queue.
CELERY_TASK_ROUTES = {
    "pipeline.align_chunk": {"queue": "align"},
    "pipeline.prepopulate": {"queue": "align"},
    "pipeline.retrain": {"queue": "train"},
    "pipeline.export_dataset": {"queue": "export"},
    "pipeline.import_corpus": {"queue": "default"},
}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# A running job whose worker has not stamped its heartbeat for this long is flagged stale
# (/jobs/, the API) with the command that resumes it; workers stamp every JOB_HEARTBEAT_SECONDS.
JOB_STALE_MINUTES = env_int("JOB_STALE_MINUTES", 10)
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 30)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- logging --------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"forbidden_without_traceback": {"()": "config.logfilters.ForbiddenWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["forbidden_without_traceback"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Django's own console handler would print every django.* record a second time through the root
        "django": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO"), "propagate": False},
    },
}

for _dir in (VAR_DIR, STATIC_ROOT, MEDIA_ROOT, MODELS_DIR, EXPORTS_DIR, IMPORTS_DIR, *(BROKER_DIR / d for d in ("queue", "processed", "control"))):
    _dir.mkdir(parents=True, exist_ok=True)
