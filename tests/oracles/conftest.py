"""Fixtures and hypothesis set-up shared by the oracle tests (kept out of tests/conftest.py)."""

from __future__ import annotations

from .strategies import register_kio_types

# kio's Records type has no strategy of its own; register valid record sets once per session.
register_kio_types()
