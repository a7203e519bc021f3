"""Settings for the stdio MCP servers (`manage.py mcp …`): the same site, with only the apps an agent's
process uses.

A local agent starts its MCP servers often and waits for them; the web-only apps (admin, sessions, OAuth,
the REST API) cost a stdio process a third of its start-up and are never used there. The database, the data
directory and every setting are the full site's; the web server migrates the web-only apps' tables.
"""

from config.settings import *  # noqa: F403

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "config",
    "accounts",
    "pillbox",
    "todos",
]
MIDDLEWARE = []
