"""A one-line progress bar on stderr."""
import sys
import time


class Progress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second; silent unless enabled
    and stderr is a terminal."""

    WIDTH = 30

    def __init__(self, total, enabled=True, stream=None):
        self.stream = stream or sys.stderr
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.enabled = bool(enabled) and tty
        self.total = total
        self.last = 0.0
        self.drawn = False
        self.t0 = time.perf_counter()

    def start(self):
        """The clock of the time estimate starts now (after the first generation)."""
        self.t0 = time.perf_counter()

    def note(self, text):
        if self.enabled:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
            self.drawn = True

    def update(self, t, extra="", force=False):
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        frac = min(1.0, max(0.0, t / self.total)) if self.total > 0 else 1.0
        fill = int(round(frac * self.WIDTH))
        eta = f"{(now - self.t0) * (1 - frac) / frac:.1f} s" if frac >= 0.01 else "--"
        self.stream.write(f"\r\033[K[{'#' * fill}{'.' * (self.WIDTH - fill)}] {100 * frac:5.1f}%  "
                          f"t = {t:.4g}/{self.total:.4g} s  {extra}  eta {eta}")
        self.stream.flush()
        self.drawn = True

    def close(self):
        if self.enabled and self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
