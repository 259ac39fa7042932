"""Fixtures shared by the lake's store tests."""

from __future__ import annotations

import pytest

from pipelines.store import lake_damage


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The partition files the damage checks read (lake_damage.file_damage's calls)."""
    seen: list[str] = []
    real = lake_damage.file_damage

    def counted(path: str) -> str | None:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(lake_damage, "file_damage", counted)
    return seen
