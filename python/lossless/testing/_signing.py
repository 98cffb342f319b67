"""Signatures and sealed tokens the local server issues for reasoning it returns.

Providers hand reasoning back to the client in a form the client cannot forge: an
Anthropic ``thinking`` block carries a ``signature``, a ``redacted_thinking`` block an
opaque ``data`` string, an OpenAI ``reasoning`` item an ``encrypted_content`` token.
Each is checked when the client sends it back, and a changed one is refused. The
local server does the same with a key of its own, so a test can tell whether a
client carried the server's reasoning back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

__all__ = ["Signer"]

_SEPARATOR = "."


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """Signs and seals text with a random per-server key.

    Nothing signed by one :class:`Signer` verifies with another, as a signature from
    one provider account means nothing to another.
    """

    def __init__(self, key: bytes | None = None) -> None:
        """Use ``key``, or a fresh random one."""
        self._key = key if key is not None else secrets.token_bytes(32)

    def _mac(self, purpose: str, data: bytes) -> bytes:
        # The purpose keeps a signature from passing as a sealed token and back.
        return hmac.new(self._key, purpose.encode() + b"\0" + data, hashlib.sha256).digest()

    def sign(self, text: str) -> str:
        """The signature of ``text``: an HMAC, so it reveals nothing of the key."""
        return _b64(self._mac("sign", text.encode()))

    def verify(self, text: str, signature: object) -> bool:
        """Whether ``signature`` is this signer's signature of ``text``."""
        if not isinstance(signature, str):
            return False
        return hmac.compare_digest(self.sign(text), signature)

    def seal(self, text: str) -> str:
        """An opaque token carrying ``text``, which :meth:`unseal` alone can open.

        The text is only encoded, not encrypted: a test may decode it, a client has
        no reason to.
        """
        body = text.encode()
        return _b64(body) + _SEPARATOR + _b64(self._mac("seal", body))

    def unseal(self, token: object) -> str | None:
        """The text sealed in ``token``; None when this signer did not issue it as is."""
        if not isinstance(token, str) or _SEPARATOR not in token:
            return None
        encoded, _, mac = token.partition(_SEPARATOR)
        try:
            body, digest = _unb64(encoded), _unb64(mac)
        except (binascii.Error, ValueError):
            return None
        if not hmac.compare_digest(self._mac("seal", body), digest):
            return None
        try:
            return body.decode()
        except UnicodeDecodeError:
            return None
