"""The provider conformance checker: openai's types, litellm's transformations, our rules.

Each bad request is also run through litellm's transformation for every provider and the
result printed (``pytest -s`` shows it), so a failure shows what litellm did with it.
"""

from __future__ import annotations

import copy
import json
import logging
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from lossless.testing.conformance import (
    PROVIDERS,
    ConformanceError,
    check_request,
    violations,
)
from lossless.testing.conformance._litellm import transform

Message = dict[str, Any]


def user(text: str = "hello") -> Message:
    return {"role": "user", "content": text}


def assistant(text: str | None = "ok", *calls: Message) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def call(call_id: str, arguments: str | None = None, name: str = "read") -> Message:
    args = json.dumps({"path": f"src/{call_id}.py"}) if arguments is None else arguments
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def result(call_id: str, text: str = "file contents") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


SYSTEM: Message = {"role": "system", "content": "You are a careful coding agent."}


def rules(found: Sequence[str]) -> set[str]:
    """``"provider/rule"`` of each violation."""
    return {line.split(" at ", 1)[0] for line in found}


def by_provider(found: Sequence[str]) -> dict[str, set[str]]:
    flagged: dict[str, set[str]] = {}
    for name in rules(found):
        provider, rule = name.split("/", 1)
        flagged.setdefault(provider, set()).add(rule)
    return flagged


