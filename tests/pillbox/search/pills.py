"""What the recall tests store and ask: a paraphrase's target among other pills, the paraphrase, and nonsense."""

PARAPHRASE_TARGET = ("Nightly database dumps", "pg_dump runs at 2am and the archive is copied to object storage.")
OTHERS = [
    ("Authentication middleware order", "SessionMiddleware must come before AuthenticationMiddleware."),
    ("Running the tests", "Use pytest -x from the repository root; browser tests need chromium."),
    ("Release checklist", "Bump the version, tag, and publish the wheel."),
]
PARAPHRASE_QUERY = "where are backups of postgres kept"  # not one word of the pill, nor a prefix of one
NONSENSE_QUERY = "xqzv plorbt"
