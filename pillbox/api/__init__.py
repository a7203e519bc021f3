"""The Pillbox REST API: bottles, prescriptions, pills, capsules and search, for programs and the web pages.

Request bodies are the MCP tools' input schemas (the record's id comes from the URL instead), read by the
tools' own checks, so an API client reads the same error codes and sentences as an agent. Ids in answers are
the 12-digit short ids; URLs take a short id, a full UUID or any prefix of at least 8 hex digits. A record
another user owns, or in a bottle the caller has not registered, is a 404 like one that does not exist.
Discarded records are listed on request and can be restored; purging is for signed-in people only.

``common`` holds what every endpoint shares (the view base, ids in URLs, request bodies read by the tools'
checks, pages), ``actions`` the POST actions and people-only purges, then one module a kind of record
(``bottles``, ``prescriptions``, ``pills``, ``capsules``) and ``search``; ``urls`` the routes under
``/api/pillbox/``.
"""
