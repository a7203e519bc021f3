"""A labelled set for duplicate detection (pillbox.duplicates), written for this benchmark.

``SAME``: lessons stored more than once — each inner list is one lesson, every pair in it must group. Its mode
says which pass is meant to find it: "exact" (case, spacing, punctuation), "near" (a typo fix, re-ordered
sentences, a word added or changed form), "meaning" (the same lesson in other words).
``APART``: look-alikes — each inner list holds notes that must never group with one another (another number,
the opposite decision, another name in the same template).
"""

from __future__ import annotations

Text = tuple[str, str]

SAME: list[tuple[str, list[Text]]] = [
    ("exact", [("Run migrations before deploy", "Always run the database migrations before deploying the web app."),
               ("run migrations before deploy", "always run the database migrations before deploying the web app")]),
    ("exact", [("Lint config", "Ruff reads its settings from pyproject.toml; there is no setup.cfg any more."),
               ("Lint config.", "Ruff reads its settings from pyproject.toml;  there is no setup.cfg any more!")]),
    ("exact", [("Login cookie", "The session cookie is HttpOnly and SameSite=Lax."),
               ("Login cookie", "The session cookie is HttpOnly and SameSite=Lax."),
               ("LOGIN COOKIE", "the session cookie is httponly and samesite=lax")]),
    ("exact", [("Flaky test", "test_upload_large_file is flaky on CI because the temp disk fills up"),
               ("Flaky test:", "test_upload_large_file is flaky on CI, because the temp disk fills up.")]),
    ("exact", [("Where logs go", "Application logs are shipped to Loki through the Promtail sidecar."),
               ("Where logs go", "Application logs are shipped to Loki through the Promtail sidecar.\n")]),
    ("exact", [("Décision: UTC everywhere", "Store every timestamp in UTC and convert only in the template."),
               ("Decision - UTC everywhere", "Store every timestamp in UTC, and convert only in the template.")]),
    ("exact", [("Code review rule", "Two approvals are needed before merging into main."),
               ("Code review rule", "Two approvals are needed before merging into main…")]),
    ("exact", [("Translations", "Strings for the UI live in locale/ and are compiled with compilemessages."),
               ("translations", "Strings for the UI live in locale/ and are compiled with compilemessages")]),
    ("near", [("Cache invalidation", "When a product price changes we must purge the CDN cache for its page."),
              ("Cache invalidation", "When a product price changes we must purge the CDN cache for it's page.")]),
    ("near", [("Recieve webhook retries", "Stripe retries a failed webhook for three days; handlers must be "
                                          "idempotent."),
              ("Receive webhook retries", "Stripe retries a failed webhook for three days; handlers must be "
                                          "idempotent.")]),
    ("near", [("Build cache", "Docker layer caching is keyed on requirements.txt. Copy it before the source code."),
              ("Build cache", "Copy requirements.txt before the source code. Docker layer caching is keyed on it.")]),
    ("near", [("Search index rebuild", "The search index is rebuilt nightly by the cron job in ops/cron.yaml."),
              ("Search index rebuild", "The search index is rebuilt every night by the cron job in ops/cron.yaml.")]),
    ("near", [("Payment test cards", "Use the sandbox test cards from the Adyen docs, never real card numbers."),
              ("Payment test cards", "Use the sandbox test cards from the Adyen documentation, never real card "
                                     "numbers.")]),
    ("near", [("Email templates", "Transactional email templates are written in MJML and compiled at build time."),
              ("Email templates", "Transactional email templates are written in MJML and are compiled at build "
                                  "time.")]),
    ("near", [("Feature flags", "Feature flags are read from Unleash; the default for an unknown flag is off."),
              ("Feature flag", "Feature flags are read from Unleash, the default for an unknown flag is off.")]),
    ("near", [("Avoid N+1 in the order list", "The order list used one query per customer; select_related fixed it."),
              ("Avoid N+1 in order list", "The order list used a query per customer, select_related fixed it.")]),
    ("near", [("Mobile deep links", "Deep links on Android need the assetlinks.json file served from the apex "
                                    "domain."),
              ("Mobile deep links", "Deep links on Android need the assetlinks.json file served from the apex "
                                    "domian.")]),
    ("near", [("Celery beat", "Only one celery beat process may run; a second one schedules every task twice."),
              ("Celery beat", "Only one celery beat process may run: a second one schedules every task twice. "
                              "Check the supervisor config.")]),
    ("near", [("GraphQL depth", "Queries are limited in depth to stop abusive nested requests. The limit lives in "
                                "api/schema.py."),
              ("GraphQL depth", "The limit lives in api/schema.py. Queries are limited in depth to stop abusive "
                                "nested requests.")]),
    ("near", [("Image uploads", "Uploaded images are resized to WebP by the worker, not in the request."),
              ("Image upload", "Uploaded images get resized to WebP by the worker, not in the request.")]),
    ("near", [("Dependency pins", "We pin direct dependencies exactly and let pip-compile resolve the rest."),
              ("Dependency pins", "We pin direct dependencies exactly, and we let pip-compile resolve the rest.")]),
    ("meaning", [("Backups", "The database is backed up every night to S3 with pg_dump."),
                 ("Nightly database backup", "Each night pg_dump writes a backup of the database to S3.")]),
    ("meaning", [("Don't commit secrets", "Secrets must never be committed; they come from the vault at runtime."),
                 ("Secrets come from the vault", "Never commit secrets to the repository: they are read from the "
                                                 "vault at runtime.")]),
    ("meaning", [("Timezone bug", "Reports showed the wrong day because dates were truncated before converting "
                                  "to the user's timezone."),
                 ("Report day off by one", "Dates were truncated before the conversion to the user's timezone, so "
                                           "reports showed the wrong day.")]),
    ("meaning", [("Pagination style", "List endpoints use cursor pagination, not page numbers."),
                 ("Cursor pagination", "Our list endpoints paginate with cursors rather than page numbers.")]),
    ("meaning", [("Restart after env change", "After editing the .env file the app server must be restarted to "
                                              "pick it up."),
                 ("Env changes need a restart", "The app server only picks up a changed .env file once it is "
                                                "restarted.")]),
    ("meaning", [("Frontend tests", "Frontend unit tests run with Vitest; end-to-end tests use Playwright."),
                 ("How the frontend is tested", "We use Vitest for the frontend's unit tests and Playwright for its "
                                                "end-to-end tests.")]),
    ("meaning", [("Migration squash", "Old migrations were squashed into a single initial migration for the "
                                      "billing app."),
                 ("Billing migrations squashed", "The billing app's old migrations have been squashed into one "
                                                 "initial migration.")]),
    ("meaning", [("Rate limiting", "The public API is rate limited per API key by the nginx limit_req zone."),
                 ("API rate limit", "nginx's limit_req zone rate limits the public API per API key.")]),
]

