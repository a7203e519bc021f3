"""Loaded first (`-p tests.environment`): every test run gets its own scratch data directory.

Django reads PILLBOX_HOME when the settings are imported, so this has to happen before pytest-django
sets Django up; nothing a test does may touch the real ~/.pillbox.
"""

import os
import tempfile

os.environ["PILLBOX_HOME"] = tempfile.mkdtemp(prefix="pillbox-test-home-")
os.environ.pop("PILLBOX_ROOT", None)
