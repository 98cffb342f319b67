"""Images and documents handed over: data URLs decoded, bytes checked against the
core's rule and the configured size limits before anything is stored."""

from __future__ import annotations

import base64
import binascii
import re

from lossless import _native
from lossless.config import MediaConfig
from lossless.errors import InvalidInputError, MediaInputError
from lossless.parts import MediaPart

__all__ = ["check_media", "data_url_bytes"]

# data:[<media type>][;param=value]*;base64,<data>
_DATA_URL = re.compile(r"data:(?P<type>[^;,]*)(?P<params>(?:;[^;,]*)*),(?P<data>.*)", re.DOTALL)
_PDF_MAGIC = b"%PDF-"


def data_url_bytes(field: str, url: str) -> tuple[str | None, bytes]:
    """The declared MIME type and the bytes of a base64 data URL; a data URL that
    is not base64 (or not well formed) raises :class:`MediaInputError`."""
    match = _DATA_URL.fullmatch(url)
    if match is None:
        raise MediaInputError(f"{field}: not a well-formed data URL")
    params = [param.strip().lower() for param in match["params"].split(";") if param.strip()]
    if "base64" not in params:
        raise MediaInputError(
            f"{field}: a data URL must be base64-encoded (data:<type>;base64,...)"
        )
    try:
        data = base64.b64decode(match["data"], validate=True)
    except (binascii.Error, ValueError):
        raise MediaInputError(f"{field}: the data URL's base64 is not valid") from None
    return (match["type"] or None), data


def check_media(part: MediaPart, field: str, config: MediaConfig) -> None:
    """Refuses a media part the store would not keep, or one over the size limits
    of ``config``, with :class:`MediaInputError` naming ``field``. Only the bytes'
    header is read."""
    if part.data is None:
        return
    data = bytes(part.data)
    document = data.startswith(_PDF_MAGIC)
    limit = config.max_document_bytes if document else config.max_image_bytes
    if len(data) > limit:
        what = "document" if document else "image"
        setting = "max_document_bytes" if document else "max_image_bytes"
        raise MediaInputError(
            f"{field}.data: a {what} of {len(data)} bytes is over the limit of {limit} "
            f"(media.{setting})"
        )
    try:
        _native.media_facts(data, part.media_type, field)
    except InvalidInputError as err:
        raise MediaInputError(str(err)) from None
