"""What every route shares: the store, read in a worker thread, and errors as JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import Response

from lossless.errors import InvalidInputError, LosslessError, NotFoundError, StoreBusyError
from lossless.store import Store

__all__ = ["ApiError", "int_param", "json_response", "read", "store_of"]

_T = TypeVar("_T")


class ApiError(Exception):
    """An answer other than 200, with the message the page shows."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def store_of(request: Request) -> Store:
    """The database the app serves."""
    store: Store = request.app.state.store
    return store


async def read(request: Request, work: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``work(store, *args, **kwargs)`` in a worker thread: native reads release the
    interpreter, and the server goes on answering meanwhile. A store's errors
    become answers: an unknown id 404, a bad argument 400, a busy database 503."""
    try:
        return await anyio.to_thread.run_sync(partial(work, store_of(request), *args, **kwargs))
    except NotFoundError as err:
        raise ApiError(404, _said(err)) from err
    except InvalidInputError as err:
        raise ApiError(400, _said(err)) from err
    except StoreBusyError as err:
        raise ApiError(503, _said(err)) from err
    except LosslessError as err:
        raise ApiError(500, f"{type(err).__name__}: {_said(err)}") from err


def _said(err: Exception) -> str:
    # KeyError (which NotFoundError is) quotes its message; the message alone reads better.
    return str(err.args[0]) if err.args else str(err)


def int_param(request: Request, name: str, *, default: int | None = None) -> int | None:
    """The query parameter ``name`` as an integer; 400 when it is not one."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"{name}: expected an integer, got {raw!r}") from None


def json_response(data: Any, status: int = 200) -> Response:
    """``data`` as compact JSON, never cached: the database changes while it is read."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return Response(
        body,
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store"},
    )
