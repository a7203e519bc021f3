"""One settings file, driven by environment variables only.

The defaults run a local single-user site on an embedded SQLite database in ``PILLBOX_HOME``
(``~/.pillbox``); ``DATABASE_URL`` points the global database elsewhere (PostgreSQL for a shared server).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import dj_database_url

from base.private import private_db_file, repair_data_dir

BASE_DIR = Path(__file__).resolve().parent.parent
# The site's templates and static files: inside config/ in an installed wheel (pyproject.toml's package-dir puts
# them there), beside the packages in a checkout.
_WHEEL_FILES = Path(__file__).resolve().parent
SITE_FILES = _WHEEL_FILES if (_WHEEL_FILES / "templates").is_dir() else BASE_DIR


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


PILLBOX_HOME = Path(os.environ.get("PILLBOX_HOME") or Path.home() / ".pillbox").expanduser().resolve()
PILLBOX_ROOT = Path(os.environ["PILLBOX_ROOT"]).expanduser().resolve() if os.environ.get("PILLBOX_ROOT") else None
# Directories whose .pillbox is trusted although another user owns it or others can write there ("*": all).
PILLBOX_SAFE_DIRECTORIES = env_list("PILLBOX_SAFE_DIRECTORIES", [])
GLOBAL_DB_PATH = PILLBOX_HOME / "pillbox.db"
# The owner's alone (0700, database files 0600), made so and repaired at every start: see base/private.py.
repair_data_dir(PILLBOX_HOME)


def _secret_key() -> str:
    """An explicit key wins; a laptop install keeps a generated one in the data directory."""
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    path = PILLBOX_HOME / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    candidate = secrets.token_urlsafe(50)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race: use its key
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(candidate)
    return candidate


SECRET_KEY = _secret_key()
DEBUG = env_bool("DJANGO_DEBUG", False)
SITE_URL_FILE = PILLBOX_HOME / "site_url"  # the address `manage.py up` last served on


def _site_url() -> str:
    """SITE_URL wins; else where `manage.py up` serves, so links handed out by stdio agents open that site."""
    if url := os.environ.get("SITE_URL"):
        return url
    try:
        return SITE_URL_FILE.read_text().strip() or "http://127.0.0.1:8000"
    except OSError:
        return "http://127.0.0.1:8000"


SITE_URL = _site_url().rstrip("/")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
_site_host = urlsplit(SITE_URL).hostname
if _site_host and _site_host not in ALLOWED_HOSTS and "*" not in ALLOWED_HOSTS:
    ALLOWED_HOSTS.append(_site_host)

# SQLite as several agents' processes and the web server share it: WAL lets readers run beside a writer,
# the busy timeout makes writers queue instead of failing, IMMEDIATE takes the write lock at BEGIN so a
# transaction never has to upgrade a read lock (the upgrade is what fails with "database is locked").
SQLITE_OPTIONS = {
    "timeout": 60,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA foreign_keys=ON",
}


def sqlite_database(path: Path | str) -> dict[str, Any]:
    # CONN_MAX_AGE None: a long-lived agent process keeps its connection between tool calls.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": dict(SQLITE_OPTIONS),
        "CONN_MAX_AGE": None,
    }


def database_from_url(url: str) -> dict[str, Any]:
    """``DATABASE_URL`` as Django settings: PostgreSQL URLs through dj-database-url, SQLite with the options above.

    PostgreSQL gets Django's own
    connection pool (psycopg_pool), one per process, shared by its threads: a gunicorn worker with 8 threads
    holds at most ``DATABASE_POOL_MAX_SIZE`` connections instead of one per thread. The pool hands out only
    connections that pass a check (``CONN_HEALTH_CHECKS``), so a restarted database costs no failed request.
    Django refuses persistent connections (``CONN_MAX_AGE``) beside a pool; with ``DATABASE_POOL=false`` a
    connection per thread is kept for a minute instead.
    """
    scheme = url.partition(":")[0].lower()
    if scheme not in {"sqlite", "postgres", "postgresql", "pgsql"}:
        raise ValueError(f"DATABASE_URL scheme {scheme!r} is not supported (use sqlite:// or postgres://)")
    if scheme == "sqlite":
        # sqlite:///abs/path as documented here (dj-database-url would read it as a relative path), and
        # "sqlite://" alone the default file: an in-memory global database would differ in every process.
        path = unquote(urlsplit(url).path)
        return sqlite_database(path if path not in ("", "/") else GLOBAL_DB_PATH)
    pooled = env_bool("DATABASE_POOL", True)
    database: dict[str, Any] = dict(
        dj_database_url.parse(url, conn_max_age=0 if pooled else 60, conn_health_checks=True)
    )
    if pooled:
        database.setdefault("OPTIONS", {})["pool"] = {
            "min_size": int(os.environ.get("DATABASE_POOL_MIN_SIZE") or 2),
            "max_size": int(os.environ.get("DATABASE_POOL_MAX_SIZE") or 10),
            # Seconds a request waits for a free connection before failing.
            "timeout": float(os.environ.get("DATABASE_POOL_TIMEOUT") or 10),
        }
    return database


DATABASES = {
    "default": database_from_url(os.environ["DATABASE_URL"])
    if os.environ.get("DATABASE_URL")
    else sqlite_database(GLOBAL_DB_PATH)
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    private_db_file(Path(DATABASES["default"]["NAME"]))
DATABASE_ROUTERS = ["pillbox.routers.LocalBottleRouter"]


def caches_from_url(url: str | None) -> dict[str, Any]:
    """Every counter (throttles, rate limits) and cached lookup lives in the default cache. One process alone:
    local memory. Several processes or servers: ``REDIS_URL`` puts it in Redis through Django's own backend, so
    their counts are one count (``cache.add`` + ``cache.incr`` are atomic there) and expiries are Redis's."""
    if not url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "pillbox"}}
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            # Several sites may share one Redis: each sees only its own keys (and /readyz writes only its own).
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX") or "pillbox",
            # A Redis that stops answering fails a request in seconds instead of hanging a worker thread.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }


