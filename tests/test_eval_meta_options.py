"""The meta evaluation runner's options: ``--help`` and mistakes run nothing (no held-out split)."""

from __future__ import annotations

import pytest
from benchmarks import eval_meta


def test_help_prints_and_exits_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        eval_meta.main(["--help"])
    assert stopped.value.code == 0
    assert "--only" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv", [["--hlep"], ["--only", "heldout-five"], ["tuning5"], ["--only"], ["--misses", "--verbose"]]
)
def test_an_unknown_option_or_split_is_an_error(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        eval_meta.main(argv)
    assert stopped.value.code == 2


def test_only_picks_the_named_splits_in_order() -> None:
    options = eval_meta.parse_options(["--only", "tuning5", "--only", "tuning2", "--misses"])
    assert [label for label, _, _ in eval_meta._chosen(options)] == ["tuning2", "tuning5"]
    assert options.misses


def test_tuning_only_leaves_every_held_out_split_out() -> None:
    chosen = eval_meta._chosen(eval_meta.parse_options(["--tuning-only"]))
    assert chosen and all(shown for _, _, shown in chosen)
    assert not any("heldout" in file for _, file, _ in chosen)


def test_no_option_means_every_split() -> None:
    assert eval_meta._chosen(eval_meta.parse_options([])) == list(eval_meta.SPLITS)
