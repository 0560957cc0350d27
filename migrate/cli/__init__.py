"""The command line: reads the command, runs the stages in order, prints what they found.

In: argv. Out: the exit code and what the command prints or writes. entry.py is the console
script (`console_main`: `main`, then the process ends): a plain `migrate scan PATH...` goes
to scan_command.py without typer; any other command line goes to commands.py (typer), which
calls the same code. demo.py runs every
command on the bundled sample; docs.py generates the rule docs.
"""

from migrate.cli.entry import console_main, main

__all__ = ["console_main", "main"]
