"""Memory written by the original Pillbox (the Rust core with its Node MCP front), brought across.

The original keeps its files exactly where we keep ours: ``~/.pillbox/pillbox.db`` (global: capsules, global
bottles, its registry of projects) and ``<project>/.pillbox/pillbox.db`` (one local bottle). A file is
recognised by its tables and its ``schema_migrations``, never by its path. The first time one is met, its rows
are copied into our tables — same ids, timestamps, views, authors and soft-delete state — in one transaction
that also writes a record of what was copied, so it happens once per file.

The original's tables are only ever read, through a read-only connection, and never altered: no renames, no
triggers, no rows. Our tables live beside them in the same file (a local file always had to hold ours; the
global file does too when ``PILLBOX_HOME`` is ``~/.pillbox``), and the original ignores tables it does not know,
so its binary keeps working on its file. From the import on, the two copies are independent.

The package, bottom up: ``files`` (what a file is and holds, once read), ``news`` (telling the agent what was
imported), ``judge`` (refusing a file that may not be read), ``recognise`` (telling the original's files from
others), ``reading`` (its rows parsed into ours), ``saving`` (our rows written), then the two imports:
``local`` (a project's file, as it is opened) and ``home`` (the global file, for a user).
"""
