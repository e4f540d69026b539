"""Exceptions that the CLI turns into one clear line and an exit code, never a traceback."""


class UserError(Exception):
    """Something the user can fix: a bad suite, an unknown backend, an unwritable folder.

    The CLI prints the message as one line and exits with code 2.
    """


class IntegrityError(Exception):
    """A kernel's output did not hold what the dispatches issued should have produced.

    A benchmark whose dispatches did not run would look fast, so its samples are discarded
    and the run exits non-zero.
    """
