"""One settings file, driven by environment variables only.

The defaults run a local single-user site on an embedded SQLite database in ``PILLBOX_HOME``
(``~/.pillbox``); ``DATABASE_URL`` points the global database elsewhere (PostgreSQL for a shared server).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent


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
PILLBOX_HOME.mkdir(parents=True, exist_ok=True)
PILLBOX_ROOT = Path(os.environ["PILLBOX_ROOT"]).expanduser().resolve() if os.environ.get("PILLBOX_ROOT") else None
GLOBAL_DB_PATH = PILLBOX_HOME / "pillbox.db"


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
SITE_URL = (os.environ.get("SITE_URL") or "http://127.0.0.1:8000").rstrip("/")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
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


def sqlite_database(path: Path | str) -> dict:
    # CONN_MAX_AGE None: a long-lived agent process keeps its connection between tool calls.
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path), "OPTIONS": dict(SQLITE_OPTIONS), "CONN_MAX_AGE": None}


def _database_from_url(url: str) -> dict:
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return sqlite_database(unquote(parts.path) if parts.path not in ("", "/") else GLOBAL_DB_PATH)
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
        }
    raise ValueError(f"DATABASE_URL scheme {parts.scheme!r} is not supported (use sqlite:// or postgres://)")


DATABASES = {
    "default": _database_from_url(os.environ["DATABASE_URL"])
    if os.environ.get("DATABASE_URL")
    else sqlite_database(GLOBAL_DB_PATH)
}
DATABASE_ROUTERS = ["pillbox.routers.LocalBottleRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "oauth2_provider",
    "config",
    "accounts",
    "pillbox",
    "todos",
    "webui",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/admin/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or PILLBOX_HOME / "static")

# MCP request bodies are capped at 1 MiB by the MCP views themselves (413); the same bound for forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
MCP_MAX_BODY_BYTES = 1024 * 1024

OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Use the Todos and Pillbox MCP servers"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# The MCP servers this site serves, by name (`manage.py mcp NAME`, and the HTTP endpoints in config.urls).
MCP_SERVERS = {
    "pillbox": "pillbox.tools.TOOLSET",
    "todos": "todos.tools.TOOLSET",
}
