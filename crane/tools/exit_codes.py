"""Exit statuses shared by every Crane tool, and the error that means "usage mistake".

0 success, 1 diagnostics (errors in the input or from passes), 2 usage errors (bad flags,
missing files), 3 an internal error of Crane itself, 130 interrupted (``crane-dse``). The
driver modules and the modules doing their work both import them from here, so neither
needs the other.
"""

from __future__ import annotations

EXIT_OK, EXIT_DIAGNOSTICS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A mistake on the command line or with a file named there (exit status 2)."""
