"""The one signature of a progress callback, shared by every long computation of core."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: ``progress(fraction, message)``: called with the fraction of the work done (0 to 1) and
#: words for what is being done. Its return value is ignored, except that the bias
#: simulation (:func:`core.bias.runner.simulate_estimates`) stops when it returns ``False``;
#: to stop any other computation the callback raises (the dashboard's Stop).
Progress = Callable[[float, str], Any]
