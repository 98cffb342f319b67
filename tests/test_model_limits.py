"""Model limits from the model map litellm ships, read without importing litellm: the
answers of litellm's get_model_info, the same errors, and no import to open a session."""

from __future__ import annotations

import io
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import run_python
from lossless import model_map, models
from lossless.config import ModelConfig
from lossless.errors import UnknownModelError
from lossless.model_map import MapEntry, ModelMap, load_model_map, read_model_map
from lossless.models import ModelLimits, resolve_limits
from lossless.session import Session

# Names as users pass them, across providers: plain and provider-prefixed, Bedrock's
# routing, region and cross-region forms, a dated snapshot and a fine-tune of a mapped
# model, an alias, other letter case, and a future Claude only the map's rules know.
MAPPED_NAMES = [
    "gpt-4o",
    "openai/gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "o3-mini",
    "GPT-4o",
    "gpt-4o-2099-01-01",
    "ft:gpt-4o-2024-08-06:my-org::abc123",
    "azure/gpt-4o",
    "litellm_proxy/gpt-4o",
    "claude-sonnet-4-5",
    "anthropic/claude-sonnet-4-5",
    "claude-sonnet-latest",
    "anthropic/claude-opus-9-9",
    "vertex_ai/claude-sonnet-4-5",
    "gemini/gemini-2.5-pro",
    "gemini-2.5-flash",
    "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "bedrock/us.anthropic.claude-3-5-sonnet-20240620-v1:0",
    "bedrock/converse/us-east-1/anthropic.claude-3-5-sonnet-20240620-v1:0",
    "bedrock/amazon.nova-pro-v1:0",
    "ollama/llama3",
    "mistral/mistral-large-latest",
    "deepseek/deepseek-chat",
    "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
]

UNKNOWN_NAMES = [
    "no-such-model-anywhere",
    "openai/no-such-model",
    "bedrock/no.such-model-v1:0",
    # A dated snapshot is stripped only together with its provider prefix.
    "openai/gpt-4o-2099-01-01",
]


def litellm_limits(name: str) -> ModelLimits:
    import litellm

    info = litellm.get_model_info(name)
    assert info["max_input_tokens"] and info["max_output_tokens"], f"{name}: {info}"
    return ModelLimits(int(info["max_input_tokens"]), int(info["max_output_tokens"]))


# -- agreement with litellm ------------------------------------------------------------------


