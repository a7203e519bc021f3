#!/usr/bin/env python
"""A checkout's entry point: the same subcommands as the installed `pillbox-todos` command (config/cli.py)."""

from config.cli import main

if __name__ == "__main__":
    main()
