"""The settings of a shared deployment: DATABASE_URL (dj-database-url, Django's psycopg pool), REDIS_URL (Django's
Redis cache, atomic counters), and /readyz."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import OperationalError
from django.test import override_settings

from accounts.throttle import bump, exhausted, failure
from base import health
from config.settings import GLOBAL_DB_PATH, caches_from_url, database_from_url
from tests.shared.servers import REDIS_URL


def test_a_postgres_url_gets_the_pool_and_health_checks(monkeypatch):
    for name in ("DATABASE_POOL", "DATABASE_POOL_MIN_SIZE", "DATABASE_POOL_MAX_SIZE", "DATABASE_POOL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    db = database_from_url("postgres://ann:p%40ss%2Fword@db.internal:5433/pill%20box")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], str(db["PORT"]), db["NAME"]) == (
        "ann", "p@ss/word", "db.internal", "5433", "pill box"
    )
    # Django refuses CONN_MAX_AGE beside a pool; the pool checks connections before handing them out.
    assert db["CONN_MAX_AGE"] == 0 and db["CONN_HEALTH_CHECKS"] is True
    assert db["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 10, "timeout": 10.0}

    monkeypatch.setenv("DATABASE_POOL_MAX_SIZE", "24")
    monkeypatch.setenv("DATABASE_POOL_TIMEOUT", "3.5")
    assert database_from_url("postgresql://h/db")["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 24, "timeout": 3.5}


def test_the_pool_can_be_turned_off_for_an_external_pooler(monkeypatch):
    monkeypatch.setenv("DATABASE_POOL", "false")
    db = database_from_url("postgres://h/db")
    assert "pool" not in db.get("OPTIONS", {})
    assert db["CONN_MAX_AGE"] == 60 and db["CONN_HEALTH_CHECKS"] is True


def test_sqlite_urls_keep_the_sqlite_options():
    db = database_from_url("sqlite:///srv/pillbox/global.db")
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(db["NAME"]) == Path("/srv/pillbox/global.db")
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert Path(database_from_url("sqlite://")["NAME"]) == GLOBAL_DB_PATH


def test_other_database_urls_are_refused_clearly():
    with pytest.raises(ValueError, match="'mysql' is not supported"):
        database_from_url("mysql://h/db")


def test_redis_url_selects_djangos_redis_cache(monkeypatch):
    monkeypatch.delenv("CACHE_KEY_PREFIX", raising=False)
    assert caches_from_url(None)["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    assert caches_from_url("")["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"
    shared = caches_from_url("redis://cache.internal:6379/2")["default"]
    assert shared["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert shared["LOCATION"] == "redis://cache.internal:6379/2"
    assert shared["KEY_PREFIX"] == "pillbox"


class _Request:
    META = {"REMOTE_ADDR": "203.0.113.9"}


def _hammer() -> None:
    """Eight threads counting 50 failures each, all at once."""
    limit = (10_000, 60)
    start = threading.Barrier(8)

    def count() -> None:
        start.wait()
        for _ in range(50):
            failure(_Request(), kind="hammer", limit=limit)

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert exhausted(_Request(), kind="hammer", limit=(400, 60)) > 0
    assert exhausted(_Request(), kind="hammer", limit=(401, 60)) == 0


def test_failure_counts_are_exact_under_concurrency_in_local_memory():
    _hammer()


@pytest.fixture
def redis_cache() -> Iterator[Any]:
    """This process's cache on the tests' Redis database (flushed before and after); the raw client, to look."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip(f"Redis is not reachable at {REDIS_URL} (set TEST_REDIS_URL)")
    client.flushdb()
    try:
        with override_settings(CACHES=caches_from_url(REDIS_URL)):
            assert type(cache._cache).__name__ == "RedisCacheClient"
            yield client
    finally:
        client.flushdb()


def test_failure_counts_are_exact_under_concurrency_in_redis(redis_cache):
    _hammer()
    assert redis_cache.keys("pillbox:*:throttle:hammer:ip:203.0.113.9:*"), "the count is not in Redis"


def test_a_bucket_made_anew_by_redis_incr_still_closes(redis_cache):
    """Django's Redis incr asks whether the key exists, then INCRs it; a key that expires in between is made by
    INCR with no expiry. Such a bucket (a count with no TTL, as INCR leaves it) is given its window when counted,
    so an address or a user can never stay refused for good."""
    key = cache.make_key("throttle:race:ip:203.0.113.9:n")
    redis_cache.set(key, 0)  # what INCR leaves after the key expired under it: no expiry
    assert redis_cache.ttl(key) == -1
    assert bump("throttle:race:ip:203.0.113.9", 1, 60) == 1
    assert 0 < redis_cache.ttl(key) <= 60
    assert bump("throttle:race:ip:203.0.113.9", 1, 60) == 2


@pytest.mark.django_db
def checks_of(response) -> dict[str, object]:
    """The body less what the apps report beside the checks (pgvector, on PostgreSQL: tests/pillbox/search)."""
    return {name: value for name, value in response.json().items() if name != "pgvector"}


def test_readyz_answers_200_when_the_database_and_the_cache_answer(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert checks_of(response) == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}


@pytest.mark.django_db
def test_readyz_names_an_unreachable_cache_and_nothing_else(client):
    # A port nothing listens on: the real client's connection error, not a stand-in.
    with override_settings(CACHES=caches_from_url("redis://:hunter2@127.0.0.1:9/0")):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert checks_of(response) == {"status": "unavailable", "checks": {"database": "ok", "cache": "unavailable"}}
    assert b"hunter2" not in response.content and b"127.0.0.1" not in response.content


@pytest.mark.django_db
def test_readyz_names_a_failing_database_and_leaks_no_detail(client, monkeypatch):
    def refused() -> None:
        raise OperationalError('connection to server at "db.internal" failed: password authentication failed')

    monkeypatch.setitem(health.CHECKS, "database", refused)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert checks_of(response) == {"status": "unavailable", "checks": {"database": "unavailable", "cache": "ok"}}
    assert b"db.internal" not in response.content and b"password" not in response.content



@pytest.mark.django_db
def test_readyz_a_failing_report_says_unknown_and_the_server_stays_ready(client, monkeypatch):
    def failing() -> str:
        raise OperationalError("permission denied for view pg_available_extensions")

    monkeypatch.setitem(health.REPORTS, "pgvector", failing)
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}, "pgvector": "unknown"}
