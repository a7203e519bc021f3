"""Loaded first (`-p tests.environment`): every test run gets its own scratch data directory.

Django reads PILLBOX_HOME when the settings are imported, so this has to happen before pytest-django
sets Django up; nothing a test does may touch the real ~/.pillbox.
"""

import os
import tempfile
from pathlib import Path

os.environ["PILLBOX_HOME"] = tempfile.mkdtemp(prefix="pillbox-test-home-")
os.environ.pop("PILLBOX_ROOT", None)
# Search by meaning loads a model; the suite's lexical contract runs without it. The tests of meaning
# (tests/pillbox/search/) turn it on themselves.
os.environ.setdefault("EMBEDDINGS", "off")
# Servers started by the tests load the model themselves; the shared model process has tests of its own
# (tests/pillbox/search/test_shared_model.py), which give it a socket directory of their own.
os.environ.setdefault("EMBEDDINGS_SHARED", "off")
# The int8 model file is made once (tens of seconds) and kept for later runs, inside the checkout.
os.environ.setdefault("EMBEDDINGS_CACHE", str(Path(__file__).resolve().parents[1] / ".cache" / "models"))
