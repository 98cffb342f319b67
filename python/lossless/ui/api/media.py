"""``/api/media/{id}``: an image or a document, byte for byte, from the store."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lossless.store import Store
from lossless.ui.api._common import ApiError, read

__all__ = ["routes"]

# Drawn in the page; anything else (a PDF) is offered as a download, never
# rendered in the viewer's origin.
_INLINE = {"image/png", "image/jpeg", "image/gif", "image/webp"}


def _bytes(store: Store, media_id: str) -> tuple[str, bytes] | None:
    return store.native.read_media(media_id)


async def media(request: Request) -> Response:
    media_id = request.path_params["media_id"]
    found = await read(request, _bytes, media_id)
    if found is None:
        raise ApiError(404, f"no image or document with id {media_id}")
    media_type, data = found
    headers = {
        # Named by the hash of its bytes: what an id names never changes.
        "cache-control": "private, max-age=31536000, immutable",
        "x-content-type-options": "nosniff",
    }
    if media_type not in _INLINE:
        headers["content-disposition"] = f'attachment; filename="{media_id}"'
    return Response(data, media_type=media_type, headers=headers)


routes = [Route("/api/media/{media_id}", media)]