APART: list[list[Text]] = [
    [("HTTP client timeout", "Set the HTTP client timeout to 30s for the payments API."),
     ("HTTP client timeout", "Set the HTTP client timeout to 60s for the payments API.")],
    [("Database port", "The local PostgreSQL listens on port 5432."),
     ("Database port", "The local PostgreSQL listens on port 5433.")],
    [("Debug toolbar", "Enable the debug toolbar in the development settings."),
     ("Debug toolbar", "Disable the debug toolbar in the development settings.")],
    [("Python version", "The service runs on Python 3.11."),
     ("Python version", "The service runs on Python 3.12.")],
    [("Owner of billing", "Alice owns the billing service and reviews its changes."),
     ("Owner of billing", "Bob owns the billing service and reviews its changes."),
     ("Owner of search", "Alice owns the search service and reviews its changes.")],
    [("Deploy target", "Deploys from main go to staging automatically."),
     ("Deploy target", "Deploys from main go to production automatically.")],
    [("Cache TTL", "The product page cache lives for 5 minutes."),
     ("Cache TTL", "The product page cache lives for 15 minutes."),
     ("Cache TTL", "The product page cache lives for 5 hours.")],
    [("Retries", "Failed jobs are retried 3 times with exponential backoff."),
     ("Retries", "Failed jobs are not retried; they go to the dead letter queue.")],
    [("CSRF on the API", "CSRF checks are enabled for the session-authenticated API."),
     ("CSRF on the API", "CSRF checks are disabled for the token-authenticated API.")],
    [("Worker concurrency", "Run the Celery worker with concurrency 4 on the small nodes."),
     ("Worker concurrency", "Run the Celery worker with concurrency 8 on the large nodes.")],
    [("Sign-up", "New accounts must confirm their email before they can log in."),
     ("Sign-up", "New accounts need not confirm their email before they can log in.")],
    [("Node version", "The frontend builds with Node 20 LTS."),
     ("Node version", "The frontend builds with Node 18 LTS.")],
    [("Upload limit", "The upload limit is 10 MB per file."),
     ("Upload limit", "The upload limit is 100 MB per file.")],
    [("Use Redis for sessions", "Sessions are stored in Redis."),
     ("Use Postgres for sessions", "Sessions are stored in Postgres.")],
    [("Bug 412", "Bug 412: the export button crashes on empty carts."),
     ("Bug 413", "Bug 413: the export button crashes on empty carts.")],
    [("Always squash", "Always squash commits when merging a pull request."),
     ("Never squash", "Never squash commits when merging a pull request.")],
    [("Log level", "Production logs at level INFO."),
     ("Log level", "Production logs at level DEBUG.")],
    [("Password length", "Passwords need at least 12 characters."),
     ("Password length", "Passwords need at most 12 characters.")],
    [("Queue for emails", "Emails are sent from the high priority queue."),
     ("Queue for emails", "Emails are sent from the low priority queue.")],
    [("Customer Acme", "Acme Corp is billed yearly in euros."),
     ("Customer Globex", "Globex Corp is billed yearly in euros."),
     ("Customer Initech", "Initech Corp is billed monthly in euros.")],
    [("Timeouts in tests", "Allow network access in the integration tests."),
     ("Timeouts in tests", "Block network access in the integration tests.")],
    [("Session length", "Users are logged out after 30 minutes of inactivity."),
     ("Session length", "Users are logged out after 30 days of inactivity.")],
    [("Read replica", "Reports read from the replica database."),
     ("Primary only", "Reports read from the primary database.")],
    [("Django version", "Upgrade Django to 5.1 before the end of the quarter."),
     ("Django version", "Upgrade Django to 5.2 before the end of the quarter.")],
    [("Sort order", "Search results are sorted by date, newest first."),
     ("Sort order", "Search results are sorted by date, oldest first.")],
    [("Monitoring", "Alerts for the API go to the #ops-alerts channel."),
     ("Monitoring", "Alerts for the workers go to the #ops-alerts channel.")],
    [("Compression", "Responses are compressed with gzip."),
     ("Compression", "Responses are compressed with brotli.")],
    [("Index on orders", "Add an index on orders.customer_id."),
     ("Index on orders", "Drop the index on orders.customer_id.")],
    [("Feature flag default", "The default for an unknown feature flag is on."),
     ("Feature flag default", "The default for an unknown feature flag is off.")],
    [("API key header", "Clients send the API key in the X-Api-Key header."),
     ("API key header", "Clients send the API key in the Authorization header.")],
    [("Batch size", "Import customers in batches of 500 rows."),
     ("Batch size", "Import customers in batches of 5,000 rows.")],
    [("Sync job", "The inventory sync runs synchronously in the request."),
     ("Sync job", "The inventory sync runs asynchronously in a worker.")],
]

# Notes about other things entirely: they must group with nothing.
ALONE: list[Text] = [
    ("Favicon", "The favicon lives in static/img and is referenced from base.html."),
    ("Holiday freeze", "No deploys between December 20 and January 3."),
    ("On-call", "The on-call rota is in PagerDuty; swap shifts there, not in chat."),
    ("Docs build", "The docs are built with MkDocs Material and published from the gh-pages branch."),
    ("Secrets rotation", "Rotate the database password every quarter and update the vault entry."),
    ("Load test", "k6 scripts for load tests are in perf/; run them against staging only."),
]
