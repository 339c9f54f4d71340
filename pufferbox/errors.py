"""The one base of the errors pufferbox raises on purpose.

Every such error says in one line what is wrong and what to do about it; the command line prints it
as ``Error: ...`` and exits with status 2 (:func:`pufferbox.cli.user_errors`). Each class also keeps
the built-in base that says what kind of failure it is (``ValueError`` for a bad setting,
``RuntimeError`` for a fault while running, ``KeyError`` for an unknown name), so callers can catch
either.

Example:
    >>> from pufferbox.spaces import SpaceError
    >>> issubclass(SpaceError, PufferboxError) and issubclass(SpaceError, ValueError)
    True
"""

from __future__ import annotations

__all__ = ["PufferboxError"]


class PufferboxError(Exception):
    """An error pufferbox raises on purpose, with a one-line message naming the problem and the fix."""
