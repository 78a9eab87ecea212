"""Kafka version ranges: "3+", "0-5", "7", "none".

Owns parsing, membership, intersection and printing of the version strings used throughout
Kafka's message definitions (see the upstream message README, "Versions"). Knows nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN_END = 0x7FFF  # int16 max: "3+" means every version from 3 on
_RANGE = re.compile(r"(\d+)(\+|-(\d+))?")


@dataclass(frozen=True, slots=True)
class VersionRange:
    low: int
    high: int  # inclusive; OPEN_END for "N+"

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None:
            return NONE
        text = text.strip()
        if text == "none":
            return NONE
        match = _RANGE.fullmatch(text)
        if match is None:
            raise ValueError(f"not a Kafka version range: {text!r}")
        low = int(match.group(1))
        if match.group(2) == "+":
            return cls(low, OPEN_END)
        return cls(low, int(match.group(3)) if match.group(3) else low)

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def intersect(self, other: VersionRange) -> VersionRange:
        low, high = max(self.low, other.low), min(self.high, other.high)
        return VersionRange(low, high) if low <= high else NONE

    def versions(self, cap: int | None = None) -> range:
        """The versions in this range; an open range stops at ``cap`` (inclusive)."""
        if self.empty:
            return range(0)
        high = self.high if cap is None else min(self.high, cap)
        return range(self.low, high + 1)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == OPEN_END:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NONE = VersionRange(1, 0)
