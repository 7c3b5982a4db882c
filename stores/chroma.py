"""Event and profile vectors in Chroma (persistent client by default, or a server).

Chroma is loaded on first use (importing it takes ~0.7 s): a command or a run that never
touches vectors never pays for it.

A bot's events are spread over ``SHARDS`` collections by chat (a chat's events all in one),
so a chat's search is asked of a collection where it is a large share: Chroma's search
narrowed to a list of ids costs ~1 us an id before it walks the graph (29 ms for 25k ids
among 100k, against 3 ms unnarrowed), so a scope that is a good share of its collection
is searched unnarrowed, deeper, and the hits outside it dropped.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from domain.limits import DEFAULTS
from domain.scope import ChatScope, ForgetTarget, check_bot_id
from stores.base import EventQuery, EventRecord

if TYPE_CHECKING:
    from langchain_chroma import Chroma

LEGACY_EVENTS = "events"  # every event, before each bot had its own collection
LEGACY_PROFILES = "profiles"  # summaries indexed without scope before 0.2; dropped on open
SCOPE_FORMAT = 2  # 1: keys without the platform; 2: "platform:chat_type:chat_id[:persona]"
# Chroma writes its HNSW index to disk every this many writes (its default: 1000). Until
# then each write costs more than the last; at 100 every write costs about the same up
# to 100k vectors, at 20 the syncs themselves cost more (docs/benchmarks/constants.md).
SYNC_THRESHOLD = 100
# A new bot's events go to this many collections, by a hash of the chat key; a bot's first
# collection records the number (one made before shards holds them all: 1).
SHARDS = 32
# A scope is searched unnarrowed when twice the share of the collection it expects to need
# is at most this many neighbours (ids and distances only: cheap at these counts,
# docs/benchmarks/constants.md); too few of the scope's among them, and it is asked
# narrowed after all.
MAX_UNNARROWED = 400
SIZE_TTL_S = 60.0  # a collection's count, for the share (counting is not free at 100k)
log = logging.getLogger(__name__)


def events_collection(bot: str) -> str:
    """A bot's own events collection: its ids and scopes can never meet another bot's (a
    bot id is a valid part of a collection name: letters, digits, '.', '_', '-')."""
    return f"events-{check_bot_id(bot)}"


def shard_collection(bot: str, shard: int) -> str:
    """The collection of a bot's shard (the first is the bot's events collection); no
    other bot's name can be one (``events.`` is not ``events-``, a shard is digits)."""
    return events_collection(bot) if shard == 0 else f"events.{shard}-{check_bot_id(bot)}"


def shard_of(chat_key: str, shards: int) -> int:
    return zlib.crc32(chat_key.encode()) % shards


class EmbeddingMismatch(RuntimeError):
    """The collection was built with another embedding model: vectors would not compare."""


