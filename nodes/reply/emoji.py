"""emoji: answer with a sticker, picked from a small bundled library by the meaning of its
description (embedding search in a Chroma collection of its own)."""

from __future__ import annotations

import json
import threading
from importlib.resources import files
from typing import Any, cast

from langchain_core.embeddings import Embeddings

from nodes.deps import Deps, need
from state.context import Context
from state.reply import ReplyState, current_message
from stores.chroma import open_collection

STICKERS = "stickers"


def bundled_stickers() -> list[dict[str, str]]:
    raw = files("groupmind.demo_data").joinpath("stickers.json").read_text("utf-8")
    return cast(list[dict[str, str]], json.loads(raw))


class StickerIndex:
    """The library embedded once into Chroma (again only when the library changes)."""

    def __init__(self, client: Any, embeddings: Embeddings, model_name: str) -> None:
        self.client, self.embeddings, self.model_name = client, embeddings, model_name
        self.library = {s["id"]: s for s in bundled_stickers()}
        self._store: Any = None
        self._lock = threading.Lock()

    def _ready(self) -> Any:
        with self._lock:
            if self._store is None:
                store = open_collection(self.client, STICKERS, self.embeddings, self.model_name)
                have = set(store.get(include=[])["ids"])
                if have != set(self.library):
                    store.add_texts(
                        [s["description"] for s in self.library.values()],
                        metadatas=[{"sticker": i} for i in self.library],
                        ids=list(self.library),
                    )
                self._store = store
        return self._store

    def pick(self, text: str) -> dict[str, str]:
        doc = self._ready().similarity_search(text, k=1)[0]
        return self.library[str(doc.id)]


def emoji(state: ReplyState, ctx: Context, deps: Deps) -> dict[str, Any]:
    msg = current_message(state)
    sticker = need(deps.stickers, "stickers").pick(msg.content)
    return {"sticker": sticker, "reply": f"[表情:{sticker['id']}] {sticker['description']}"}


VARIANTS = {"emoji": {"default": emoji}}
