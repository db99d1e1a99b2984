"""Errors that are the user's to fix.

A `UserError` reaches the CLI, which prints its message (one line per problem,
each naming the file, the value found and the value expected) and exits with
`EXIT_USER_ERROR`. Anything else that escapes is a levelfield bug.
`report_error` prints one for every entry point (the CLI, `python -m` tools).
"""

from __future__ import annotations

import sys

# Exit codes shared by every command: 0 success, 1 the command ran and found
# problems (the checker's findings), 2 the command could not run as asked.
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USER_ERROR = 2


class UserError(Exception):
    """A problem with the user's input, environment or files; the message says how to fix it."""

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def report_error(error: UserError) -> None:
    """Print `error` as `levelfield: error:` lines on stderr, then its hint; never a traceback."""
    for line in str(error).splitlines() or ["unknown error"]:
        print(f"levelfield: error: {line}", file=sys.stderr)
    if error.hint:
        print(f"levelfield: hint: {error.hint}", file=sys.stderr)
