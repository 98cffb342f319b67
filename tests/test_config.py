"""Configuration: sections, validation, model limits from litellm's map, lazy litellm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from conftest import CONTEXT_LIMIT, MAX_OUTPUT_TOKENS, TEST_MODEL, run_python
from lossless import Store
from lossless.config import (
    ArenaConfig,
    CompactionConfig,
    Config,
    FilesConfig,
    LLMConfig,
    ModelConfig,
    OperatorsConfig,
    StoreConfig,
)
from lossless.errors import UnknownModelError
from lossless.models import Budget, ModelLimits, resolve_limits
from lossless.testing import LocalLLMServer

# -- sections and defaults --------------------------------------------------------------


def test_config_has_one_section_per_concern() -> None:
    config = Config()
    sections = {
        "model": ModelConfig,
        "llm": LLMConfig,
        "compaction": CompactionConfig,
        "store": StoreConfig,
        "files": FilesConfig,
        "operators": OperatorsConfig,
        "arena": ArenaConfig,
    }
    for name, section in sections.items():
        assert isinstance(getattr(config, name), section), name


def test_defaults_work_offline_and_match_the_documentation() -> None:
    config = Config()
    assert config.model.context_limit is None  # None: ask litellm's model map
    assert config.model.max_output_tokens is None
    assert config.compaction.model is None  # None: the built-in extractive summariser
    assert config.compaction.soft_threshold == 0.6
    assert config.doom_loop_threshold == 3
    assert config.llm.num_retries >= 1
    assert config.llm.retry_backoff_s > 0


def test_sections_can_be_given_as_dicts() -> None:
    config = Config.model_validate(
        {"model": {"context_limit": 50_000, "max_output_tokens": 2_000}, "llm": {"num_retries": 0}}
    )
    assert config.model == ModelConfig(context_limit=50_000, max_output_tokens=2_000)
    assert config.llm.num_retries == 0
    assert config.compaction == CompactionConfig()  # untouched sections keep their defaults


def test_config_is_frozen() -> None:
    config = Config()
    with pytest.raises(pydantic.ValidationError):
        config.doom_loop_threshold = 5  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        config.llm.num_retries = 7  # type: ignore[misc]
    assert config.doom_loop_threshold == 3
    assert config.llm.num_retries == LLMConfig().num_retries


def test_json_round_trip_keeps_every_value() -> None:
    config = Config(
        model=ModelConfig(context_limit=64_000, max_output_tokens=4_000),
        compaction=CompactionConfig(soft_threshold=0.5, protected_tools=("skill", "read")),
        doom_loop_threshold=4,
    )
    assert Config.model_validate_json(config.model_dump_json()) == config


@pytest.mark.parametrize(
    "values",
    [
        {"llm": {"api_bse": "http://127.0.0.1:1"}},  # misspelt field
        {"unknown_section": {}},
        {"compaction": {"soft_threshold": 0}},
        {"compaction": {"soft_threshold": 1.5}},
        {"llm": {"num_retries": -1}},
        {"llm": {"timeout_s": 0}},
        {"llm": {"retry_backoff_s": -0.1}},
        {"llm": {"temperature": 3}},
        {"model": {"context_limit": 0}},
        {"model": {"max_output_tokens": -5}},
        {"doom_loop_threshold": 1},
        {"store": {"synchronous": "off"}},
    ],
    ids=lambda values: json.dumps(values),
)
def test_invalid_values_are_rejected_as_value_errors(values: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Config.model_validate(values)


def test_limits_must_leave_a_usable_budget() -> None:
    with pytest.raises(ValueError, match="usable budget"):
        Config(
            model=ModelConfig(context_limit=10_000, max_output_tokens=2_000),
            compaction=CompactionConfig(output_budget=8_000),
        )
    # One token of room is enough to be valid.
    Config(
        model=ModelConfig(context_limit=10_001, max_output_tokens=2_000),
        compaction=CompactionConfig(output_budget=8_000),
    )


# -- model limits -----------------------------------------------------------------------


def test_known_model_resolves_from_litellms_map_without_overrides() -> None:
    import litellm

    info = litellm.get_model_info("gpt-4o")
    limits = resolve_limits("gpt-4o", ModelConfig())
    assert limits == ModelLimits(int(info["max_input_tokens"]), int(info["max_output_tokens"]))
    assert limits.context_limit >= 100_000


def test_overrides_win_over_the_model_map_one_field_at_a_time() -> None:
    mapped = resolve_limits("gpt-4o", ModelConfig())
    only_context = resolve_limits("gpt-4o", ModelConfig(context_limit=20_000))
    assert only_context == ModelLimits(20_000, mapped.max_output_tokens)
    only_output = resolve_limits("gpt-4o", ModelConfig(max_output_tokens=512))
    assert only_output == ModelLimits(mapped.context_limit, 512)


def test_unknown_model_with_both_overrides_needs_no_map() -> None:
    limits = resolve_limits(
        "openai/no-such-model", ModelConfig(context_limit=9_000, max_output_tokens=900)
    )
    assert limits == ModelLimits(9_000, 900)


def test_unknown_model_without_overrides_is_a_value_error() -> None:
    with pytest.raises(UnknownModelError, match="no-such-model") as info:
        resolve_limits("no-such-model-anywhere", ModelConfig())
    assert isinstance(info.value, ValueError)
    # A partial override does not help: the other limit still has to come from the map.
    with pytest.raises(UnknownModelError):
        resolve_limits("no-such-model-anywhere", ModelConfig(context_limit=9_000))


def test_budget_subtracts_every_reserve() -> None:
    config = Config(compaction=CompactionConfig(output_budget=3_000, soft_threshold=0.5))
    budget = Budget.of(ModelLimits(20_000, 2_000), config, system_tokens=100)
    assert budget.usable == 20_000 - 2_000 - 3_000 - 100
    assert budget.soft_limit == (20_000 - 2_000 - 3_000 - 100) // 2


@pytest.mark.anyio
async def test_session_budget_comes_from_the_model_map(db: Path) -> None:
    from lossless.session import Session

    mapped = resolve_limits("gpt-4o", ModelConfig())
    async with await Session.create(model="gpt-4o", db=db) as session:
        assert session.budget.context_limit == mapped.context_limit
        assert session.budget.max_output_tokens == mapped.max_output_tokens
        expected = (
            mapped.context_limit - mapped.max_output_tokens - CompactionConfig().output_budget
        )
        assert session.budget.usable == expected
        assert session.build_context().budget == expected


@pytest.mark.anyio
async def test_session_budget_uses_config_overrides(db: Path) -> None:
    from lossless.session import Session

    config = Config(
        model=ModelConfig(context_limit=30_000), compaction=CompactionConfig(output_budget=0)
    )
    async with await Session.create(model="gpt-4o", db=db, config=config) as session:
        assert session.budget.context_limit == 30_000
        assert (
            session.budget.usable
            == 30_000 - resolve_limits("gpt-4o", ModelConfig()).max_output_tokens
        )


@pytest.mark.anyio
async def test_unknown_model_fails_create_and_stores_nothing(db: Path) -> None:
    from lossless.session import Session

    with pytest.raises(UnknownModelError) as info:
        await Session.create(model="not-a-real-model-xyz", db=db)
    assert isinstance(info.value, ValueError)
    assert not await anyio.Path(db).exists() or Store(db).sessions() == []


@pytest.mark.anyio
async def test_load_restores_the_config_snapshot_without_the_api_key(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    from lossless.session import Session

    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        session_id = session.id
    stored = Store(db).native.get_session(session_id)["config_json"]
    assert config.llm.api_key is not None
    assert config.llm.api_key not in json.loads(stored)["llm"].values()

    async with await Session.load(session_id, db=db) as loaded:
        # The model is not in litellm's map: loading works only because the overrides came back.
        assert loaded.config.model == ModelConfig(
            context_limit=CONTEXT_LIMIT,
            max_output_tokens=MAX_OUTPUT_TOKENS,
            token_correction=1.0,
            profile="default",
        )
        assert loaded.config.llm.api_base == server.base_url
        assert loaded.config.llm.api_key is None
        assert loaded.config.compaction == config.compaction
        assert loaded.budget == session.budget


# -- litellm is imported lazily -----------------------------------------------------------


def test_litellm_is_not_imported_by_the_package_the_store_or_a_session(tmp_path: Path) -> None:
    # A stand-in litellm package first on sys.path makes the control at the end cheap
    # (the real one takes seconds to import); any eager import would load it just the
    # same. Its model map holds one model, with limits no real entry has.
    stub = tmp_path / "stub" / "litellm"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("suppress_debug_info = False\n")
    (stub / "model_prices_and_context_window_backup.json").write_text(
        json.dumps(
            {
                "gpt-4o": {
                    "litellm_provider": "openai",
                    "max_input_tokens": 1234,
                    "max_output_tokens": 123,
                }
            }
        )
    )
    code = f"""
        import sys
        sys.path.insert(0, {str(stub.parent)!r})
        import anyio

        import lossless
        lossless.Store("store.db").create_session("gpt-4o")
        assert "litellm" not in sys.modules, "import lossless / Store"

        from lossless.session import Session
        from lossless.config import Config, ModelConfig
        assert "litellm" not in sys.modules, "from lossless.session import Session"

        async def main():
            config = Config(model=ModelConfig(context_limit=16000, max_output_tokens=500))
            async with await Session.create(model={TEST_MODEL!r}, db="s.db", config=config) as s:
                await s.record("user", "hello")
                s.build_context()
                s.history()
            async with await Session.create(model="openai/gpt-4o", db="m.db") as s:
                assert s.budget.context_limit == 1234, s.budget

        anyio.run(main)
        assert "litellm" not in sys.modules, "sessions with and without configured limits"

        # The control: what a model call does first brings litellm in.
        from lossless.llm import import_litellm
        import_litellm()
        assert "litellm" in sys.modules
        print("ok")
    """
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