CACHES = caches_from_url(os.environ.get("REDIS_URL"))
# Seconds an API key's lookup (key → user) stays in that cache (accounts.services); 0 looks every request up in the
# database. A revocation reaches every process at once through Redis; each process's own memory cache (no
# REDIS_URL) may answer for a key revoked through another process for up to this long.
API_KEY_CACHE_SECONDS = int(os.environ.get("API_KEY_CACHE_SECONDS") or 10)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our own static files: /api/docs/ works offline
    "oauth2_provider",
    "config",
    "accounts",
    "pillbox",
    "todos",
    "webui",
    "ops",
]

MIDDLEWARE = [
    "accounts.throttle.ProxyHeadersMiddleware",  # X-Forwarded-* only from TRUSTED_PROXIES (with TRUST_PROXY_HEADERS)
    "django.middleware.security.SecurityMiddleware",
    "base.csp.ContentSecurityPolicyMiddleware",  # scripts only from our own files, on every response
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "accounts.oauth.OAuthCorsMiddleware",  # CORS + preflight OPTIONS for /mcp, /pillbox/mcp and OAuth endpoints
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "accounts.auth.LoginThrottleMiddleware",  # failed logins per (account, address), per address; accounts slow down
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [SITE_FILES / "templates"],
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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [SITE_FILES / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or PILLBOX_HOME / "static")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# whitenoise serves static files from the app server itself (no separate web server needed); compressed, not
# manifest-hashed, so a page never fails for a file collectstatic has not seen yet.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Behind a reverse proxy (see README "Production"): trust its headers only when told to, and only on requests whose
# peer is one of TRUSTED_PROXIES (addresses or networks; accounts.throttle.ProxyHeadersMiddleware drops them from
# anyone else). The client address for throttling is then the X-Forwarded-For entry TRUSTED_PROXY_HOPS from the
# right (one per proxy in front).
TRUST_PROXY_HEADERS = env_bool("TRUST_PROXY_HEADERS", False)
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", ["127.0.0.1", "::1"])
TRUSTED_PROXY_HOPS = int(os.environ.get("TRUSTED_PROXY_HOPS") or 1)
if TRUST_PROXY_HEADERS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = True
_site_is_https = SITE_URL.startswith("https://")
CSRF_TRUSTED_ORIGINS = [SITE_URL]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _site_is_https
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True

# MCP request bodies are capped at 1 MiB by the MCP views themselves (413); the same bound for forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
MCP_MAX_BODY_BYTES = 1024 * 1024
# The production server (config.asgi.buffered): a request reaches one of APP_THREADS threads per worker only once
# its whole body has arrived, within REQUEST_BODY_TIMEOUT seconds (408 past it) and REQUEST_BODY_MAX_BYTES (413).
APP_THREADS = int(os.environ.get("APP_THREADS") or 2)
REQUEST_BODY_TIMEOUT = float(os.environ.get("REQUEST_BODY_TIMEOUT") or 10)
REQUEST_BODY_MAX_BYTES = 8 * 1024 * 1024
# One user cannot hold the MCP endpoints for everyone (mcp_bridge/limits.py): messages per batch, seconds of work
# one request may take, JSON-RPC requests per user per window (count, seconds), requests in flight per user.
MCP_MAX_BATCH = int(os.environ.get("MCP_MAX_BATCH") or 20)
MCP_REQUEST_BUDGET_SECONDS = float(os.environ.get("MCP_REQUEST_BUDGET_SECONDS") or 10)
MCP_USER_RATE_LIMIT = (int(os.environ.get("MCP_USER_RATE_LIMIT") or 600), 60)
# 2: half the threads of the production command (2 workers x 2 blocking threads) when counted in a shared cache.
MCP_USER_CONCURRENCY = int(os.environ.get("MCP_USER_CONCURRENCY") or 2)
# A search's time budget in milliseconds (pillbox/search/budget.py): past it, the answer is what was found by then,
# marked partial. 0 turns it off.
SEARCH_TIME_BUDGET_MS = float(os.environ.get("SEARCH_TIME_BUDGET_MS") or 1000)
# Per-user quotas on Pillbox rows (pillbox/quotas.py); 0 turns one off.
PILLBOX_QUOTAS = {
    "bottles": int(os.environ.get("PILLBOX_MAX_BOTTLES") or 100),
    "prescriptions": int(os.environ.get("PILLBOX_MAX_PRESCRIPTIONS") or 10_000),
    "pills": int(os.environ.get("PILLBOX_MAX_PILLS") or 100_000),
    "capsules": int(os.environ.get("PILLBOX_MAX_CAPSULES") or 10_000),
}
# The most bytes the original Pillbox's tables in one of its files may take to be imported
# (pillbox/original/judge.py); 0 turns it off.
PILLBOX_IMPORT_MAX_BYTES = int(os.environ.get("PILLBOX_IMPORT_MAX_BYTES") or 256 * 1024 * 1024)
# The longest one statement on a project's .pillbox/pillbox.db may run (pillbox/deadlines.py), and the longest the
# session-start hook (manage.py recall) reads before it gives up, saying so.
PILLBOX_READ_SECONDS = float(os.environ.get("PILLBOX_READ_SECONDS") or 10)
PILLBOX_RECALL_SECONDS = float(os.environ.get("PILLBOX_RECALL_SECONDS") or 10)
# Search by meaning through an approximate index (usearch HNSW, pillbox/search/ann.py) once one scope holds this many
# rows with vectors (0: always the exact scan), kept beside the database file, or in PILLBOX_VECTOR_INDEX_DIR when set
# (and PILLBOX_HOME/vectors for PostgreSQL otherwise).
PILLBOX_VECTOR_INDEX_ROWS = int(os.environ.get("PILLBOX_VECTOR_INDEX_ROWS") or 50_000)
PILLBOX_VECTOR_INDEX_DIR = os.environ.get("PILLBOX_VECTOR_INDEX_DIR") or None

# OAuth 2.1 for remote MCP clients (django-oauth-toolkit 3.4.1; accounts/oauth.py explains the design).
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Use the Todos and Pillbox MCP servers"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    # Binds grants and tokens to the MCP endpoints (RFC 8707 `resource` required and allowlisted).
    "OAUTH2_VALIDATOR_CLASS": "accounts.oauth.McpOAuth2Validator",
    # The issuer, the endpoint URLs in the metadata and the RFC 9207 `iss` all come from SITE_URL, not from the
    # request's Host (DOT uses OIDC_ISS_ENDPOINT for all three even with OIDC off).
    "OIDC_ISS_ENDPOINT": SITE_URL,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "REQUEST_APPROVAL_PROMPT": "force",  # always show the consent page
    # What the RFC 8414 document advertises (DOT's defaults list implicit, password, client_credentials, device).
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # RFC 9700 gates: refuse implicit, password and PKCE "plain" (S256 only), tokens in query strings; send `iss`;
    # store only token hashes; make the config gates errors under `check --deploy`.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # Native clients call back on loopback http (RFC 8252) or their own scheme; registration refuses http
    # redirect URIs on any other host (accounts.oauth_views.RegistrationView).
    "ALLOWED_REDIRECT_URI_SCHEMES": env_list("OAUTH_REDIRECT_URI_SCHEMES", ["https", "http", "cursor", "vscode"]),
    "ALLOW_LOCALHOST_LOOPBACK": True,
    # Anonymous dynamic client registration (rate limited: OAUTH_DCR_RATE_LIMIT) and client ID metadata documents.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    # Documents are fetched only at the authorization endpoint, rate limited like registration.
    "CIMD_REGISTRATION_PERMISSION_CLASSES": ("accounts.oauth.AuthorizationEndpointCIMDPermission",),
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Pillbox & Todos MCP",
}
# Client registrations per IP per window (count, seconds), counted in the default cache.
OAUTH_DCR_RATE_LIMIT = (int(os.environ.get("OAUTH_DCR_RATE_LIMIT") or 20), 3600)
# Failed credentials per client IP per window (count, seconds), counted in the default cache: API keys and tokens
# at the MCP endpoints (accounts.auth.mcp_caller), and passwords at the login forms (LoginThrottleMiddleware).
AUTH_FAILURE_RATE_LIMIT = (int(os.environ.get("AUTH_FAILURE_RATE_LIMIT") or 20), 60)
# Failed logins: per (username, address) LOGIN_RATE_LIMIT and per address LOGIN_ADDRESS_RATE_LIMIT a minute, past
# which that browser's attempts wait unchecked; per account across addresses LOGIN_ACCOUNT_CEILING failures in 15
# minutes, past which every address waits a delay (2 s, doubling, at most LOGIN_MAX_DELAY seconds) between checked
# attempts. A browser that signed in as the account before never waits.
LOGIN_RATE_LIMIT = (int(os.environ.get("LOGIN_RATE_LIMIT") or 10), 60)
LOGIN_ADDRESS_RATE_LIMIT = (int(os.environ.get("LOGIN_ADDRESS_RATE_LIMIT") or 50), 60)
LOGIN_ACCOUNT_CEILING = (int(os.environ.get("LOGIN_ACCOUNT_CEILING") or 0), 900)  # 0: LOGIN_RATE_LIMIT's count
LOGIN_MAX_DELAY = int(os.environ.get("LOGIN_MAX_DELAY") or 60)
# How long a /list link from get_list_url lives at most (it dies sooner with the credential that obtained it).
LIST_LINK_MAX_AGE_DAYS = float(os.environ.get("LIST_LINK_MAX_AGE_DAYS") or 30)
# W008 warns that http redirect URIs are allowed: they are, for loopback only (see ALLOWED_REDIRECT_URI_SCHEMES).
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]