def show(messages: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Print what each litellm transformation makes of ``messages``; the flagged rules."""
    for provider in PROVIDERS[1:]:
        try:
            payload: object = transform(provider, messages)
        except Exception as err:
            payload = f"raised {type(err).__name__}: {str(err)[:200]}"
        print(f"{provider}: {payload}")
    found = violations(messages)
    print("\n".join(found))
    return by_provider(found)


# -- requests every provider accepts ------------------------------------------------------

VALID = {
    "plain chat": [user(), assistant("hi, what shall we do?"), user("fix the bug")],
    "parallel tool calls": [
        user("read both files"),
        assistant(None, call("call_1"), call("call_2")),
        result("call_1"),
        result("call_2", "other contents"),
        assistant("Both read."),
        user("thanks"),
    ],
    "system message": [SYSTEM, user("hi")],
    "tool call with content None": [
        SYSTEM,
        user("list the files"),
        assistant(None, call("call_1", "{}", name="ls")),
        result("call_1", "a.py b.py"),
    ],
    "tool call with text": [
        user("read it"),
        assistant("Reading it now.", call("call_1")),
        result("call_1"),
        user("and?"),
    ],
}


@pytest.mark.parametrize("messages", list(VALID.values()), ids=list(VALID))
def test_valid_requests_pass_every_provider(messages: list[Message]) -> None:
    assert violations(messages) == []
    check_request(messages)


def test_the_input_is_not_changed() -> None:
    messages = [*VALID["parallel tool calls"], assistant(""), result("nope")]
    before = copy.deepcopy(messages)
    inner = [id(m) for m in messages]

    violations(messages)

    assert messages == before
    assert [id(m) for m in messages] == inner


def test_read_only_mappings_and_tuples_are_accepted() -> None:
    from types import MappingProxyType

    messages = [
        MappingProxyType(user()),
        MappingProxyType({"role": "assistant", "content": None, "tool_calls": (call("c"),)}),
        MappingProxyType(result("c")),
    ]
    assert violations(messages) == []


# -- each bad request: the rule that names it, and the providers that refuse it ------------


def test_first_message_from_the_assistant() -> None:
    messages = [SYSTEM, assistant("I start"), user()]
    flagged = show(messages)

    assert "openai/first-user at message 1" in " ".join(violations(messages))
    # litellm passes the assistant turn through first; each provider's rule catches it.
    for provider in ("anthropic", "bedrock", "gemini"):
        assert "first-user" in flagged[provider]


def test_duplicate_tool_call_ids_across_two_assistant_messages() -> None:
    messages = [
        user(),
        assistant(None, call("call_1")),
        result("call_1"),
        assistant(None, call("call_1", '{"path": "b.py"}')),
        result("call_1"),
        assistant("done"),
    ]
    flagged = show(messages)

    found = violations(messages, providers={"openai"})
    assert found == [
        "openai/unique-tool-call-id at message 3: tool call id 'call_1' already used in message 1"
    ]
    assert "unique-tool-id" in flagged["anthropic"]
    assert "unique-tool-id" in flagged["bedrock"]
    # Gemini 2.x sends no call ids, so it has nothing to object to.
    assert "gemini" not in flagged


def test_a_tool_call_without_its_result() -> None:
    messages = [
        user(),
        assistant(None, call("call_1"), call("call_2")),
        result("call_1"),
        assistant("done"),
    ]
    flagged = show(messages)

    assert "openai/missing-tool-result at message 1" in " ".join(violations(messages))
    for provider in ("anthropic", "bedrock", "gemini"):
        assert "unanswered-tool-call" in flagged[provider]


def test_a_tool_result_with_an_unknown_id() -> None:
    messages = [
        user(),
        assistant(None, call("call_1")),
        result("call_1"),
        result("call_9"),
        assistant("done"),
    ]
    flagged = show(messages)

    assert "openai/unknown-tool-result at message 3" in " ".join(violations(messages))
    assert "orphan-tool-result" in flagged["anthropic"]
    assert "orphan-tool-result" in flagged["bedrock"]
    # litellm's Gemini conversion refuses a result it cannot match to a call.
    assert "litellm-rejected" in flagged["gemini"]


def test_a_tool_result_after_an_intervening_user_message() -> None:
    messages = [
        user(),
        assistant(None, call("call_1")),
        user("wait, one more thing"),
        result("call_1"),
        assistant("done"),
    ]
    flagged = show(messages)

    found = " ".join(violations(messages))
    assert "openai/missing-tool-result at message 1" in found
    assert "openai/misplaced-tool-result at message 3" in found
    # litellm merges the text and the result into one user turn, text first.
    assert "tool-results-first" in flagged["anthropic"]
    assert {"unanswered-tool-call", "orphan-tool-result"} <= flagged["gemini"]


def test_empty_assistant_content() -> None:
    messages = [user(), assistant(""), user("still there?")]
    flagged = show(messages)

    assert "openai/empty-content at message 1" in " ".join(violations(messages))
    # litellm swaps the empty text for a placeholder on Anthropic and drops the message on
    # Bedrock; only Gemini receives the empty part.
    assert "empty-text" in flagged["gemini"]


@pytest.mark.parametrize("content", ["   \n", [{"type": "text", "text": ""}], []])
def test_blank_user_content(content: object) -> None:
    messages = [user(), assistant(), {"role": "user", "content": content}]
    assert "openai/empty-content" in rules(violations(messages, providers={"openai"}))


def test_truncated_json_arguments() -> None:
    messages = [
        user(),
        assistant(None, call("call_1", '{"path": "src/ma')),
        result("call_1"),
        assistant("done"),
    ]
    flagged = show(messages)

    found = " ".join(violations(messages))
    assert "openai/arguments-json at message 1" in found
    # litellm's Anthropic and Gemini conversions parse the arguments and fail.
    assert "litellm-rejected" in flagged["anthropic"]
    assert "litellm-rejected" in flagged["gemini"]


def test_arguments_that_are_json_but_not_an_object() -> None:
    messages = [user(), assistant(None, call("call_1", "[1,2]")), result("call_1")]
    flagged = show(messages)

    assert "openai/arguments-object at message 1" in " ".join(violations(messages))
    assert "tool-input" in flagged["anthropic"]
    assert "tool-input" in flagged["gemini"]


def test_an_unknown_role() -> None:
    messages = [user(), {"role": "robot", "content": "beep"}, assistant()]
    flagged = show(messages)

    found = " ".join(violations(messages))
    assert "openai/role at message 1" in found
    assert "openai/schema at message 1" in found
    for provider in ("anthropic", "bedrock", "gemini"):
        assert "litellm-rejected" in flagged[provider]


# -- the remaining rules --------------------------------------------------------------------


def test_a_system_message_mid_way_is_accepted_by_every_provider() -> None:
    # OpenAI takes it anywhere; litellm turns it into what the others take.
    assert violations([SYSTEM, user(), assistant(), SYSTEM, user()]) == []


def test_only_system_messages() -> None:
    assert "openai/first-user at request" in " ".join(violations([SYSTEM]))


def test_openai_types_check_the_tool_calls_too() -> None:
    # openai declares tool_calls as an Iterable, which pydantic checks only when iterated.
    broken = {"id": "call_1", "type": "function", "function": {"name": "read"}}
    messages = [user(), assistant(None, broken), {"role": "tool", "content": "x"}]

    found = violations(messages, providers={"openai"})

    assert "openai/schema at message 1: tool_calls.0.function.arguments: Field required" in found
    assert "openai/schema at message 2: tool_call_id: Field required" in found


def test_a_message_that_is_not_an_object() -> None:
    found = violations([user(), "hello"], providers={"openai"})  # type: ignore[list-item]
    assert "openai/schema at message 1: not a JSON object" in found


def test_duplicate_result_for_one_call() -> None:
    messages = [user(), assistant(None, call("call_1")), result("call_1"), result("call_1")]
    found = violations(messages)
    assert "openai/duplicate-tool-result at message 3: second result for 'call_1'" in found
    assert "anthropic/duplicate-tool-result" in rules(found)


# -- the API ---------------------------------------------------------------------------------


def test_check_request_raises_an_assertion_error_listing_every_violation() -> None:
    messages = [assistant("")]
    with pytest.raises(ConformanceError) as caught:
        check_request(messages, providers=("openai",))

    error = caught.value
    assert isinstance(error, AssertionError)
    assert error.violations == violations(messages, providers=("openai",))
    assert len(error.violations) == 2
    text = str(error)
    assert text.startswith("request breaks 2 provider rules:")
    assert all(line in text for line in error.violations)


def test_providers_choose_the_checks() -> None:
    messages = [assistant("I start"), user()]
    assert rules(violations(messages, providers=["bedrock"])) == {"bedrock/first-user"}
    assert violations(messages, providers=()) == []


def test_unknown_providers_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown providers"):
        violations([user()], providers={"openai", "mistral"})
    with pytest.raises(TypeError):
        violations([user()], providers="openai")


# -- no network, no log noise --------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the conformance check opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield


@pytest.mark.usefixtures("no_network")
def test_checks_never_touch_the_network() -> None:
    for messages in VALID.values():
        assert violations(messages) == []


def test_litellm_warnings_during_a_check_are_silenced(caplog: pytest.LogCaptureFixture) -> None:
    # Bedrock's conversion warns when it merges a tool result and a user message.
    messages = [user(), assistant(None, call("call_1")), result("call_1"), user("next")]
    with caplog.at_level(logging.WARNING):
        assert violations(messages) == []
        assert [r for r in caplog.records if r.name == "LiteLLM"] == []

        logging.getLogger("LiteLLM").warning("outside a check")

    assert [r.getMessage() for r in caplog.records if r.name == "LiteLLM"] == ["outside a check"]
