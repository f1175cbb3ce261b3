"""A model file a policy serves from, swapped without a restart: each step looks at the file's size and modification
time (one ``stat``), and a changed file is loaded again; a file that no longer loads keeps the model that was
serving (and says so in the log, once per change). At start, a missing or invalid file fails with its path."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from router.learning.model import ModelFileError, RouterModel, load_model

log = logging.getLogger("ecgw.router")


class ModelHolder:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp = self._stat()
        self.model: RouterModel = load_model(self.path)  # ModelFileError at start, naming the path
        self._lock = threading.Lock()
        self.swaps = 0

    def _stat(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def current(self) -> RouterModel:
        stamp = self._stat()
        if stamp == self._stamp or stamp is None:
            return self.model
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self.model = load_model(self.path)
                    self.swaps += 1
                    log.info("learned-routing: loaded the changed model file %s", self.path)
                except ModelFileError as exc:
                    log.error("learned-routing: %s; still serving the model loaded before", exc)
        return self.model
