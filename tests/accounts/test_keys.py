import subprocess
import sys

import httpx2
import pytest

from accounts.models import ApiKey
from accounts.services import apikey_authenticate, keys_revoke_all
from tests.clients import ROOT, http_client, run


def test_createkey_prints_exactly_uid_and_key(tmp_path):
    env = {"PILLBOX_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "manage.py", "createkey", "carol", "--create"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("uid: ") and lines[1].startswith("key: ")


def test_key_is_stored_only_as_a_hash(alice):
    stored = ApiKey.objects.get(user=alice.user)
    assert alice.key not in (stored.key_hash, stored.prefix)
    assert len(stored.key_hash) == 64


def test_key_authenticates_with_its_uid_only(alice, bob):
    assert apikey_authenticate(raw=alice.key) == alice.user
    assert apikey_authenticate(raw=alice.key, uid=alice.uid) == alice.user
    assert apikey_authenticate(raw=alice.key, uid=bob.uid) is None
    assert apikey_authenticate(raw=alice.key + "x") is None


def test_revoked_key_no_longer_authenticates(alice):
    keys_revoke_all(user=alice.user)
    assert apikey_authenticate(raw=alice.key) is None


@pytest.mark.parametrize("path", ["/mcp", "/pillbox/mcp"])
def test_mcp_without_credentials_is_401_with_resource_metadata(live_server, path):
    response = httpx2.post(live_server.url + path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'resource_metadata="' in challenge and f"/.well-known/oauth-protected-resource{path}" in challenge


@pytest.mark.parametrize("query", ["?uid=nobody&key=pbx_wrong", ""])
def test_mcp_with_a_bad_key_is_401(live_server, alice, query):
    headers = {} if query else {"Authorization": "Bearer pbx_not-a-key"}
    response = httpx2.post(live_server.url + "/mcp" + query, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                           headers=headers)
    assert response.status_code == 401
    assert "invalid_token" in response.headers["WWW-Authenticate"]


def test_mcp_accepts_uid_and_key_in_the_url(live_server, alice):
    async def scenario():
        async with http_client(f"{live_server.url}/mcp?uid={alice.uid}&key={alice.key}") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "get_list_usage" in run(scenario())
