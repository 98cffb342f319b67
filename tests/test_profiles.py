"""Rendering profiles for stricter targets: roles that alternate, Mistral's call ids,
Llama 3's one call per message. Every profile's requests stay valid for every
provider too."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Session, ToolPart
from lossless.config import Config, ModelConfig
from lossless.errors import InvalidInputError
from lossless.profiles import profile_for
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio


def alternates(messages: list[dict[str, Any]]) -> bool:
    """Mistral's rule: skipping tool results and assistant messages with calls, the
    turns after the system prompt go user, assistant, user, ..."""
    plain = [
        m["role"]
        for m in messages
        if m["role"] not in ("system", "tool") and not m.get("tool_calls")
    ]
    return all(role == ("user", "assistant")[i % 2] for i, role in enumerate(plain))


def one_role_after_another(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages]
    return all(a != b or a == "tool" for a, b in pairwise(roles))


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("gpt-4o", "default"),
        ("anthropic/claude-sonnet-4-5", "default"),
        ("mistral/mistral-large-latest", "default"),
        ("openai/mistral-7b-instruct-v0.3", "mistral"),
        ("hosted_vllm/mistralai/Mixtral-8x7B-Instruct", "mistral"),
        ("openai/Meta-Llama-3.1-8B-Instruct", "llama3"),
        ("ollama/llama3.2", "llama3"),
        ("openai/gemma-2-9b-it", "strict"),
        ("openai/SmolLM2-135M-Instruct", "default"),
    ],
)
def test_auto_chooses_by_family_on_servers_that_run_the_models_template(
    model: str, profile: str
) -> None:
    assert profile_for(model) == profile
    assert profile_for(model, "strict") == "strict"


LOCAL = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("model", "api_base", "profile"),
    [
        # A server's own name says nothing of the template it runs: alternate.
        ("openai/local", LOCAL, "strict"),
        ("openai/SmolLM2-135M-Instruct", LOCAL, "strict"),
        ("hosted_vllm/my-finetune", None, "strict"),
        ("ollama/phi3", None, "strict"),
        ("lm_studio/qwen2.5-7b-instruct", None, "strict"),
        ("llamafile/local", None, "strict"),
        ("openai/gpt-oss-20b", LOCAL, "strict"),
        # A known family keeps its own profile behind any endpoint.
        ("openai/mistral-nemo-instruct-2407", LOCAL, "mistral"),
        ("openai/llama-3.3-70b-instruct", LOCAL, "llama3"),
        # Hosted providers pay nothing: no endpoint, or a hosted family behind a proxy.
        ("openai/gpt-4o", None, "default"),
        ("gpt-4o", None, "default"),
        ("gpt-4o", LOCAL, "default"),
        ("openai/gpt-4o", LOCAL, "default"),
        ("openai/o3-mini", LOCAL, "default"),
        ("openai/local", None, "default"),
        ("anthropic/claude-sonnet-4-5", LOCAL, "default"),
    ],
)
def test_auto_alternates_for_an_unknown_family_behind_an_openai_compatible_server(
    model: str, api_base: str | None, profile: str
) -> None:
    assert profile_for(model, api_base=api_base) == profile
    assert profile_for(model, "default", api_base=api_base) == "default"


async def test_a_session_behind_a_local_server_chooses_strict(
    config_for: Callable[..., Config], tmp_path: Path
) -> None:
    config = config_for(
        model=ModelConfig(context_limit=8_000, max_output_tokens=500, profile="auto")
    )
    async with Session.open(model="openai/local", db=tmp_path / "a.db", config=config) as session:
        assert session.profile == "strict"


async def agent_turns(session: Session) -> None:
    await session.record("assistant", "Hello, what shall we do?")
    await session.record("user", "Fix the payout client.")
    await session.record("user", "And never touch legacy_billing/.")
    await session.record("assistant", "Reading it.")
    await session.record(
        "assistant",
        [
            ToolPart("read", "call_0", {"p": "a.py"}, output="A"),
            ToolPart("read", "call_1", {"p": "b.py"}, output="B"),
        ],
    )
    await session.record("user", "Also check the tests.")
    await session.record("system", "The sandbox restarts at midnight.")
    await session.record("assistant", [ToolPart("run", "call_0", {"cmd": "pytest"}, output="ok")])


def with_profile(config_for: Callable[..., Config], profile: str) -> Config:
    model = ModelConfig(
        context_limit=32_000, max_output_tokens=1_000, token_correction=1.0, profile=profile
    )
    return config_for(model=model)


@pytest.mark.parametrize("profile", ["strict", "mistral", "llama3"])
async def test_strict_profiles_alternate_and_stay_valid_for_every_provider(
    config_for: Callable[..., Config], db: Path, profile: str
) -> None:
    config = with_profile(config_for, profile)
    async with await Session.create(
        model=TEST_MODEL, db=db, config=config, system_prompt="Be careful."
    ) as session:
        await agent_turns(session)
        messages = session.build_context().messages
        assert alternates(messages), [m["role"] for m in messages]
        assert one_role_after_another(messages)
        assert [m["role"] for m in messages].count("system") == 1
        check_request(messages)
        calls = [c for m in messages for c in m.get("tool_calls", [])]
        results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        assert [c["id"] for c in calls] == results and len(set(results)) == 3
        if profile == "mistral":
            assert all(re.fullmatch(r"[A-Za-z0-9]{9}", c["id"]) for c in calls)
        if profile == "llama3":
            assert all(len(m.get("tool_calls", [])) <= 1 for m in messages)
        # What was said is all there, merged where roles repeated.
        text = "\n".join(m.get("content") or "" for m in messages)
        for said in ("Fix the payout client.", "legacy_billing/", "sandbox restarts"):
            assert said in text


async def test_the_default_profile_keeps_every_message_as_recorded(
    config_for: Callable[..., Config], db: Path
) -> None:
    async with await Session.create(
        model=TEST_MODEL, db=db, config=with_profile(config_for, "default")
    ) as session:
        await agent_turns(session)
        messages = session.build_context().messages
        check_request(messages)
        roles = [m["role"] for m in messages]
        assert roles[:4] == ["user", "assistant", "user", "user"]


def test_an_unknown_profile_is_a_typed_error(tmp_path: Path) -> None:
    from lossless import Store

    store = Store(tmp_path / "x.db")
    session_id = store.create_session("gpt-4o")
    with pytest.raises(InvalidInputError, match="profile"):
        store.assemble(session_id, 1_000, "chatml")
