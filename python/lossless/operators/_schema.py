"""Output schemas: a pydantic model or a JSON Schema that a map's replies must meet."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from lossless.errors import InvalidInputError

__all__ = ["InvalidOutput", "OutputSchema"]

# A reply wrapped in a Markdown code fence (```json ... ```), as models often write.
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


class InvalidOutput(Exception):
    """A reply that is not JSON, or not JSON the schema accepts; the message says why."""


class OutputSchema:
    """Parses and checks replies against a pydantic model or a JSON Schema dict."""

    def __init__(self, schema: object) -> None:
        self.model: type[BaseModel] | None = None
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model = schema
            self.json_schema: dict[str, Any] = schema.model_json_schema()
        elif isinstance(schema, dict):
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as err:
                raise InvalidInputError(
                    f"output_schema: not a valid JSON Schema: {err.message}"
                ) from None
            self.json_schema = schema
        else:
            raise InvalidInputError(
                "output_schema: expected a pydantic model class or a JSON Schema dict, "
                f"got {type(schema).__name__}"
            )
        self._validator = jsonschema.validators.validator_for(self.json_schema)(self.json_schema)

    def instructions(self) -> str:
        """What the prompt tells the model of the expected reply."""
        schema = json.dumps(self.json_schema, separators=(",", ":"))
        return f"Reply with only a JSON value that matches this JSON Schema:\n{schema}"

    def parse(self, reply: str) -> Any:
        """The reply's value: a model instance, or the JSON value. Raises
        :class:`InvalidOutput` naming what is wrong."""
        fenced = _FENCE.match(reply)
        text = fenced.group(1) if fenced else reply.strip()
        if self.model is not None:
            try:
                return self.model.model_validate_json(text)
            except ValidationError as err:
                raise InvalidOutput(_pydantic_problem(err)) from None
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            raise InvalidOutput(f"not valid JSON: {err}") from None
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the value"
            raise InvalidOutput(f"{where}: {error.message}")
        return value

    def dump(self, value: Any) -> Any:
        """``value`` as JSON data, for the store."""
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value

    def load(self, data: Any) -> Any:
        """A stored value back as :meth:`parse` returned it."""
        return self.model.model_validate(data) if self.model is not None else data


def _pydantic_problem(err: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in e['loc']) or 'the value'}: {e['msg']}"
        for e in err.errors()[:5]
    ]
    return "; ".join(problems)
