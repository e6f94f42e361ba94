from __future__ import annotations

from pathlib import Path

import pytest

from master_agent.errors import ConfigError
from master_agent.settings import Settings


def test_defaults_use_embedded_database_and_offline_model() -> None:
    settings = Settings.from_env({})
    assert settings.database_url is None
    assert settings.data_dir == Path(".master-agent")
    assert settings.model == "offline"
    assert (settings.max_depth, settings.max_iterations, settings.subagent_timeout_s) == (5, 10, 300)


def test_openai_is_the_default_model_when_a_key_is_set() -> None:
    settings = Settings.from_env({"OPENAI_API_KEY": "sk-test"})
    assert settings.model == "openai:gpt-4o-mini"
    assert settings.openai_api_key is not None
    assert "sk-test" not in repr(settings)


def test_explicit_model_wins_over_key() -> None:
    assert Settings.from_env({"OPENAI_API_KEY": "k", "MASTER_AGENT_MODEL": "offline"}).model == "offline"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MAX_DEPTH", "0"),
        ("MAX_DEPTH", "deep"),
        ("MAX_ITERATIONS", "-1"),
        ("SUBAGENT_TIMEOUT_S", "0"),
        ("MASTER_AGENT_MODEL", "anthropic:claude"),
        ("MASTER_AGENT_MODEL", "openai:"),
        ("DATABASE_URL", "mysql://x"),
    ],
)
def test_invalid_value_fails_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env({variable: value})


def test_empty_variables_mean_unset() -> None:
    assert Settings.from_env({"DATABASE_URL": "", "MAX_DEPTH": ""}).max_depth == 5
