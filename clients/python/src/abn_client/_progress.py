"""Upload progress on stderr, as the Deno upload client shows it: a bar redrawn in place on a
terminal (percent, bytes, rate, ETA), plain lines at every 10 % otherwise (logs, cron mail)."""

import math
import time
from typing import Callable, Optional

MIB = 1024 * 1024
BAR_WIDTH = 24


def _mib(n: float) -> str:
    return f"{n / MIB:.1f}"


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    s = max(0, round(seconds))
    h, m = s // 3600, (s % 3600) // 60
    mm = f"{m:02d}" if h > 0 else str(m)
    return f"{h}:{mm}:{s % 60:02d}" if h > 0 else f"{mm}:{s % 60:02d}"


class ProgressReporter:
    """A ``progress(sent, total)`` callback for ``Client.upload`` that writes text with
    ``write`` (no newline added): ``sent == 0`` starts over (a new attempt)."""

    def __init__(
        self,
        write: Callable[[str], None],
        terminal: bool,
        now: Optional[Callable[[], float]] = None,
    ) -> None:
        self._write = write
        self._terminal = terminal
        self._now = now or time.monotonic
        self._open = False
        self._started = 0.0
        self._last_draw: Optional[float] = None
        self._next_step = 10
        self._sent = 0
        self._total = 0

    def __call__(self, sent: int, total: int) -> None:
        if sent == 0:
            self.finish()
            self._open = True
            self._started = self._now()
            self._last_draw = None
            self._next_step = 10
            self._sent = 0
            self._total = total
            return
        if not self._open:
            return
        self._sent = sent
        percent = 100 if total == 0 else math.floor(sent / total * 100)
        if self._terminal:
            now = self._now()
            if self._last_draw is not None and now - self._last_draw < 0.1 and sent < total:
                return
            self._last_draw = now
            self._write(f"\r\x1b[2K{self._line(percent, True)}")
            return
        if percent < self._next_step:
            return
        self._next_step = percent // 10 * 10 + 10
        self._write(f"{self._line(percent, False)}\n")

    def finish(self) -> None:
        """Ends the bar's line (the attempt finished, well or not)."""
        if not self._open:
            return
        self._open = False
        if self._terminal and self._last_draw is not None:
            self._write("\n")

    def _line(self, percent: int, bar: bool) -> str:
        seconds = self._now() - self._started
        rate = self._sent / seconds if seconds > 0 else 0.0
        eta = (self._total - self._sent) / rate if rate > 0 else math.inf
        stats = (
            f"{percent:>3}%  {_mib(self._sent)}/{_mib(self._total)} MiB  "
            f"{_mib(rate)} MiB/s  ETA {_duration(eta)}"
        )
        if not bar:
            return f"upload: {stats}"
        filled = min(BAR_WIDTH, math.floor(percent / 100 * BAR_WIDTH))
        return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {stats}"
