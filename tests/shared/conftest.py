"""The app servers the two-server tests share: one scratch PostgreSQL database and one Redis database for the whole
package, the main pair of servers on both, and the same pair without Redis. Package-scoped, so that every module
of tests/shared/ runs against the same servers (each is started once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.shared.servers import (
    REDIS_URL,
    SharedDatabase,
    app_servers,
    postgres_url_or_skip,
    redis_or_skip,
    shared_database,
)

AUTH_LIMIT = 5
LOGIN_LIMIT = 4
LIMITS = {"AUTH_FAILURE_RATE_LIMIT": str(AUTH_LIMIT), "LOGIN_RATE_LIMIT": str(LOGIN_LIMIT)}
USERS = ["carol", "erin", "olga", "kim", "nina"]


@pytest.fixture(scope="package")
def database(tmp_path_factory) -> Iterator[SharedDatabase]:
    url = postgres_url_or_skip()
    with shared_database(url, tmp_path_factory.mktemp("migrate"), USERS) as made:
        yield made


@pytest.fixture(scope="package")
def redis_db() -> Iterator[Any]:
    client = redis_or_skip()
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="package")
def servers(database, redis_db, tmp_path_factory) -> Iterator[list[str]]:
    with app_servers(
        tmp_path_factory.mktemp("servers"), database, REDIS_URL=REDIS_URL, CACHE_KEY_PREFIX="two-servers", **LIMITS
    ) as urls:
        yield urls


@pytest.fixture(scope="package")
def servers_without_redis(database, tmp_path_factory) -> Iterator[list[str]]:
    """The same two servers without REDIS_URL, one worker process each (so each server's memory is one budget).
    They sit behind a "proxy" (TRUST_PROXY_HEADERS): a test picks its client address with X-Forwarded-For, so a
    repeated attempt starts with a fresh count although their memories cannot be flushed from outside. Their
    pools are only as large as their threads."""
    with app_servers(
        tmp_path_factory.mktemp("servers-without-redis"), database, workers=1, TRUST_PROXY_HEADERS="true",
        DATABASE_POOL_MAX_SIZE="4", DATABASE_POOL_TIMEOUT="5", **LIMITS,
    ) as urls:
        yield urls

