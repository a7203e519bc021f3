"""The site's URLs plus a client ID metadata document, so CIMD tests fetch it from the live server itself."""

from django.http import HttpRequest, JsonResponse
from django.urls import path

from config.urls import urlpatterns as site_urlpatterns

CIMD_PATH = "oauth-test/client-metadata.json"
REDIRECT_URI = "http://127.0.0.1:33418/callback"


def client_metadata(request: HttpRequest) -> JsonResponse:
    # The document's client_id must be the https URL it is served at (the loopback fetcher maps it to http).
    return JsonResponse(
        {
            "client_id": f"https://{request.get_host()}{request.path}",
            "client_name": "CIMD test client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
        headers={"Cache-Control": "max-age=600"},
    )


urlpatterns = [path(CIMD_PATH, client_metadata), *site_urlpatterns]
