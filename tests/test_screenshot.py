"""The test screenshots are real PNGs: the standard decoder reads them back pixel for pixel."""

from __future__ import annotations

import struct
import zlib

import pytest

from lossless.testing import screenshot


def _decode(png: bytes) -> tuple[int, int, bytes]:
    """Width, height and raw scanlines of a PNG, read chunk by chunk with CRCs checked."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, size, data = 8, (0, 0), b""
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            data += body
        at += 12 + length
    return size[0], size[1], zlib.decompress(data)


def test_a_screenshot_decodes_to_its_size() -> None:
    width, height, raw = _decode(screenshot(320, 200, seed=3))
    assert (width, height) == (320, 200)
    assert len(raw) == height * (1 + width * 3)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others() -> None:
    assert screenshot(seed=5) == screenshot(seed=5)
    assert screenshot(seed=5) != screenshot(seed=6)


def test_a_full_screenshot_has_a_real_one_s_size() -> None:
    assert 100_000 < len(screenshot(1280, 800, seed=1)) < 400_000


def test_too_small_a_screenshot_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 64"):
        screenshot(32, 32)
