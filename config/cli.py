"""`pillbox-todos SUBCOMMAND …` (the installed command) and `manage.py SUBCOMMAND …` (a checkout): one entry point.

Every management command is a subcommand (`pillbox-todos --help` lists them). Two are answered before Django's
own dispatch: `mcp`, whose handshake an agent waits for at every start, is served before Django is set up; and
`recall`, a session-start hook, never creates a data directory, so it is asked before the settings make one.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # The stdio MCP servers load only the apps an agent's process uses (see config/settings_stdio.py).
    stdio = len(sys.argv) > 1 and sys.argv[1] == "mcp"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_stdio" if stdio else "config.settings")
    if stdio:
        from mcp_bridge.stdio import main as serve_stdio

        if (code := serve_stdio(sys.argv[2:])) is not None:
            sys.exit(code)
    if len(sys.argv) > 1 and sys.argv[1] == "recall":
        from pillbox.management.commands.recall import missing_home

        if line := missing_home():
            print(line)
            return
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
