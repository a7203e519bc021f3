"""A search's time budget (``SEARCH_TIME_BUDGET_MS``)."""

from __future__ import annotations

import time

from django.conf import settings


class Budget:
    """A search's time budget (``SEARCH_TIME_BUDGET_MS``): the steps after it ran out are skipped or made cheap,
    and ``cut`` says that some were."""

    def __init__(self) -> None:
        budget = float(settings.SEARCH_TIME_BUDGET_MS)
        self.deadline = time.monotonic() + budget / 1000 if budget > 0 else None
        self.cut = False

    def excuse(self, since: float) -> None:
        """Leave out of the budget the time from ``since`` (``time.monotonic()``): a one-time cost of the process
        (a typo index built, the model loaded), not of the query."""
        if self.deadline is not None:
            self.deadline += time.monotonic() - since

    def spent(self) -> bool:
        """True (and the answer marked partial) once the budget has run out."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.cut = True
        return self.cut
