"""Search over pills and capsules: full text (SQLite FTS5 or PostgreSQL), a Jaro-Winkler typo pass, and meaning.

``engine.search`` is the entry point (the tools, the REST API and the memory browser call it). The query's terms
(``terms``) are checked against each scope's words (``vocabulary``; typos: ``typos``), found and ranked by words
in each database (``lexical``; how a row covers the terms: ``coverage``) and by meaning (``meaning``, over the
vectors of ``pillbox.embeddings``), then fused into one ranking (``scoring``) of rows (``results``) within the
caller's rows of each database (``targets``), in a time budget (``budget``); ``snippets`` cuts their text.

The constants were chosen by measurement with ``bench/pills_search.py`` on the shared public dataset.
"""