REST_FRAMEWORK = {
    # The API's own views (api.base.ApiView) add API keys and OAuth tokens, the MCP endpoints' credentials.
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["base.jsonbody.SafeJSONParser"],  # 400, not a RecursionError, for deep JSON
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.base.exception_handler",
    # Requests per user per minute (API_USER_RATE_LIMIT), as the MCP endpoints have MCP_USER_RATE_LIMIT.
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.UserRateLimit"],
}
API_USER_RATE_LIMIT = int(os.environ.get("API_USER_RATE_LIMIT") or 600)
SPECTACULAR_SETTINGS = {
    "TITLE": "Pillbox & Todos API",
    "DESCRIPTION": "The REST API over both products, for programs and the web pages. Authenticate with an API key "
    "(`Authorization: Bearer pbx_…`, or `?uid=&key=`) or a signed-in session (writes then need the CSRF token).",
    "VERSION": "0.1.0",
    # 3.1: nullable fields are JSON Schema type lists, as in the MCP tools' input schemas the API reuses.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SORT_OPERATIONS": False,
    "ENUM_NAME_OVERRIDES": {"PrescriptionStatusEnum": ["open", "closed"]},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.base.require_bodies"],
}

# Every handler scrubs credentials (?key=, ?t=, token=, Authorization, pbx_ keys) from what it writes
# (base/logging.py). Django's own defaults would send "django" and "django.server" (the runserver request
# lines, query strings included) to handlers without that filter, so both are routed here explicitly.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"scrub_secrets": {"()": "base.logging.ScrubSecrets"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}", "style": "{"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain",
                   "filters": ["scrub_secrets"]},
        "server": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "server",
                   "filters": ["scrub_secrets"]},
    },
    "loggers": {
        "django": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "django.server": {"handlers": ["server"], "level": "INFO", "propagate": False},
    },
    "root": {"handlers": ["stderr"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# The MCP servers this site serves, by name (`manage.py mcp NAME`, and the HTTP endpoints in config.urls).
MCP_SERVERS = {
    "pillbox": "pillbox.tools.TOOLSET",
    "todos": "todos.tools.TOOLSET",
}