class LazyClient:
    """A Chroma client made on first use; every attribute is the real client's."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._make()
        return getattr(self._client, name)


def make_client(path: Path | None = None, host: str | None = None, port: int = 8000) -> Any:
    def make() -> Any:
        import chromadb

        settings = chromadb.config.Settings(anonymized_telemetry=False)
        if host:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        assert path is not None
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=settings)

    return LazyClient(make)


def open_collection(
    client: Any,
    name: str,
    embeddings: Embeddings,
    model_name: str,
    metadata: dict[str, Any] | None = None,
) -> Chroma:
    """A LangChain Chroma store over one collection, always with our embedding function
    (Chroma's default one would download a model), cosine space, and the model's name in
    the collection metadata; a collection built with another model is refused."""
    from langchain_chroma import Chroma

    if name in _names(client):
        found = (client.get_collection(name).metadata or {}).get("embedding_model")
        if found != model_name:
            raise EmbeddingMismatch(
                f"Chroma collection {name!r} holds vectors of {found!r}, but the configured "
                f"embeddings are {model_name!r}: use another data dir or re-embed"
            )
    store = Chroma(
        collection_name=name,
        embedding_function=embeddings,
        client=client,
        collection_metadata={
            "hnsw:space": "cosine",
            "embedding_model": model_name,
            **(metadata or {}),
        },
    )
    sync_often(store._collection)
    return store


def sync_often(collection: Any) -> None:
    """``SYNC_THRESHOLD`` on a collection, new or made before it was set."""
    hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    if hnsw.get("sync_threshold") == SYNC_THRESHOLD:
        return
    try:
        collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
    except Exception as exc:  # noqa: BLE001 - slower writes, nothing lost
        log.warning("Chroma collection %s keeps its index settings: %s", collection.name, exc)


def scope_key(scope: ChatScope, persona_id: str) -> str:
    return scope.persona_key(persona_id)


def filter_keys(event: EventRecord) -> dict[str, Any]:
    """What Chroma's own reads filter a row by (``where_for``, ``forget``): all a row of
    the vectors index carries besides its vector. SQL holds each event's text and the rest
    (stop 47, on a Chroma server: 14.4 ms of its CPU per one-event upsert with the text and
    every field, 8.2 with these alone)."""
    return {
        "chat_key": event.scope.key,
        "scope_key": scope_key(event.scope, event.persona_id),
        "user_id": event.user_id,
        "timestamp": event.timestamp,
        "platform": event.platform,
    }


LEAN_KEYS = frozenset(("chat_key", "scope_key", "user_id", "timestamp", "platform"))  # filter_keys


def where_for(query: EventQuery) -> dict[str, Any]:
    """One equality on a derived key for the scope: Chroma answers a single-field filter
    about four times faster than an $and of three (3.5 vs 14 ms on 5.9k events)."""
    if query.persona_id is not None:
        scope = {"scope_key": scope_key(query.scope, query.persona_id)}
    else:
        scope = {"chat_key": query.scope.key}
    clauses: list[dict[str, Any]] = [scope]
    if query.user_id is not None:
        clauses.append({"user_id": query.user_id})
    if query.time_from is not None:
        clauses.append({"timestamp": {"$gte": query.time_from}})
    if query.time_to is not None:
        clauses.append({"timestamp": {"$lte": query.time_to}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaEventVectors:
    """One bot's event vectors in Chroma, the dense side of ``HybridEventStore``: each
    row is an event's e5 vector and the keys Chroma's own reads filter by (``filter_keys``);
    its text and the rest are SQL's. A bot's rows are in its own collections (one per shard
    of its chats). ``owner``: the bot the collection of every bot's events from before
    belongs to (it moves into that bot's own on first use). ``shards``: how many
    collections a new bot's events get."""

    def __init__(
        self,
        client: Any,
        embeddings: Embeddings,
        model_name: str,
        *,
        bot: str,
        owner: str | None = None,
        default_platform: str = DEFAULTS.default_platform,
        shards: int = SHARDS,
    ) -> None:
        self.client, self.embeddings, self.model_name = client, embeddings, model_name
        self.bot, self.owner = bot, owner
        self.name = events_collection(bot)
        self.default_platform = default_platform
        self.new_shards = shards
        self.shards = 1  # the first collection says, once open
        self._store: Chroma | None = None
        self._opened: dict[int, Chroma] = {}
        self._sizes: dict[int, tuple[int, float]] = {}
        self._lock = threading.Lock()

    @property
    def store(self) -> Chroma:
        """The bot's events collection (its first shard), opened, checked and migrated on
        first use."""
        if self._store is None:
            with self._lock:
                if self._store is None:
                    names = _names(self.client)
                    adopting = self.bot == self.owner and LEGACY_EVENTS in names
                    # events adopted from before keep the one collection they had
                    shards = 1 if adopting else self.new_shards
                    store = open_collection(
                        self.client, self.name, self.embeddings, self.model_name,
                        {"scope_format": SCOPE_FORMAT, "shards": shards},
                    )  # fmt: skip
                    if adopting:
                        adopt_legacy(self.client, store._collection, self.default_platform)
                    if LEGACY_PROFILES in names:
                        self.client.delete_collection(LEGACY_PROFILES)
                    # a collection made before shards has no count: it holds them all
                    self.shards = int((store._collection.metadata or {}).get("shards", 1))
                    self._opened[0] = self._store = store
        return self._store

    def _shard(self, shard: int) -> Chroma:
        store = self.store
        if shard == 0:
            return store
        if shard not in self._opened:
            with self._lock:
                if shard not in self._opened:
                    self._opened[shard] = open_collection(
                        self.client, shard_collection(self.bot, shard), self.embeddings,
                        self.model_name, {"scope_format": SCOPE_FORMAT, "shard": shard},
                    )  # fmt: skip
        return self._opened[shard]

    def _for(self, scope: ChatScope) -> Chroma:
        """The collection that holds a chat's events."""
        self.store  # noqa: B018 - opens it, and so learns the number of shards
        return self._shard(shard_of(scope.key, self.shards))

    def _all(self) -> list[Chroma]:
        """Every shard made so far (those never written to are not made now)."""
        self.store  # noqa: B018
        names = _names(self.client) if self.shards > 1 else set()
        return [
            self._shard(i)
            for i in range(self.shards)
            if i == 0 or i in self._opened or shard_collection(self.bot, i) in names
        ]

    def _by_shard(self, events: Sequence[EventRecord]) -> dict[int, list[int]]:
        """Positions of ``events``, grouped by the shard each one's chat is in."""
        self.store  # noqa: B018
        groups: dict[int, list[int]] = defaultdict(list)
        for i, event in enumerate(events):
            groups[shard_of(event.scope.key, self.shards)].append(i)
        return groups

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """``vectors``: the events' embeddings, when the caller has them (else embedded)."""
        if vectors is None:
            vectors = self.embeddings.embed_documents([e.passage() for e in events])
        for shard, at in self._by_shard(events).items():
            chosen = [events[i] for i in at]
            self._shard(shard)._collection.upsert(
                ids=[e.id for e in chosen],
                embeddings=np.asarray([vectors[i] for i in at], dtype=np.float32),
                metadatas=[filter_keys(e) for e in chosen],
            )

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these events (those Chroma has)."""
        found: dict[str, np.ndarray] = {}
        for store in self._all():
            wanted = [i for i in ids if i not in found]
            if not wanted:
                break
            got = store._collection.get(ids=wanted, include=["embeddings"])
            vectors = got["embeddings"] if got["embeddings"] is not None else []
            found.update((i, np.asarray(v)) for i, v in zip(got["ids"], vectors, strict=True))
        return found

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embeddings.embed_documents(texts)

    def nearest(
        self, query: EventQuery, within: Sequence[str], vector: Sequence[float]
    ) -> list[tuple[str, float]] | None:
        """The ids of the scope's (``within``, from SQL) nearest events and their cosines,
        best first, without their text and metadata (Chroma reads those at ~0.13 ms a
        hit: 27 ms for 200); None when Chroma lacks one of the ids (a write in flight).
        A scope that is enough of its collection is searched unnarrowed, deeper: the
        collection's nearest ``k`` hold every one of the scope's nearer than the last of
        the scope's among them. Else, or if too few were the scope's, narrowed to the ids."""
        if not within:
            return []
        store = self._for(query.scope)
        allowed = set(within)
        wanted = min(query.top_k, len(allowed))
        k = self._depth(store, wanted, len(allowed))
        if 0 < k <= MAX_UNNARROWED:
            mine = [hit for hit in nearest_ids(store, vector, k) if hit[0] in allowed]
            if len(mine) >= wanted:
                return mine[:wanted]
        from chromadb.errors import ChromaError

        try:
            found = nearest_ids(store, vector, query.top_k, ids=list(within))
        except ChromaError:
            return None
        return [hit for hit in found if hit[0] in allowed]

    def nearest_where(self, query: EventQuery, vector: Sequence[float]) -> list[tuple[str, float]]:
        """Ids and cosines of the query's ``top_k`` nearest, narrowed by Chroma's metadata
        filter alone (a scope SQL does not list: ~48 ms at 200k events)."""
        return nearest_ids(self._for(query.scope), vector, query.top_k, where=where_for(query))

    def unnarrowed(self, query: EventQuery, members: int) -> bool:
        """Whether ``nearest`` searches a scope of this many events unnarrowed: it is
        enough of its collection, so it costs one HNSW query of at most
        ``MAX_UNNARROWED`` neighbours, however large the scope."""
        store = self._for(query.scope)
        k = self._depth(store, min(query.top_k, members), members)
        return 0 < k <= MAX_UNNARROWED

    def _depth(self, store: Chroma, wanted: int, members: int) -> int:
        """How many of the collection's nearest hold a scope's ``wanted`` nearest, with
        room: twice its expected share of them."""
        size = self._size(store)
        return min(size, math.ceil(2 * wanted * size / members)) if size and members else 0

    def _size(self, store: Chroma) -> int:
        """The collection's event count, counted again after ``SIZE_TTL_S`` (an old count
        only misjudges the share: the narrowed search still answers)."""
        key = id(store)
        count, at = self._sizes.get(key, (0, -math.inf))
        if time.monotonic() - at > SIZE_TTL_S:
            count = int(store._collection.count())
            self._sizes[key] = (count, time.monotonic())
        return count

    def count(self, scope: ChatScope | None = None) -> int:
        if scope is None:
            return sum(int(store._collection.count()) for store in self._all())
        return len(self._for(scope).get(where={"chat_key": scope.key}, include=[])["ids"])

    def _covering(self, target: ForgetTarget) -> list[Chroma]:
        return [self._for(target.chat)] if target.chat else self._all()

    def make_lean(self, events: Sequence[EventRecord] | None = None, batch: int = 1000) -> int:
        """Rewrite rows written before they carried only ``filter_keys`` (or merged into
        such a row by an upsert): text blanked, every other key gone, vector kept. Every
        row (``groupmind compact``), or these events' rows (forget: those that hold a
        forgotten person's message). Returns how many were rewritten; a second pass finds
        none. One ``update`` a page, so a kill leaves each row old or lean; a row deleted
        meanwhile can shift the pages past one row (the next pass finds it)."""
        return sum(_lean(collection, got) for collection, got in self._rows(events, batch))

    def _rows(self, events: Sequence[EventRecord] | None, batch: int) -> Iterator[tuple[Any, Any]]:
        """(collection, a ``get`` of rows with their metadata and document): these events'
        rows, a shard at a time, or every row, a page at a time."""
        wanted: Any = ["metadatas", "documents"]
        if events is not None:
            for shard, at in self._by_shard(events).items():
                collection = self._shard(shard)._collection
                yield collection, collection.get(ids=[events[i].id for i in at], include=wanted)
            return
        for store in self._all():
            collection, offset = store._collection, 0
            while (got := collection.get(include=wanted, limit=batch, offset=offset))["ids"]:
                offset += len(got["ids"])
                yield collection, got

    def forget(self, target: ForgetTarget) -> list[str]:
        """Delete the events the target covers; returns their ids."""
        clauses: list[dict[str, Any]] = [
            {"chat_key": target.chat.key} if target.chat else {"platform": target.platform}
        ]
        if target.user_id is not None:
            clauses.append({"user_id": target.user_id})
        where: Any = clauses[0] if len(clauses) == 1 else {"$and": clauses}
        ids: list[str] = []
        for store in self._covering(target):
            found = [str(i) for i in store.get(where=where, include=[])["ids"]]
            _delete(store, found)
            ids += found
        return ids

    def remove(self, ids: Sequence[str]) -> None:
        """Delete these events from the shards that hold them: asked first, as a delete
        of ids a collection lacks is still written to Chroma's log, for every shard."""
        wanted = list(ids)
        for store in self._all():
            if not wanted:
                break
            held = set(store.get(ids=wanted, include=[])["ids"])
            _delete(store, [i for i in wanted if i in held])
            wanted = [i for i in wanted if i not in held]


def nearest_ids(
    store: Chroma,
    vector: Sequence[float],
    k: int,
    ids: list[str] | None = None,
    where: dict[str, Any] | None = None,
) -> list[tuple[str, float]]:
    """Ids and cosines of the ``k`` nearest (among ``ids``, or rows ``where`` admits),
    nothing else read."""
    got = store._collection.query(
        query_embeddings=np.asarray([vector], dtype=np.float32),
        n_results=k,
        ids=ids,
        where=where,
        include=["distances"],
    )
    distances = got["distances"][0] if got["distances"] else []
    return [(str(i), 1.0 - float(d)) for i, d in zip(got["ids"][0], distances, strict=True)]


def _lean(collection: Any, got: Any) -> int:
    """Rewrite the rows of one ``get`` page that hold more than ``LEAN_KEYS``."""
    ids, metas, texts = [], [], []
    for i, meta, doc in zip(got["ids"], got["metadatas"], got["documents"], strict=True):
        meta = meta or {}
        extra = [k for k in meta if k not in LEAN_KEYS]
        if extra or doc:
            ids.append(i)
            # a key set to None is deleted; the lean keys written again as they are
            metas.append({**{k: meta[k] for k in LEAN_KEYS if k in meta}, **dict.fromkeys(extra)})
            texts.append(bool(doc))
    if not ids:
        return 0
    wordy = [i for i, text in zip(ids, texts, strict=True) if text]
    if wordy:  # a document is replaced only with its vector given (else Chroma embeds it)
        vectors = collection.get(ids=wordy, include=["embeddings"])
        by_id = dict(zip(vectors["ids"], vectors["embeddings"], strict=True))
        wordy = [i for i in wordy if i in by_id]  # one deleted meanwhile is left gone
        meta_of = dict(zip(ids, metas, strict=True))
        collection.update(
            ids=wordy,
            embeddings=np.asarray([by_id[i] for i in wordy], dtype=np.float32),
            documents=[""] * len(wordy),
            metadatas=[meta_of[i] for i in wordy],
        )
    plain = [(i, m) for i, m, text in zip(ids, metas, texts, strict=True) if not text]
    if plain:
        collection.update(ids=[i for i, _ in plain], metadatas=[m for _, m in plain])
    return len(ids)


def _delete(store: Chroma, ids: Sequence[str]) -> None:
    for start in range(0, len(ids), 1000):
        store._collection.delete(ids=list(ids[start : start + 1000]))


def _names(client: Any) -> set[str]:
    return {c.name if hasattr(c, "name") else str(c) for c in client.list_collections()}


def migrate_scopes(collection: Any, default_platform: str, batch: int = 1000) -> int:
    """Bring an events collection written before platforms were part of the scope to the
    current keys (events without a platform take ``default_platform``); once, recorded in
    the collection's metadata. Returns how many events were rewritten."""
    meta = dict(collection.metadata or {})
    if meta.get("scope_format") == SCOPE_FORMAT:
        return 0
    changed, offset = 0, 0
    while True:
        got = collection.get(include=["metadatas"], limit=batch, offset=offset)
        if not got["ids"]:
            break
        metas = []
        for old in got["metadatas"]:
            new = dict(old or {})
            new.setdefault("platform", default_platform)
            event = EventRecord.from_metadata("-", "", new)
            new["chat_key"], new["scope_key"] = (
                event.scope.key,
                scope_key(event.scope, event.persona_id),
            )
            metas.append(new)
        collection.update(ids=got["ids"], metadatas=metas)
        changed += len(got["ids"])
        offset += batch
    meta.pop("hnsw:space", None)  # fixed at creation; Chroma refuses to "change" it
    collection.modify(metadata={**meta, "scope_format": SCOPE_FORMAT})
    return changed


def adopt_legacy(client: Any, target: Any, default_platform: str, batch: int = 1000) -> int:
    """Move the collection every bot's events used to share into its owner's own (once;
    after a crash the next open finishes it: writes are idempotent, and the old collection
    goes only once every event is in the new one). Returns how many events moved."""
    legacy = client.get_collection(LEGACY_EVENTS)
    migrate_scopes(legacy, default_platform)
    moved, offset = 0, 0
    while True:
        got = legacy.get(include=["embeddings", "metadatas"], limit=batch, offset=offset)
        if not got["ids"]:
            break
        target.upsert(  # lean rows: the events' text and the rest are SQL's
            ids=got["ids"],
            embeddings=np.asarray(got["embeddings"], dtype=np.float32),
            metadatas=[
                {k: v for k, v in (m or {}).items() if k in LEAN_KEYS} for m in got["metadatas"]
            ],
        )
        moved += len(got["ids"])
        offset += batch
    if target.count() >= legacy.count():
        client.delete_collection(LEGACY_EVENTS)
        log.warning("Chroma: %d events moved from %r into %r", moved, LEGACY_EVENTS, target.name)
    return moved
