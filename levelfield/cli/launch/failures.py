"""A failed rank as the one clear error the user sees, whichever engine started it."""

from __future__ import annotations

from levelfield.ground.errors import UserError
from levelfield.harness.world import Layout

USER_ERROR_PREFIX = "UserError: "  # how torch's error file spells a recorded UserError
HINT_SEPARATOR = "\nhint: "


def rank_error(
    rank: int, how: str, message: str, *, user_error: bool, hint: str | None, others: list[int], engine: str, shape: str
) -> UserError:
    """The failure of `rank` (`how`: "exit code 1", "killed by SIGKILL") as a UserError.

    A rank's own UserError (bad data, bad rules) comes out as itself, once; anything else names the rank,
    how it ended, its message and the ranks that failed after it.
    """
    if user_error:
        return UserError(message, hint=hint or None)
    also = f"; rank(s) {', '.join(map(str, others))} failed after it" if others else ""
    return UserError(
        f"{shape}: rank {rank} failed ({how}): {message or 'no message'}{also}; {engine} stopped the other ranks",
        hint="the ranks' own messages above show the cause; rank 0's log ends with run_stop aborted",
    )


def split_torch_message(message: str) -> tuple[str, str | None, bool]:
    """(text, hint, whether it was a UserError) of a message read from torch's error file."""
    if not message.startswith(USER_ERROR_PREFIX):
        return message, None, False
    text, _, hint = message[len(USER_ERROR_PREFIX) :].partition(HINT_SEPARATOR)
    return text, hint or None, True


def shape_text(layout: Layout) -> str:
    """How the user asked for the processes: "--nproc 2", or "--nproc 2 --nnodes 2"."""
    return f"--nproc {layout.nproc}" + (f" --nnodes {layout.nnodes}" if layout.nnodes > 1 else "")
