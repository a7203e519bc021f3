"""Fixtures the reliability tests share with other suites."""

from tests.oauth.conftest import alice_login, oauth_site  # noqa: F401 - the OAuth flow tests' live site and signed-in alice
