"""A run that is killed still leaves its report behind.

Scrapy stops gracefully on the first Ctrl-C or SIGTERM and then closes the
spider as usual (end reason `shutdown`: the report is posted as always). A
second signal stops the reactor at once: the spider is never closed and no
report would be written. A scheduler's SIGTERM is often followed by a
SIGKILL before a graceful stop finishes. So on SIGTERM, and on a second
Ctrl-C, the kit writes the report as it stands (end reason `shutdown`, so
the crawler's own verdict is incomplete), and spools it before Scrapy's
handler runs; the next run sends it. When the graceful stop does finish,
the extension takes the spooled copy back and posts the final report
instead (one run_id, one report).

The handler wraps whatever Scrapy installed and wraps it again after each
signal, since Scrapy installs a new handler for the next signal. No logging
in the handler (the interrupted code may be writing to the same stream):
what happened is logged from the reactor and printed by the runner.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

_MARK = "_completeness_interrupts"
SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGBREAK", None)) if s is not None)


class InterruptGuard:
    def __init__(self, on_kill: Callable[[str], None]) -> None:
        self.on_kill = on_kill
        self.seen = 0
        self.fired = False

    def install(self) -> None:
        for signum in SIGNALS:
            try:
                current = signal.getsignal(signum)
                if getattr(current, _MARK, None) is self:
                    continue
                signal.signal(signum, self._wrap(current))
            except (ValueError, OSError):  # not the main thread, or an unsupported signal
                return

    def _wrap(self, previous: Any) -> Callable[[int, Any], None]:
        def handler(signum: int, frame: Any) -> None:
            self.seen += 1
            if not self.fired and (signum != signal.SIGINT or self.seen >= 2):
                self.fired = True
                name = signal.Signals(signum).name
                why = f"a second {name}" if signum == signal.SIGINT else name
                try:
                    self.on_kill(why)
                except Exception:
                    pass
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self.install()  # Scrapy's handler installs the next one: wrap that too

        setattr(handler, _MARK, self)
        return handler
