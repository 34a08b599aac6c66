"""One settings module for every environment, driven by environment variables.

The defaults are the embedded single-machine run (SQLite file, a broker on the
filesystem, a file cache): nothing needs a server. Production and CI point
``DATABASE_URL`` at PostgreSQL and ``REDIS_URL`` at Redis. README.md lists every variable.
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from ops.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# Where the embedded defaults keep their files (SQLite database, broker queue, cache).
VAR_DIR = Path(os.environ.get("GCQUIZ_VAR_DIR", BASE_DIR / "var"))

DEBUG = env_bool("DEBUG", default=False)


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY", "")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    # Local development only: a random key kept outside the repository, so sessions
    # survive restarts of `make run` without a secret ever being committed.
    key_file = VAR_DIR / "dev-secret-key"
    if not key_file.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "lti",
    "activities",
    "assessments",
    "gradesync",
    "gradebook",
    "labs",
    "analytics",
    "ops",
    "api",
    "axes",
]

MIDDLEWARE = [
    "ops.middleware.RequestIdMiddleware",
    "ops.middleware.MetricsMiddleware",
    # /healthz, /readyz and /metrics answer whatever the Host (probes come by address).
    "ops.middleware.OperationsEndpointsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.http.ConditionalGetMiddleware",
    # A form in another character set than UTF-8: a 400 page before anything reads it.
    "ops.middleware.FormCharsetMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Content-Security-Policy (scripts from our static files only; frame-ancestors allows the
    # registered platforms, for LTI iframes, and no one else) and Permissions-Policy.
    "lti.middleware.SecurityHeadersMiddleware",
    # Admin sign-in lockouts (django-axes); its documentation wants it last.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

# --- Database -----------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'gcquiz.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web process and the worker share the file: wait for locks instead of failing,
    # and take the write lock at the start of a transaction to avoid upgrade deadlocks.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif (
    DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    and os.environ.get("DATABASE_PREPARED_STATEMENTS", "1") != "0"
):
    # Each connection prepares a statement the first time it runs it and plans it once, for
    # any parameters (psycopg's prepared statements, which need server-side binding, decision
    # 51; PostgreSQL's generic plans, decision 64): planning a statement of the answer loop or
    # a launch cost PostgreSQL several times running it, and a new worker paid it for a
    # statement's first ten runs. 0 turns it off for a pooler in transaction mode that cannot
    # keep them (PgBouncer before 1.21). Added to the URL's own options (?sslmode=require
    # stays; a libpq `options` of its own comes first).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _libpq_options = (_options.get("options"), "-c plan_cache_mode=force_generic_plan")
    _options.update(
        server_side_binding=True,
        prepare_threshold=0,
        options=" ".join(part for part in _libpq_options if part),
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with a health check that asks the socket first (decision 62).
    DATABASES["default"]["ENGINE"] = "ops.postgresql"
    # A database that drops packets rather than refusing them would hold a request for the
    # system's TCP timeout (minutes): the memos' once-a-second check (decision 84) and every
    # page give up after this many seconds instead. A URL's own ?connect_timeout= stays.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", int(os.environ.get("DATABASE_CONNECT_TIMEOUT", "5"))
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, cache, sessions -----------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "ops.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "gcquiz"),
            # Unreachable Redis reads as a miss (ops.cache); without timeouts a Redis cut
            # off (not refusing) would hold every request.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# Template fragments that show only a quiz version's content, translations and static
# addresses ({% cache %} in the templates): made once per process, kept in its memory, since
# none of them changes until a deploy restarts it (decision 50). Never shared through Redis:
# a round trip costs more than rendering the fragment.
CACHES["template_fragments"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "template-fragments",
    "TIMEOUT": None,
    "OPTIONS": {"MAX_ENTRIES": 20000},
}

# Sessions live in the database, read through the cache (decision 29: Redis may go away).
SESSION_ENGINE = "ops.sessions"
# Django's ModelBackend with the per-request user lookup served from the cache. The plain
# ModelBackend stays listed so that sessions signed in through it remain valid.
AUTHENTICATION_BACKENDS = [
    # Refuses sign-ins from an address locked out for failed passwords (checks none itself).
    "axes.backends.AxesStandaloneBackend",
    "lti.backends.CachedUserBackend",
    "django.contrib.auth.backends.ModelBackend",
]
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(14 * 24 * 3600)))

# --- Celery ---------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    # The embedded broker: messages are files in one folder shared by web and worker.
    _broker_dir = VAR_DIR / "celery-broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # How often an idle worker looks for new files; also bounds how long Ctrl-C on
        # `make run` waits for the workers to stop (honcho kills them after 5 s).
        "polling_interval": 0.5,
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 60
CELERY_TASK_TIME_LIMIT = 90
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Beat writes its schedule file after every task it sends: the file's age is its health.
CELERY_BEAT_SYNC_EVERY = 1
# Grade sync: retries back off exponentially with jitter up to the maximum; a delivery a
# worker holds longer than the lease is assumed lost and becomes due again.
GRADESYNC_BACKOFF_BASE_SECONDS = float(os.environ.get("GRADESYNC_BACKOFF_BASE_SECONDS", "30"))
GRADESYNC_BACKOFF_MAX_SECONDS = float(os.environ.get("GRADESYNC_BACKOFF_MAX_SECONDS", "3600"))
GRADESYNC_LEASE_SECONDS = float(os.environ.get("GRADESYNC_LEASE_SECONDS", "120"))
GRADESYNC_GIVE_UP_AFTER_SECONDS = float(
    os.environ.get("GRADESYNC_GIVE_UP_AFTER_SECONDS", str(3 * 24 * 3600))
)
GRADESYNC_REQUEUE_SECONDS = float(os.environ.get("GRADESYNC_REQUEUE_SECONDS", "30"))

# Labs: each run is a child process on the `gpu` queue (one worker per GPU, concurrency 1;
# it falls back to the CPU where there is none). A run that outlives its lease is taken
# over; a failure of the machine is retried, never graded.
LAB_DEVICE = os.environ.get("LAB_DEVICE", "auto")
LAB_RUN_TIMEOUT_SECONDS = float(os.environ.get("LAB_RUN_TIMEOUT_SECONDS", "600"))
LAB_MEMORY_CAP_BYTES = int(os.environ.get("LAB_MEMORY_CAP_BYTES", str(16 * 2**30)))
LAB_TIMING_REPEATS = int(os.environ.get("LAB_TIMING_REPEATS", "5"))
LAB_LEASE_SECONDS = float(os.environ.get("LAB_LEASE_SECONDS", str(LAB_RUN_TIMEOUT_SECONDS + 120)))
LAB_MAX_EXECUTION_ATTEMPTS = int(os.environ.get("LAB_MAX_EXECUTION_ATTEMPTS", "3"))
LAB_RETRY_BACKOFF_SECONDS = float(os.environ.get("LAB_RETRY_BACKOFF_SECONDS", "30"))
LAB_RETRY_BACKOFF_MAX_SECONDS = float(os.environ.get("LAB_RETRY_BACKOFF_MAX_SECONDS", "600"))
LAB_REQUEUE_AFTER_SECONDS = float(os.environ.get("LAB_REQUEUE_AFTER_SECONDS", "900"))
LAB_SCHEDULE_SECONDS = float(os.environ.get("LAB_SCHEDULE_SECONDS", "30"))
CELERY_TASK_ROUTES = {"labs.execute_run": {"queue": "gpu"}}

CELERY_BEAT_SCHEDULE = {
    "clear-expired-sessions": {
        "task": "assessments.clear_expired_sessions",
        "schedule": 3600.0,
    },
    "requeue-due-grades": {
        "task": "gradesync.requeue_due_grades",
        "schedule": GRADESYNC_REQUEUE_SECONDS,
    },
    "requeue-stuck-lab-runs": {
        "task": "labs.requeue_stuck_runs",
        "schedule": LAB_SCHEDULE_SECONDS,
    },
    "settle-due-labs": {
        "task": "labs.settle_due_labs",
        "schedule": LAB_SCHEDULE_SECONDS,
    },
}

# --- Passwords (only the admin site uses them; learners come through the LMS) -----
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Language -------------------------------------------------------------------
LANGUAGE_CODE = os.environ.get("LANGUAGE_CODE", "en")
LANGUAGES = [
    ("en", _("English")),
    ("ru", _("Russian")),
]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_TZ = True

# --- Static files ---------------------------------------------------------------
STATIC_URL = "static/"
# The site shell's own assets (the stylesheet every page uses); apps keep theirs.
STATICFILES_DIRS = [BASE_DIR / "static"]
# Production images run collectstatic and set STATIC_MANIFEST=1 for hashed, far-future
# cached names; the local run and the tests serve straight from the app folders.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", default=False)
STATIC_ROOT = (
    Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles")) if STATIC_MANIFEST else None
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST

# --- Security -------------------------------------------------------------------
CSRF_FAILURE_VIEW = "config.views.csrf_failure"
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_HTTPS_PROXY") else None
)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Inside the LMS iframe our cookies are third-party: they need SameSite=None, which
# browsers accept only with Secure (HTTPS). Over plain HTTP (local run) they stay Lax and
# embedded launches need the new-window container or platform storage.
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = LANGUAGE_COOKIE_SAMESITE = (
    "None" if SESSION_COOKIE_SECURE else "Lax"
)
SECURE_CONTENT_TYPE_NOSNIFF = True
# HTTPS only, in production (docker-compose.yml sets these; off by default so the local run
# and the tests speak plain HTTP). The probes stay reachable over HTTP inside the network.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT")
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD")
SILENCED_SYSTEM_CHECKS = [
    # The tool runs inside the LMS's iframe: X-Frame-Options cannot name the platforms, so
    # lti.middleware sends CSP frame-ancestors with exactly the registered ones instead.
    "security.W002",
    # Including subdomains in HSTS, or joining the browsers' preload list, is a decision
    # about the institution's whole domain: the operator opts in with the variables above.
    "security.W005",
    "security.W021",
]

# --- Django REST framework --------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JsonParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "60/min"),
        "user": os.environ.get("API_THROTTLE_USER", "2000/min"),
        # Per client address (ops.throttling, decision 30). A campus behind one NAT address
        # launches as one: raise the LTI rates there.
        "api_token_failures": os.environ.get("API_THROTTLE_TOKEN_FAILURES", "20/min"),
        "lti_login": os.environ.get("THROTTLE_LTI_LOGIN", "600/min"),
        "lti_launch": os.environ.get("THROTTLE_LTI_LAUNCH", "600/min"),
        "lti_registration": os.environ.get("THROTTLE_LTI_REGISTRATION", "10/min"),
        # The LMS dialog's iframe asks every 2 s while a teacher picks in a new window.
        "lti_relay": os.environ.get("THROTTLE_LTI_RELAY", "1200/min"),
        "demo": os.environ.get("THROTTLE_DEMO", "30/hour"),
    },
    # The client's address: REMOTE_ADDR, or with proxies in front, the address the
    # outermost trusted one saw (X-Forwarded-For is never taken from a client).
    "NUM_PROXIES": int(os.environ.get("TRUSTED_PROXY_COUNT", "0")),
}
# Admin sign-in: an address is locked out after this many failed passwords, for this long.
AXES_FAILURE_LIMIT = int(os.environ.get("ADMIN_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("ADMIN_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_CLIENT_IP_CALLABLE = "ops.throttling.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "ops.throttling.admin_locked_out"
# Axes for password sign-ins only: a launch has no password to count (ops.signin).
AXES_HANDLER = "ops.signin.PasswordSignInHandler"
SPECTACULAR_SETTINGS = {
    "TITLE": "Checkpointing Lab grading API",
    "DESCRIPTION": "Attempts, responses, grades, overrides, regrades and rosters, per course.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "APPEND_COMPONENTS": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
    "SECURITY": [{"bearerAuth": []}],
}

# --- LTI 1.3 ----------------------------------------------------------------------
# The tool's public base URL (https://quiz.example.edu/); empty: taken from each request.
LTI_TOOL_URL = os.environ.get("LTI_TOOL_URL", "")
# Dynamic registration needs this key in the registration URL (/lti/register/?key=…); without
# one it is open only in DEBUG runs (closed entirely otherwise).
LTI_REGISTRATION_KEY = os.environ.get("LTI_REGISTRATION_KEY", "")
# How long the registration page's signed form stays valid (the administrator confirms in it).
LTI_REGISTRATION_FORM_SECONDS = int(os.environ.get("LTI_REGISTRATION_FORM_SECONDS", "1800"))
LTI_CLOCK_SKEW_SECONDS = int(os.environ.get("LTI_CLOCK_SKEW_SECONDS", "30"))
LTI_STATE_TTL_SECONDS = int(os.environ.get("LTI_STATE_TTL_SECONDS", "600"))
# How long the LMS dialog's iframe waits for a deep-linking answer picked in a new window
# (lti/deep_link_relay.py).
LTI_DEEP_LINK_RELAY_SECONDS = int(os.environ.get("LTI_DEEP_LINK_RELAY_SECONDS", "600"))
LTI_HTTP_CONNECT_TIMEOUT = float(os.environ.get("LTI_HTTP_CONNECT_TIMEOUT", "3.05"))
LTI_HTTP_READ_TIMEOUT = float(os.environ.get("LTI_HTTP_READ_TIMEOUT", "10"))
# The largest answer read from a platform (a roster page is the largest one expected).
LTI_HTTP_MAX_RESPONSE_BYTES = int(os.environ.get("LTI_HTTP_MAX_RESPONSE_BYTES", str(8 * 2**20)))
# Platforms on loopback, link-local or private addresses are refused (server-side request
# forgery) unless this is on: the local run (DEBUG) and the tests, whose platforms are on
# 127.0.0.1, and a campus whose LMS is on a private network.
LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES = env_bool(
    "LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES", default=DEBUG
)
# An egress proxy for every call to a platform (http://host:port; https URLs go through it
# by CONNECT), for networks that reach the internet only through one. The environment's
# HTTP(S)_PROXY is not read: lti/http.py checks the platform's address before the proxy.
LTI_HTTP_PROXY = os.environ.get("LTI_HTTP_PROXY", "")
LTI_PLATFORM_KEYSET_CACHE_SECONDS = int(os.environ.get("LTI_PLATFORM_KEYSET_CACHE_SECONDS", "3600"))
LTI_PLATFORM_KEYSET_REFETCH_SECONDS = int(
    os.environ.get("LTI_PLATFORM_KEYSET_REFETCH_SECONDS", "60")
)
# Origins allowed to frame the tool besides the registered platforms' own (e.g. a Canvas
# institution's domain, whose issuer is canvas.instructure.com).
LTI_FRAME_ANCESTORS = env_list("LTI_FRAME_ANCESTORS")

# --- The product ------------------------------------------------------------------
# The preview entry on the home page (a demo course without an LMS): anonymous visitors
# become demo users and queue lab runs, so it is on by default only with DEBUG (`make run`).
DEMO_MODE = env_bool("DEMO_MODE", default=DEBUG)
# What the demo course places, as ``kind:slug`` of the activity registry.
DEMO_ACTIVITIES = {"quiz": "quiz:gradient-checkpointing", "lab": "lab:chain-under-budget"}
# What a resource link placed by hand in the LMS (no deep linking) gets.
DEFAULT_ACTIVITY = "quiz:gradient-checkpointing"
# The demo's lab runs waiting or running at once, at most (the GPU queue is shared).
DEMO_LAB_QUEUE_CAP = int(os.environ.get("DEMO_LAB_QUEUE_CAP", "10"))

# Logs: JSON lines with the request id (LOG_FORMAT=json, the default without DEBUG), or
# plain text for a terminal. Celery workers log through the same configuration.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text" if DEBUG else "json")
LOGGING = logging_config(LOG_FORMAT, os.environ.get("LOG_LEVEL", "INFO"))
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# /metrics (Prometheus): a bearer token when set; without one it is off (except with DEBUG).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
