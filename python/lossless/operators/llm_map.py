"""LLMMap: one model call per item, durable and resumable."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import anyio

from lossless import _native
from lossless.config import Config
from lossless.errors import InvalidInputError
from lossless.events import EventBus
from lossless.files import native_store
from lossless.llm import (
    _call_kwargs,
    _is_retryable,
    ensure_litellm,
    settle_heap_after_first_call,
)
from lossless.operators._run import (
    MapResult,
    MapStream,
    Outcome,
    Unencodable,
    encode_item,
    pending_items,
    stored_results,
)
from lossless.operators._schema import InvalidOutput, OutputSchema
from lossless.operators._template import compile_template, render

__all__ = ["LLMMap"]

_RETRY_NOTE = (
    "Your reply could not be used: {problem}\n"
    "Reply again with only the JSON value, nothing before or after it."
)


class LLMMap:
    """Runs one prompt per item through a model, many at once, keeping every outcome.

    ``template`` is Jinja2 and must use ``item``. With ``output_schema`` (a pydantic
    model or a JSON Schema dict) each reply is parsed as JSON (a fenced block is
    unwrapped) and validated; an invalid reply is asked again once, with the
    problem. Each call is limited to ``timeout_s`` and retried up to
    ``max_retries`` times on timeouts, dropped connections, rate limits and server
    errors. Outcomes are stored in ``db`` under a map id as items complete:
    :meth:`resume` runs only what is left of a run that stopped.

    ``config`` gives the endpoint (``llm.api_base``, ``llm.api_key``); events go to
    ``events`` (default: a bus of the map's own, :attr:`events`).
    """

    def __init__(
        self,
        *,
        model: str,
        template: str,
        output_schema: object = None,
        system_prompt: str | None = None,
        concurrency: int | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        db: str | os.PathLike[str] | object = "lossless.db",
        config: Config | None = None,
        events: EventBus | None = None,
        progress: bool = False,
        parent_id: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model: expected a model name")
        self.model = model
        self.template_source = template
        self._template = compile_template(template)
        self.schema = None if output_schema is None else OutputSchema(output_schema)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidInputError("system_prompt: expected str or None")
        self.system_prompt = system_prompt
        self.config = config or Config()
        self.concurrency = _positive(
            "concurrency", concurrency or self.config.operators.llm_map_concurrency
        )
        if not timeout_s > 0:
            raise InvalidInputError("timeout_s: must be more than 0")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidInputError("max_retries: expected an integer of at least 0")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._db = db
        self.events = events or EventBus()
        self.progress = progress
        self.parent_id = parent_id

    # -- running -----------------------------------------------------------------

    def run(self, items: Iterable[Any]) -> MapStream:
        """Run every item; iterate the stream for results in completion order.

        The items are read and stored (with the run) when the stream starts; an item
        JSON cannot hold is recorded as failed (``bad_input``)."""
        if isinstance(items, str | bytes) or not isinstance(items, Iterable):
            raise InvalidInputError("items: expected an iterable of items")
        materialised = list(items)

        async def prepare() -> tuple[str, _native.Store, list[tuple[int, Any]], Any, Any]:
            store = await anyio.to_thread.run_sync(native_store, self._db)
            encoded = [encode_item(item) for item in materialised]
            map_id = await anyio.to_thread.run_sync(
                _native.create_map,
                store,
                "llm",
                self.parent_id,
                json.dumps(self._spec()),
                [text for text, _ in encoded],
            )
            pending = [(index, item) for index, (_, item) in enumerate(encoded)]
            return map_id, store, pending, self._item, self._dump

        return self._stream(prepare)

    async def run_all(self, items: Iterable[Any]) -> list[MapResult]:
        """:meth:`run` to the end; the results in input order."""
        return await self.run(items).collect()

    @classmethod
    def resume(
        cls,
        map_id: str,
        *,
        db: str | os.PathLike[str] | object = "lossless.db",
        config: Config | None = None,
        output_schema: object = None,
        retry_failed: bool = False,
        concurrency: int | None = None,
        events: EventBus | None = None,
        progress: bool = False,
    ) -> MapStream:
        """Run the items of stored run ``map_id`` that have no outcome yet (with
        ``retry_failed``, also those that failed), with its model, template and
        settings. An item that succeeded never runs again. ``output_schema`` may give
        the run's pydantic model back, to get instances rather than dicts."""
        holder: list[LLMMap] = []

        async def prepare() -> tuple[str, _native.Store, list[tuple[int, Any]], Any, Any]:
            store = await anyio.to_thread.run_sync(native_store, db)
            run = await anyio.to_thread.run_sync(_native.map_run, store, map_id)
            if run.kind != "llm":
                raise InvalidInputError(f"map_id: {map_id} is an {run.kind} map run")
            spec = json.loads(run.spec)
            operator = cls._from_spec(spec, db, config, output_schema, concurrency, events)
            holder.append(operator)
            pending = await anyio.to_thread.run_sync(
                lambda: pending_items(store, map_id, retry_failed=retry_failed)
            )
            return map_id, store, pending, operator._item, operator._dump

        stream = MapStream(
            prepare=prepare,
            concurrency=concurrency or (config or Config()).operators.llm_map_concurrency,
            events=events or EventBus(),
            parent_id=None,
            progress=progress,
        )
        return stream

    @staticmethod
    async def results(
        map_id: str,
        *,
        db: str | os.PathLike[str] | object = "lossless.db",
        output_schema: object = None,
    ) -> list[MapResult]:
        """The stored outcome of every item of run ``map_id`` that has one, in input
        order: its success, else its latest failure."""
        schema = None if output_schema is None else OutputSchema(output_schema)
        store = await anyio.to_thread.run_sync(native_store, db)
        load = schema.load if schema is not None else (lambda value: value)
        return await anyio.to_thread.run_sync(stored_results, store, map_id, load)

    # -- internals ---------------------------------------------------------------

    def _stream(self, prepare: Any) -> MapStream:
        return MapStream(
            prepare=prepare,
            concurrency=self.concurrency,
            events=self.events,
            parent_id=self.parent_id,
            progress=self.progress,
        )

    def _spec(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "template": self.template_source,
            "system_prompt": self.system_prompt,
            "output_schema": None if self.schema is None else self.schema.json_schema,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
        }

    @classmethod
    def _from_spec(
        cls,
        spec: dict[str, Any],
        db: object,
        config: Config | None,
        output_schema: object,
        concurrency: int | None,
        events: EventBus | None,
    ) -> LLMMap:
        stored_schema = spec["output_schema"]
        if output_schema is not None:
            given = OutputSchema(output_schema)
            if given.json_schema != stored_schema:
                raise InvalidInputError("output_schema: not the schema the run was started with")
        return cls(
            model=spec["model"],
            template=spec["template"],
            output_schema=output_schema if output_schema is not None else stored_schema,
            system_prompt=spec["system_prompt"],
            concurrency=concurrency or spec["concurrency"],
            timeout_s=spec["timeout_s"],
            max_retries=spec["max_retries"],
            db=db,
            config=config,
            events=events,
        )

    def _dump(self, value: Any) -> Any:
        return self.schema.dump(value) if self.schema is not None else value

    async def _item(self, index: int, item: Any) -> Outcome:
        """One item: its prompt, the model call (retried), the reply checked."""
        if isinstance(item, Unencodable):
            return Outcome.failed("bad_input", item.reason)
        try:
            prompt = render(self._template, item)
        except Exception as err:
            return Outcome.failed("template_error", f"{type(err).__name__}: {err}")
        if self.schema is not None:
            prompt = f"{prompt}\n\n{self.schema.instructions()}"
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        outcome = Outcome()
        for check in range(2):
            text = await self._call(messages, outcome)
            if text is None or self.schema is None:
                if text is not None:
                    outcome.output = text
                return outcome
            try:
                outcome.output = self.schema.parse(text)
                return outcome
            except InvalidOutput as problem:
                if check == 1:
                    return Outcome.failed(
                        "invalid_output",
                        f"the reply did not validate after a retry: {problem}",
                        attempts=outcome.attempts,
                        usage=outcome.usage,
                    )
                messages += [
                    {"role": "assistant", "content": text or "(empty)"},
                    {"role": "user", "content": _RETRY_NOTE.format(problem=problem)},
                ]
        raise AssertionError("unreachable")

    async def _call(self, messages: list[dict[str, Any]], outcome: Outcome) -> str | None:
        """The reply's text; ``None`` with ``outcome`` marked failed when every try
        failed or the reply was cut short."""
        litellm = await ensure_litellm()
        kwargs = _call_kwargs(self.config.llm)
        kwargs["timeout"] = self.timeout_s
        delay = self.config.llm.retry_backoff_s
        for attempt in range(self.max_retries + 1):
            outcome.attempts += 1
            try:
                with anyio.fail_after(self.timeout_s):
                    response = await litellm.acompletion(
                        model=self.model, messages=list(messages), **kwargs
                    )
            except Exception as err:
                kind = "timeout" if _timed_out(err) else "llm_error"
                if attempt < self.max_retries and (kind == "timeout" or _is_retryable(err)):
                    await anyio.sleep(delay)
                    delay *= 2
                    continue
                outcome.error_kind, outcome.error = kind, f"{type(err).__name__}: {err}"[:2_000]
                return None
            settle_heap_after_first_call()
            usage = getattr(response, "usage", None)
            outcome.add_usage(
                getattr(usage, "prompt_tokens", None),
                getattr(usage, "completion_tokens", None),
                _cost(response),
            )
            choice = response.choices[0]
            if choice.finish_reason == "length":
                outcome.error_kind = "length"
                outcome.error = "the reply was cut short at the output token limit"
                return None
            content = choice.message.content
            return content if isinstance(content, str) else ""
        raise AssertionError("unreachable")


def _timed_out(err: BaseException) -> bool:
    return isinstance(err, TimeoutError) or "Timeout" in type(err).__name__


def _cost(response: Any) -> float | None:
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    return float(cost) if isinstance(cost, int | float) else None


def _positive(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{field}: expected an integer of at least 1")
    return value
