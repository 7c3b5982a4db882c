"""emoji: answer with a sticker, picked from a library by the meaning of its description
(embedding search in a Chroma collection of its own).

A library is a folder (``STICKERS_DIR``; the bundled one by default) with a
``stickers.json``: ``[{"id", "description", "file"?, "face"?}]`` — an image file in the
folder, and/or a QQ face id; a bridge sends whichever it can.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from nodes.deps import ReplyDeps
from nodes.reply.hand_off import STICKER_LABEL
from state.context import Context
from state.reply import ReplyState, current_message
from state.slots import EmojiWrites
from stores.chroma import open_collection

STICKERS = "stickers"


def load_library(folder: Path) -> list[dict[str, str]]:
    """A sticker folder's entries, image paths made absolute; a bad entry is named."""
    manifest = folder / "stickers.json"
    try:
        entries = json.loads(manifest.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{manifest}: cannot read the sticker library ({exc})") from None
    library = []
    for n, entry in enumerate(entries if isinstance(entries, list) else [None]):
        if not isinstance(entry, dict) or not entry.get("id") or not entry.get("description"):
            raise ValueError(f"{manifest}: entry {n}: needs an id and a description")
        sticker = {k: str(v) for k, v in entry.items() if k in ("id", "description", "face")}
        if entry.get("file"):
            path = (folder / str(entry["file"])).resolve()
            if not path.is_file():
                raise ValueError(f"{manifest}: entry {n} ({entry['id']}): no file {path}")
            sticker["file"] = str(path)
        library.append(sticker)
    return library


class StickerIndex:
    """The library embedded once into Chroma (again only when the library changes)."""

    def __init__(
        self, client: Any, embeddings: Embeddings, model_name: str, library: list[dict[str, str]]
    ) -> None:
        self.client, self.embeddings, self.model_name = client, embeddings, model_name
        self.library = {s["id"]: s for s in library}
        self._store: Any = None
        self._lock = threading.Lock()

    def _ready(self) -> Any:
        with self._lock:
            if self._store is None:
                store = open_collection(self.client, STICKERS, self.embeddings, self.model_name)
                have = set(store.get(include=[])["ids"])
                if have != set(self.library):
                    if have:
                        store.delete(ids=list(have))
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


def emoji(state: ReplyState, ctx: Context, deps: ReplyDeps) -> EmojiWrites:
    msg = current_message(state)
    sticker = deps.stickers.pick(msg.content)
    return {
        "sticker": sticker,
        "reply": f"{STICKER_LABEL}{sticker['id']}] {sticker['description']}",
    }


VARIANTS = {"emoji": {"default": emoji}}
