"""OpenAI Responses payloads built from a planned reply: the Response object and the
events that stream it."""

from __future__ import annotations

from typing import Any

from ._formats import Event, Stream
from ._wire import JSON, Completion, split_arguments, split_text

__all__ = ["ENCRYPTED_CONTENT", "reasoning_id", "response_object", "response_stream"]

#: The ``include`` value that asks for reasoning items' ``encrypted_content``.
ENCRYPTED_CONTENT = "reasoning.encrypted_content"


def _number(plan: Completion) -> str:
    """The response's serial number, which its items' ids share."""
    return plan.completion_id.rpartition("_")[2]


def reasoning_id(plan: Completion) -> str:
    """The id of the reasoning item a response carries."""
    return f"rs_{_number(plan)}"


def _reasoning_item(plan: Completion, request: JSON) -> JSON:
    reply = plan.reply
    summary = (
        [] if reply.reasoning_redacted else [{"type": "summary_text", "text": reply.reasoning}]
    )
    item: JSON = {"id": reasoning_id(plan), "type": "reasoning", "summary": summary}
    include = request.get("include")
    if isinstance(include, list) and ENCRYPTED_CONTENT in include:
        item["encrypted_content"] = plan.sealed_reasoning
    return item


def _message_item(plan: Completion) -> JSON:
    text = {"type": "output_text", "text": plan.reply.text, "annotations": [], "logprobs": []}
    return {
        "id": f"msg_{_number(plan)}",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [text],
    }


def _output(plan: Completion, request: JSON) -> list[JSON]:
    """Reasoning, then the message (unless the reply only calls tools), then calls."""
    items = [_reasoning_item(plan, request)] if plan.reply.reasoning else []
    if plan.reply.text or not plan.tool_calls:
        items.append(_message_item(plan))
    items.extend(
        {
            "id": f"fc_{_number(plan)}_{index}",
            "type": "function_call",
            "status": "completed",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for index, call in enumerate(plan.tool_calls)
    )
    return items


def _usage(plan: Completion) -> JSON:
    # Unlike Anthropic's, OpenAI's input count includes the cached tokens.
    reasoning = plan.reasoning_tokens if plan.reply.reasoning else 0
    return {
        "input_tokens": plan.prompt_tokens,
        "input_tokens_details": {"cached_tokens": plan.cached_tokens or 0},
        "output_tokens": plan.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": plan.prompt_tokens + plan.completion_tokens,
    }


def _incomplete(plan: Completion) -> bool:
    return plan.reply.effective_finish_reason == "length"


def response_object(plan: Completion, request: JSON, *, done: bool = True) -> JSON:
    """The Response object; ``done=False`` gives it as it is when streaming begins."""
    status = "incomplete" if _incomplete(plan) else "completed"
    reasoning = request.get("reasoning")
    return {
        "id": plan.completion_id,
        "object": "response",
        "created_at": plan.created,
        "status": status if done else "in_progress",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"}
        if done and _incomplete(plan)
        else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": plan.model,
        "output": _output(plan, request) if done else [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": reasoning
        if isinstance(reasoning, dict)
        else {"effort": None, "summary": None},
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _usage(plan) if done else None,
        "user": None,
        "metadata": {},
    }


def _item_events(index: int, item: JSON) -> list[JSON]:
    """The events that stream one output item, from ``added`` to ``done``."""
    kind, item_id = item["type"], item["id"]
    where: JSON = {"item_id": item_id, "output_index": index}
    events: list[JSON] = []
    if kind == "reasoning":
        for number, part in enumerate(item["summary"]):
            events += _summary_events(where, number, part["text"])
        opened: JSON = {**item, "summary": []}
    elif kind == "message":
        events += _text_events(where, item["content"][0])
        opened = {**item, "status": "in_progress", "content": []}
    else:
        events += _argument_events(where, item)
        opened = {**item, "status": "in_progress", "arguments": ""}
    added = {"type": "response.output_item.added", "output_index": index, "item": opened}
    done = {"type": "response.output_item.done", "output_index": index, "item": item}
    return [added, *events, done]


def _summary_events(where: JSON, number: int, text: str) -> list[JSON]:
    at = {**where, "summary_index": number}
    part = {"type": "summary_text", "text": text}
    deltas = [
        {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
        for piece in split_text(text)
    ]
    return [
        {"type": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}},
        *deltas,
        {"type": "response.reasoning_summary_text.done", **at, "text": text},
        {"type": "response.reasoning_summary_part.done", **at, "part": part},
    ]


def _text_events(where: JSON, part: JSON) -> list[JSON]:
    at = {**where, "content_index": 0}
    deltas = [
        {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
        for piece in split_text(part["text"])
    ]
    return [
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        *deltas,
        {"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
    ]


def _argument_events(where: JSON, item: JSON) -> list[JSON]:
    deltas = [
        {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        for piece in split_arguments(item["arguments"])
    ]
    done = {
        "type": "response.function_call_arguments.done",
        **where,
        "name": item["name"],
        "arguments": item["arguments"],
    }
    return [*deltas, done]


def response_stream(plan: Completion, request: JSON) -> Stream:
    """``response.created`` and ``response.in_progress``, each output item's events,
    then ``response.completed`` (``response.incomplete`` when cut at the token cap)."""
    opening = response_object(plan, request, done=False)
    head = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    body: list[JSON] = []
    for index, item in enumerate(_output(plan, request)):
        body += _item_events(index, item)
    final = "response.incomplete" if _incomplete(plan) else "response.completed"
    tail = [{"type": final, "response": response_object(plan, request)}]
    numbered = _numbered([*head, *body, *tail])
    head_events, rest = numbered[: len(head)], numbered[len(head) :]
    return Stream(
        head_events,
        rest[: len(body)],
        rest[len(body) :],
        broken=Event(b"{not json", "response.output_text.delta"),
    )


def _numbered(payloads: list[JSON]) -> list[Event]:
    """Events named by their type, numbered in the order they are sent."""
    events: list[Event] = []
    for number, payload in enumerate(payloads):
        numbered: dict[str, Any] = {**payload, "sequence_number": number}
        events.append(Event.of(numbered, payload["type"]))
    return events
