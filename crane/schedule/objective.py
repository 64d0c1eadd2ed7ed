"""Scheduling objectives: EDP, latency, energy, or L^p E^q in general."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Objective:
    """Minimise latency**p * energy**q (p = q = 1 is EDP)."""

    p: float = 1.0
    q: float = 1.0

    @classmethod
    def parse(cls, text: str) -> Objective:
        """'edp', 'latency', 'energy', or 'L^p E^q' (e.g. 'L^2 E^1')."""
        key = text.strip().lower()
        named = {"edp": cls(1.0, 1.0), "latency": cls(1.0, 0.0), "energy": cls(0.0, 1.0)}
        if key in named:
            return named[key]
        parts = dict(part.split("^") for part in key.replace("*", " ").split())
        return cls(float(parts.get("l", 0.0)), float(parts.get("e", 0.0)))

    def __call__(self, latency: float, energy: float) -> float:
        return float(latency) ** self.p * float(energy) ** self.q

    def __str__(self) -> str:
        if (self.p, self.q) == (1.0, 1.0):
            return "edp"
        return f"L^{self.p:g} E^{self.q:g}"