@pytest.mark.parametrize("name", MAPPED_NAMES)
def test_limits_agree_with_litellm(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = litellm_limits(name)
    # Out of sys.modules, litellm cannot answer for the map.
    monkeypatch.delitem(sys.modules, "litellm")
    assert resolve_limits(name, ModelConfig()) == expected


@pytest.mark.parametrize("name", UNKNOWN_NAMES)
def test_unknown_models_raise_with_the_advice(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    with pytest.raises(Exception):  # noqa: B017 - litellm raises a bare Exception
        litellm.get_model_info(name)
    monkeypatch.delitem(sys.modules, "litellm")
    with pytest.raises(UnknownModelError) as info:
        resolve_limits(name, ModelConfig())
    assert str(info.value) == (
        f"model {name!r} is not in litellm's model map; set config.model.context_limit and "
        "config.model.max_output_tokens for it"
    )
    assert isinstance(info.value, ValueError)


def test_a_model_registered_with_litellm_is_found_while_litellm_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import litellm

    name = "lossless-registered-test-model"
    entry = {"litellm_provider": "openai", "mode": "chat"}
    litellm.register_model({name: {**entry, "max_input_tokens": 4321, "max_output_tokens": 321}})
    try:
        assert resolve_limits(name, ModelConfig()) == ModelLimits(4321, 321)
        # Without litellm in the process, it is not imported to ask.
        monkeypatch.delitem(sys.modules, "litellm")
        with pytest.raises(UnknownModelError):
            resolve_limits(name, ModelConfig())
        assert "litellm" not in sys.modules
    finally:
        litellm.model_cost.pop(name, None)


def test_the_map_is_read_once_per_process() -> None:
    assert load_model_map() is load_model_map()
    assert len(load_model_map()) > 1_000


def test_without_the_map_file_every_model_needs_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_map, "_loaded", None)
    monkeypatch.setattr(model_map, "model_map_path", lambda: None)
    monkeypatch.delitem(sys.modules, "litellm")
    with pytest.raises(UnknownModelError, match=r"no model_prices_and_context_window_backup\.json"):
        resolve_limits("gpt-4o", ModelConfig())
    limits = ModelConfig(context_limit=9_000, max_output_tokens=900)
    assert resolve_limits("gpt-4o", limits) == ModelLimits(9_000, 900)


# -- the lookup rules, on a map of our own ------------------------------------------------------

SMALL_MAP: dict[str, Any] = {
    "sample_spec": {"litellm_provider": "one of many", "max_input_tokens": "how many"},
    "base-model": {
        "litellm_provider": "acme",
        "mode": "chat",
        "max_input_tokens": 1_000,
        "max_output_tokens": 100,
        "aliases": ["base-latest", "other-model"],
    },
    "other-model": {
        "litellm_provider": "acme",
        "max_input_tokens": 5_000,
        "max_output_tokens": 500,
    },
    "pointer-latest": {"alias_of": "other-model"},
    "dangling-latest": {"alias_of": "nothing-at-all"},
    "acme/prefixed": {
        "litellm_provider": "acme",
        "max_input_tokens": 2_000,
        "max_output_tokens": 2,
    },
    "zeta-model": {"litellm_provider": "zeta", "max_input_tokens": 3_000, "max_output_tokens": 300},
    "acme-partial": {"litellm_provider": "acme", "mode": "chat", "max_input_tokens": 4_000},
    "fallback_generalizations": {
        "rules": [
            {"pattern": "^acme-", "model_info": {"litellm_provider": "acme"}},
            {"pattern": "^widget-\\d+$", "model_info": {"max_input_tokens": 9_000, "mode": "chat"}},
            {"pattern": "^widget-\\d+$", "model_info": {"max_output_tokens": 900}},
            {"pattern": "^widget-2$", "model_info": {"max_output_tokens": 950}},
            {
                "pattern": "^acme-partial$",
                "model_info": {"max_input_tokens": 1, "max_output_tokens": 444},
                "fill_missing_for_providers": ["acme"],
            },
            {"pattern": "[", "model_info": {"max_input_tokens": 1}},
        ]
    },
}

SMALL_MAP_ANSWERS: dict[str, tuple[int | None, int | None] | None] = {
    "base-model": (1_000, 100),
    "BASE-Model": (1_000, 100),
    "base-model-2024-01-31": (1_000, 100),
    "acme/base-model": (1_000, 100),
    # Another provider's request does not take acme's entry, nor the rules.
    "zeta/base-model": None,
    "base-latest": (1_000, 100),
    # An alias that names an entry is dropped; a row pointing at nothing too.
    "other-model": (5_000, 500),
    "pointer-latest": (5_000, 500),
    "dangling-latest": None,
    "acme/prefixed": (2_000, 2),
    "sample_spec": None,
    # The rules: all that match are merged, later ones winning.
    "widget-1": (9_000, 900),
    "widget-2": (9_000, 950),
    "acme/widget-3": (9_000, 900),
    "widget-x": None,
    # A flagged rule fills only what the entry of a listed provider lacks.
    "acme-partial": (4_000, 444),
}


def small_map() -> ModelMap:
    return read_model_map(io.StringIO(json.dumps(SMALL_MAP, indent=4)))


@pytest.mark.parametrize("name", SMALL_MAP_ANSWERS)
def test_lookup_rules(name: str) -> None:
    entry = small_map().lookup(name)
    answer = None if entry is None else (entry.max_input_tokens, entry.max_output_tokens)
    assert answer == SMALL_MAP_ANSWERS[name]


def test_a_rule_answers_for_the_provider_asked() -> None:
    assert small_map().lookup("acme/widget-3") == MapEntry("acme", "chat", 9_000, 900)


def test_values_cut_by_the_read_buffer_are_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({**SMALL_MAP, "flags": {"max_input_tokens": 123456, "ok": True}})
    whole = read_model_map(io.StringIO(text))
    # Five characters at a time cuts keys, numbers and literals mid-way.
    monkeypatch.setattr(model_map._ObjectReader, "_CHUNK", 5)
    cut = read_model_map(io.StringIO(text))
    for name in [*SMALL_MAP_ANSWERS, "flags"]:
        assert cut.lookup(name) == whole.lookup(name), name
    assert cut.lookup("flags") == MapEntry(max_input_tokens=123456)


@pytest.mark.parametrize(
    "text", ['{"a": {"max_input_tokens": 1}', '{"a" {}}', "[]", '{"a": 1 "b": 2}']
)
def test_a_broken_map_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        read_model_map(io.StringIO(text))


# -- opening a session: no litellm, nothing slow on the event loop -----------------------------


def test_a_session_opens_in_a_fresh_process_without_importing_litellm(tmp_path: Path) -> None:
    code = """
        import sys

        import anyio

        from lossless import Session

        async def main():
            async with await Session.create(model="openai/gpt-4o", db="s.db") as session:
                await session.record("user", "hello")
            async with await Session.load(session.id, db="s.db") as loaded:
                return loaded.budget.context_limit, loaded.budget.max_output_tokens

        limits = anyio.run(main)
        assert "litellm" not in sys.modules, sorted(m for m in sys.modules if "litellm" in m)
        print(*limits)
    """
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert ModelLimits(*map(int, done.stdout.split())) == litellm_limits("openai/gpt-4o")


@pytest.mark.anyio
async def test_the_map_is_read_in_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The token counter is made on the loop: its encoder's tables are compiled in and
    # read in place (decision 172), so making one costs microseconds.
    threads: list[threading.Thread] = []
    read_map = model_map.load_model_map

    def spy_map() -> ModelMap:
        threads.append(threading.current_thread())
        return read_map()

    monkeypatch.setattr(models, "load_model_map", spy_map)
    async with await Session.create(model="openai/gpt-4o", db=tmp_path / "s.db") as session:
        session_id = session.id
    async with await Session.load(session_id, db=tmp_path / "s.db"):
        pass
    assert len(threads) == 2, threads
    assert threading.main_thread() not in threads


def test_the_first_model_call_imports_litellm_once_in_a_worker_thread(tmp_path: Path) -> None:
    code = """
        import sys
        import threading

        import anyio

        imported_in = []

        class Spy:
            def find_spec(self, name, path=None, target=None):
                if name == "litellm":
                    imported_in.append(threading.current_thread())
                return None

        sys.meta_path.insert(0, Spy())
        from lossless.llm import ensure_litellm, import_litellm

        async def main():
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(ensure_litellm)
            return await ensure_litellm()

        module = anyio.run(main)
        assert module is sys.modules["litellm"] is import_litellm()
        assert threading.main_thread() not in imported_in, imported_in
        print(len(imported_in))
    """
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
