"""`Range`: the values a numeric setting allows, and the named ranges every layer shares.

The league's roles (`policies.league.roles`) check their settings with it, and so does the training config
(`launch.training.settings` gives it to every algorithm's settings and the schema), so a bound means the same
everywhere and every refusal reads alike: ``<key>=<value> is not allowed: give a number in [0, 1]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Range:
    """The values a numeric setting allows: ``low``/``high`` (None: unbounded), each end included unless
    ``*_open``; ``null_ok`` lets None (an optional setting that is off). Infinity and NaN are never allowed."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    null_ok: bool = False

    def allows(self, value: Any) -> bool:
        if value is None:
            return self.null_ok
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def text(self) -> str:
        """``a number in (0, 1]``, ``a number >= 1``, ... for the error line."""
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            words = f"a number in {left}{low}, {high}{right}"
        elif self.low is not None:
            words = f"a number {'>' if self.low_open else '>='} {low}"
        elif self.high is not None:
            words = f"a number {'<' if self.high_open else '<='} {high}"
        else:
            words = "a finite number"
        return words + (" or null" if self.null_ok else "")

    def check(self, key: str, value: Any) -> None:
        if not self.allows(value):
            raise ValueError(f"{key}={value!r} is not allowed: give {self.text()}")


def _bound(value: float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):  # 1000000, not 1e+06
        return str(int(value))
    return f"{value:g}"


NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)
SHARE = Range(0, 1)
"""A probability or a mixing weight: [0, 1]."""
