"""Deterministic screenshots for tests, benchmarks and the demo.

A browser agent's screenshot is a PNG of a page: flat backgrounds, a header bar,
panels, and many short lines of dark glyphs. :func:`screenshot` draws that shape from
a seed, with the standard library alone, so that a test holds an image a provider
would take and of about the size a real one has (some 230 kilobytes at
1280×800), without any file on disk.
"""

from __future__ import annotations

import random
import struct
import zlib

__all__ = ["screenshot"]

_WHITE = b"\xff\xff\xff"
_HEADER = b"\x24\x29\x2f"
_PANEL = b"\xf3\xf5\xf7"
_INK = (b"\x1f\x23\x28", b"\x57\x60\x6a", b"\x09\x69\xda")
_LINE_HEIGHT = 18
_GLYPH_ROWS = 11


def screenshot(width: int = 1280, height: int = 800, *, seed: int = 0) -> bytes:
    """A PNG of ``width`` × ``height`` pixels that looks like a page of text.

    The same seed gives the same bytes; different seeds give different pages.
    """
    if width < 64 or height < 64:
        raise ValueError("a screenshot is at least 64 × 64 pixels")
    rng = random.Random(seed)
    rows = _page_rows(width, height, rng)
    raw = b"".join(b"\x00" + row for row in rows)
    # The fast level, as browsers encode their screenshots.
    return _png(width, height, zlib.compress(raw, 1))


def _page_rows(width: int, height: int, rng: random.Random) -> list[bytes]:
    header = min(56, height // 8)
    sidebar = width // 5
    rows = [_HEADER * width] * header
    y = header
    while y < height:
        band = min(_LINE_HEIGHT, height - y)
        rows.extend(_text_line(width, sidebar, band, rng))
        y += band
    _draw_photo(rows, width, header, rng)
    return rows


def _draw_photo(rows: list[bytes], width: int, top: int, rng: random.Random) -> None:
    """A picture on the page (a product photo, a chart): noise PNG cannot squeeze,
    which gives the file the size of a real screenshot's."""
    photo_width, photo_height = width // 5, len(rows) // 5
    left = width - photo_width - 24
    for y in range(top + 24, min(top + 24 + photo_height, len(rows))):
        row = rows[y]
        pixels = rng.randbytes(photo_width * 3)
        rows[y] = row[: left * 3] + pixels + row[(left + photo_width) * 3 :]


def _text_line(width: int, sidebar: int, band: int, rng: random.Random) -> list[bytes]:
    """One line of text across the page: glyph runs on the panel and the body."""
    words = _words(width - sidebar - 48, rng)
    ink = rng.choice(_INK)
    lines: list[bytes] = []
    for row in range(band):
        if row >= _GLYPH_ROWS or not words:
            lines.append(_PANEL * sidebar + _WHITE * (width - sidebar))
            continue
        body = bytearray(_WHITE * 24)
        for start, length in words:
            body += _WHITE * (start - len(body) // 3)
            body += _glyph_row(ink, length, rng)
        body += _WHITE * (width - sidebar - len(body) // 3)
        lines.append(_PANEL * sidebar + bytes(body))
    return lines


def _glyph_row(ink: bytes, length: int, rng: random.Random) -> bytes:
    """``length`` pixels of random ink and paper: eight pixels per random byte."""
    table = _EIGHT_PIXELS[ink]
    pattern = rng.randbytes((length + 7) // 8)
    return b"".join(table[byte] for byte in pattern)[: length * 3]


def _eight_pixels(ink: bytes) -> list[bytes]:
    """For each byte value, its eight bits as pixels: ink for 1, paper for 0."""
    return [
        b"".join(ink if value >> bit & 1 else _WHITE for bit in range(8)) for value in range(256)
    ]


_EIGHT_PIXELS = {ink: _eight_pixels(ink) for ink in _INK}


def _words(span: int, rng: random.Random) -> list[tuple[int, int]]:
    """Where each word of a line starts and how wide it is, in pixels."""
    if rng.random() < 0.25:
        return []  # a blank line between paragraphs
    end = rng.randint(span // 3, span)
    words: list[tuple[int, int]] = []
    x = 24
    while x < end:
        length = rng.randint(12, 60)
        if x + length > end:
            break
        words.append((x, length))
        x += length + rng.randint(5, 9)
    return words


def _png(width: int, height: int, compressed: bytes) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunks = _chunk(b"IHDR", header) + _chunk(b"IDAT", compressed) + _chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)
