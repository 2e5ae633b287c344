"""The exit statuses every ``suite`` command, launch and packed child shares, and the sentence that explains
them (``suite --help``).

0 done; 1 a run failed, or the command did (an unexpected error); 2 a usage or config error, one ``error:``
line per cause (a preflight problem found by ``--dry-run`` included); 3 a run left to the process that holds
its lease; 130 interrupted (128 + SIGINT, the shell's status of an interrupted command: SIGINT, SIGTERM or
SIGUSR2, after which re-running the command resumes).
"""

from __future__ import annotations

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUSY = 3
EXIT_INTERRUPTED = 130

EXIT_CODES = (
    "exit status: 0 done (every run done), 1 a run failed (or the command did: an unexpected error), "
    "2 a usage or config error (one `error:` line per cause), 3 a run left to the process that holds its "
    "lease, 130 interrupted (SIGINT, SIGTERM or SIGUSR2; re-run the command to resume). --debug, anywhere "
    "on the command line, adds the traceback of an error."
)
