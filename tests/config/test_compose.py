"""compose.yaml (PostgreSQL, Redis, migrations once, two app servers, Caddy) against the README's production
command and variables, and the Dockerfile and Caddyfile it uses. Parsed, not run: CI has no container engine."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from config.settings import caches_from_url, database_from_url
from tests.clients import ROOT

APP_SERVERS = ("app1", "app2")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def production() -> tuple[dict[str, str], list[list[str]]]:
    """The README's production block: the exported variables and every other command, split as a shell would."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^## Production\n+```sh\n(.*?)\n```", readme, re.S | re.M)
    assert block, "README has no Production command block"
    lines = block.group(1).replace("\\\n", " ").splitlines()
    variables: dict[str, str] = {}
    commands = []
    for line in lines:
        if line.startswith("export "):
            # Placeholders such as <50+ random characters> are one value, not shell words.
            variables.update(re.findall(r"([A-Z_]+)=(<[^>]*>|\S+)", line))
        elif words := shlex.split(line, comments=True):
            commands.append(words)
    return variables, commands


def _interpolated(value: str) -> str:
    """compose's ${NAME:-default} / ${NAME:?message} with sample values for the required secrets."""
    samples = {"POSTGRES_PASSWORD": "s3cret", "DJANGO_SECRET_KEY": "k" * 50}

    def one(match: re.Match) -> str:
        name, _, rest = match.group(1).partition(":")
        return samples.get(name) or (rest[1:] if rest.startswith("-") else "")

    return re.sub(r"\$\{([^}]*)\}", one, value)


def test_the_services_are_a_shared_deployment(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "migrate", *APP_SERVERS, "proxy"}
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    assert services["proxy"]["image"].startswith("caddy:")
    app_images = {services[name]["image"] for name in ("migrate", *APP_SERVERS)}
    assert app_images == {"pillbox-todos:latest"}, "the migrations and the servers must run the same build"
    assert all(services[name]["build"] == "." for name in ("migrate", *APP_SERVERS))
    assert (ROOT / "Dockerfile").is_file()


def test_the_app_servers_run_the_readmes_production_command(compose, production):
    _, commands = production
    (server,) = [words for words in commands if words[0] == "granian"]
    host = server.index("--host") + 1
    # Inside a container the server listens on every interface (only the proxy reaches it); all else is the README's.
    expected = [*server[:host], "0.0.0.0", *server[host + 1 :]]
    for name in APP_SERVERS:
        assert compose["services"][name]["command"] == expected
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert cmd and json.loads(cmd.group(1)) == expected


def test_migrations_run_once_before_any_server(compose, production):
    _, commands = production
    services = compose["services"]
    assert ["python", "manage.py", "migrate"] in commands
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in APP_SERVERS:
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
        assert "migrate" not in services[name]["command"]


def test_every_app_container_has_the_readmes_production_environment(compose, production):
    variables, _ = production
    for name in ("migrate", *APP_SERVERS):
        environment = compose["services"][name]["environment"]
        assert set(variables) <= set(environment), f"{name} lacks {set(variables) - set(environment)}"
        for variable in ("DJANGO_DEBUG", "TRUST_PROXY_HEADERS", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS"):
            assert environment[variable] == variables[variable], variable
        assert _interpolated(environment["SITE_URL"]) == "https://pillbox.example.com"
        assert _interpolated(environment["ALLOWED_HOSTS"]) == "pillbox.example.com"
        assert ":?" in environment["DJANGO_SECRET_KEY"], "the secret key must be required, never defaulted"

        database = database_from_url(_interpolated(environment["DATABASE_URL"]))
        postgres = compose["services"]["postgres"]["environment"]
        assert (database["HOST"], database["USER"], database["NAME"]) == (
            "postgres", postgres["POSTGRES_USER"], postgres["POSTGRES_DB"]
        )
        assert database["PASSWORD"] == _interpolated(postgres["POSTGRES_PASSWORD"])
        assert "pool" in database["OPTIONS"]
        redis = urlsplit(environment["REDIS_URL"])
        assert redis.scheme == "redis" and redis.hostname == "redis"
        assert caches_from_url(environment["REDIS_URL"])["default"]["BACKEND"].endswith("RedisCache")


def test_the_pool_fits_the_threads_and_postgres(compose):
    for name in APP_SERVERS:
        service = compose["services"][name]
        threads = int(service["environment"]["APP_THREADS"])
        workers = int(service["command"][service["command"].index("--workers") + 1])
        pool = int(service["environment"]["DATABASE_POOL_MAX_SIZE"])
        assert pool >= threads
    assert len(APP_SERVERS) * workers * pool < 100  # PostgreSQL's default max_connections


def test_the_proxy_sends_both_servers_the_forwarded_headers_and_checks_readiness(compose):
    proxy = compose["services"]["proxy"]
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in proxy["volumes"]}
    caddyfile = (ROOT / mounts["/etc/caddy/Caddyfile"]).resolve()
    assert caddyfile.is_relative_to(ROOT) and caddyfile.is_file()
    text = caddyfile.read_text()
    upstreams = re.search(r"reverse_proxy ([^{]+)\{", text)
    assert upstreams and upstreams.group(1).split() == [f"{name}:8000" for name in APP_SERVERS]
    assert re.search(r"health_uri /readyz\b", text)
    # Caddy sets X-Forwarded-For/-Proto/-Host itself; the health probe must look like a proxied https request.
    assert "X-Forwarded-Proto https" in text and "Host {$SITE_HOST" in text
    assert {"80:80", "443:443"} <= set(proxy["ports"])
    assert set(proxy["depends_on"]) == set(APP_SERVERS)


def test_the_proxy_reads_bodies_whole_under_a_deadline_before_passing_them_on(compose):
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    assert re.search(r"^\s*request_buffers unlimited$", text, re.M)
    assert re.search(r"^\s*max_size \d+MB$", text, re.M)
    assert re.search(r"^\s*read_body \d+s$", text, re.M)


def test_the_deployment_guide_covers_what_it_must():
    guide = (ROOT / "docs" / "deploy.md").read_text()
    for needle in ("TRUST_PROXY_HEADERS", "X-Forwarded-For", "X-Forwarded-Proto", "SITE_URL", "REDIS_URL",
                   "DATABASE_URL", "manage.py migrate", "collectstatic", "pg_dump", "/readyz", "nginx", "Caddy"):
        assert needle in guide, needle
    # The Caddyfile shown in the guide is the one compose runs (comments aside).
    shown = re.search(r"```caddy\n(.*?)\n```", guide, re.S)
    assert shown

    def code(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]

    assert code(shown.group(1)) == code((ROOT / "deploy" / "Caddyfile").read_text())
