"""External recall: the port any retriever implements, and the built-in lexical one."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

from lossless import _native

__all__ = ["LexicalRecallPort", "RecallHit", "RecallPort"]


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One hit of an external retriever."""

    text: str
    score: float = 0.0
    #: The retriever's id of what it found (optional).
    id: str | None = None


@runtime_checkable
class RecallPort(Protocol):
    """Anything that finds text for a query: a vector store, a search API, a wiki.

    ``search`` may be a coroutine function or a plain one (a plain one runs in a
    worker thread). It returns at most ``k`` :class:`RecallHit`, best first. A port
    that raises, hangs past ``Config.arena.external_timeout_s`` or returns something
    else is skipped for the turn, with an ``external_recall_skipped`` event.
    """

    def search(
        self, query: str, k: int
    ) -> Sequence[RecallHit] | Awaitable[Sequence[RecallHit]]: ...


class LexicalRecallPort:
    """The built-in retriever: feature hashing of words and cosine similarity, in the
    native core. Deterministic and needs no model; it finds shared words, not meaning.

    ``documents`` are ``(id, text)`` pairs. :meth:`from_store` indexes the summaries of
    every other session in a database, which is what a session asks by default when
    external recall is on and no port is configured.
    """

    def __init__(
        self,
        documents: Iterable[tuple[str, str]] = (),
        *,
        dims: int = 1024,
        legacy: bool = False,
        min_similarity: float = 0.08,
    ) -> None:
        self._index = _native.LexicalIndex(dims, legacy)
        self._texts: dict[str, str] = {}
        self._min_similarity = min_similarity
        for doc_id, text in documents:
            self.add(doc_id, text)

    def add(self, doc_id: str, text: str) -> None:
        """Index one more document."""
        self._texts[doc_id] = text
        self._index.add(doc_id, text)

    def __len__(self) -> int:
        return len(self._index)

    def search(self, query: str, k: int) -> list[RecallHit]:
        found = self._index.search(query, k, self._min_similarity)
        return [RecallHit(self._texts[doc_id], score, doc_id) for doc_id, score in found]

    @classmethod
    def from_store(cls, store: _native.Store, *, exclude_session: str | None = None) -> Self:
        """A port over the summaries of every session of ``store`` but one."""
        port = cls()
        for session in store.list_sessions():
            if session.id == exclude_session:
                continue
            for node in store.describe(session.id, None):
                port.add(node.id, node.text)
        return port
