"""The holiday names of a year are read from the ``holidays`` package once and kept on disk for the next
process (``capabilities.holiday_names``): the same names back, recomputed when the file is damaged, the
package or the code changed, or the cache cannot be written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from master_agent.capabilities import holiday_names, terms
from master_agent.capabilities.holiday_names import Holiday, cached_holidays

calls: list[int] = []


def _compute(year: int) -> tuple[Holiday, ...]:
    calls.append(year)
    return (
        ("Fête nationale du Québec", "CA", "QC", datetime(year, 6, 24, tzinfo=UTC)),
        ("Neujahr", "DE", None, datetime(year, 1, 1, tzinfo=UTC)),
    )


def _other_compute(year: int) -> tuple[Holiday, ...]:
    calls.append(-year)
    return (("New Year's Day", "US", None, datetime(year, 1, 1, tzinfo=UTC)),)


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls.clear()
    return tmp_path / "master-agent"


def test_the_names_are_computed_once_and_read_back_the_same(cache_home: Path) -> None:
    first = cached_holidays(_compute, 2026)
    again = cached_holidays(_compute, 2026)
    assert first == again == _compute(2026)
    assert calls == [2026, 2026]  # the second read came from the disk (the third is this test's own)
    assert [path.name.startswith("holiday-names-2026-") for path in cache_home.iterdir()] == [True]
    cached_holidays(_compute, 2027)
    assert calls[-1] == 2027 and len(list(cache_home.iterdir())) == 2  # each year its own file


def test_other_code_or_a_damaged_file_is_computed_again(cache_home: Path) -> None:
    cached_holidays(_compute, 2026)
    assert cached_holidays(_other_compute, 2026) == _other_compute(2026)  # never another reader's names
    calls.clear()
    for path in cache_home.iterdir():
        path.write_text('[["cut off')
    assert cached_holidays(_compute, 2026) == _compute(2026)
    assert calls == [2026, 2026]
    assert cached_holidays(_compute, 2026) == _compute(2026)  # rewritten whole
    assert calls == [2026, 2026, 2026]
    assert not [path for path in cache_home.iterdir() if path.name.startswith(".")]  # no temporary left


def test_a_cache_that_cannot_be_written_is_recomputed(cache_home: Path) -> None:
    cache_home.parent.mkdir(parents=True, exist_ok=True)
    cache_home.write_text("a file where the directory would be")
    assert cached_holidays(_compute, 2026) == cached_holidays(_compute, 2026) == _compute(2026)
    assert calls == [2026, 2026, 2026]


def test_the_package_version_names_the_file(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached_holidays(_compute, 2026)
    monkeypatch.setattr(holiday_names, "package_version", lambda: "0.0-other")
    cached_holidays(_compute, 2026)
    assert calls == [2026, 2026]
    assert len(list(cache_home.iterdir())) == 2
    assert holiday_names.cache_dir() == cache_home


def test_the_terms_read_the_package_through_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terms, "_read_holidays_in_every_language", _compute)
    terms._holidays_in_every_language.cache_clear()
    try:
        assert terms._holidays_in_every_language(2031) == _compute(2031)
    finally:
        terms._holidays_in_every_language.cache_clear()
