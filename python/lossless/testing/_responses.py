"""OpenAI's Responses API (``POST /v1/responses``) for the local server."""

from __future__ import annotations

import threading
from typing import Any

from ._formats import Refusal, Stream, WireFormat
from ._reply import content_text
from ._responses_render import reasoning_id, response_object, response_stream
from ._signing import Signer
from ._wire import JSON, Completion, error_body

__all__ = ["ResponsesFormat"]

_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning", "item_reference")


def _error(message: str, param: str | None = None, code: str | None = None) -> Refusal:
    body = error_body(400, message)
    body["error"].update(param=param, code=code)
    return Refusal(400, body)


def _items(body: JSON) -> list[JSON]:
    """The request's input as items; a string input is one user message."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list):
        return []
    return [item if isinstance(item, dict) else {} for item in raw]


def _kind(item: JSON) -> object:
    """An item's type; a bare ``{"role", "content"}`` item is a message."""
    return item.get("type", "message" if "role" in item else None)


class ResponsesFormat(WireFormat):
    """OpenAI Responses: ``POST /v1/responses``.

    Refused with HTTP 400 and OpenAI's ``invalid_request_error``, as OpenAI refuses
    them: a missing ``model``; an ``input`` that is neither a string nor a list; an
    item of an unknown type; a ``function_call_output`` whose ``call_id`` no earlier
    ``function_call`` has, or a ``function_call`` with no output after it; a
    ``reasoning`` item whose ``encrypted_content`` this server did not issue as is
    (code ``invalid_encrypted_content``), or one without it that this server did not
    issue, or any without it when ``store`` is false (nothing is stored then); an
    ``item_reference`` or a ``previous_response_id`` (this server keeps no responses).
    """

    name = "responses"
    paths = ("/v1/responses", "/responses")
    response_prefix = "resp_"
    tool_prefix = "call_"
    malformed_body = b'{"id":"resp_malformed","object":"response","output":[{'

    def __init__(self, signer: Signer) -> None:
        """Check encrypted reasoning with ``signer``, the server's."""
        self._signer = signer
        self._lock = threading.Lock()
        self._issued: set[str] = set()

    def conversation(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as a Chat Completions body: instructions as the system message,
        calls on assistant messages, outputs as tool messages, reasoning left out."""
        messages: list[JSON] = []
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            messages.append({"role": "system", "content": instructions})
        for item in _items(body):
            _add_to_view(messages, item)
        view: JSON = {key: body[key] for key in ("model", "stream") if key in body}
        view["messages"] = messages
        return view

    def check(self, body: dict[str, Any]) -> Refusal | None:
        """OpenAI's ``invalid_request_error`` for what the provider refuses."""
        if "model" not in body:
            return _error(
                "Missing required parameter: 'model'.", "model", "missing_required_parameter"
            )
        previous = body.get("previous_response_id")
        if previous is not None:
            message = f"Previous response with id '{previous}' not found."
            return _error(message, "previous_response_id", "previous_response_not_found")
        raw = body.get("input")
        if raw is not None and not isinstance(raw, str | list):
            message = "Invalid type for 'input': expected one of a string or array of input items."
            return _error(message, "input", "invalid_type")
        return self._check_items(body)

    def _check_items(self, body: JSON) -> Refusal | None:
        items = _items(body)
        calls: set[object] = set()
        for index, item in enumerate(items):
            kind = _kind(item)
            if kind not in _ITEM_TYPES:
                supported = ", ".join(f"'{name}'" for name in _ITEM_TYPES)
                message = f"Invalid value: '{kind}'. Supported values are: {supported}."
                return _error(message, f"input[{index}].type", "invalid_value")
            if kind == "function_call":
                calls.add(item.get("call_id"))
            problem = self._check_item(kind, item, calls, body)
            if problem is not None:
                return problem
        outputs = {item.get("call_id") for item in items if _kind(item) == "function_call_output"}
        unanswered = sorted(str(call) for call in calls - outputs)
        if unanswered:
            return _error(f"No tool output found for function call {unanswered[0]}.", "input")
        return None

    def _check_item(
        self, kind: object, item: JSON, calls: set[object], body: JSON
    ) -> Refusal | None:
        if kind == "function_call_output" and item.get("call_id") not in calls:
            call_id = item.get("call_id")
            return _error(
                f"No tool call found for function call output with call_id {call_id}.", "input"
            )
        if kind == "item_reference":
            return _error(f"Item with id '{item.get('id')}' not found.", "input")
        if kind == "reasoning":
            return self._check_reasoning(item, body.get("store") is False)
        return None

    def _check_reasoning(self, item: JSON, unstored: bool) -> Refusal | None:
        item_id = item.get("id")
        if "encrypted_content" in item and item["encrypted_content"] is not None:
            if self._signer.unseal(item["encrypted_content"]) is None:
                message = f"The encrypted content for item {item_id} could not be verified."
                return _error(message, None, "invalid_encrypted_content")
            return None
        if unstored:
            return _error(
                f"Item with id '{item_id}' not found. Items are not persisted when `store` is"
                " set to false. Try again with `store` set to true, or remove this item from"
                " your input.",
                "input",
            )
        with self._lock:
            known = item_id in self._issued
        return None if known else _error(f"Item with id '{item_id}' not found.", "input")

    def planned(self, plan: Completion) -> None:
        """Remember the reasoning items issued, which a later request may name by id."""
        if plan.reply.reasoning:
            with self._lock:
                self._issued.add(reasoning_id(plan))

    def error(self, status: int, message: str) -> JSON:
        """An OpenAI-style error object."""
        return error_body(status, message)

    def render(self, plan: Completion, body: dict[str, Any]) -> JSON:
        """The ``response`` object."""
        return response_object(plan, body)

    def stream(self, plan: Completion, body: dict[str, Any]) -> Stream | None:
        """The Responses streaming events; None when ``body`` did not ask to stream."""
        if body.get("stream") is not True:
            return None
        return response_stream(plan, body)


def _add_to_view(messages: list[JSON], item: JSON) -> None:
    """Append one input item to a Chat Completions message list."""
    kind = _kind(item)
    if kind == "message":
        role = item.get("role")
        messages.append(
            {"role": "system" if role == "developer" else role, "content": item.get("content")}
        )
    elif kind == "function_call":
        call = {
            "id": item.get("call_id"),
            "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments", "")},
        }
        last = messages[-1] if messages else None
        # Calls made together belong to one assistant message, as in Chat Completions.
        if last is not None and last.get("role") == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else content_text(output)
        messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
