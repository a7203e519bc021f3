from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.oauth.flow import PASSWORD, OAuthSite


@pytest.fixture
def oauth_site(live_server, settings) -> OAuthSite:
    """The live server as the site: SITE_URL and the OAuth issuer both point at it (they must agree)."""
    settings.SITE_URL = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    cache.clear()
    yield OAuthSite(live_server.url)
    cache.clear()


@pytest.fixture
def alice_login(alice):
    alice.user.set_password(PASSWORD)
    alice.user.save()
    return alice
