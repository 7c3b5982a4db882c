"""How ``HybridEventStore`` fuses its rankings: settings, so they live apart from the store
(``Settings`` imports this; it must not load numpy or the segmenter)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from stores.script import has_cjk

DIVERSITY_DEFAULT = 1.0  # off: on LoCoMo 0.8 costs 7.7 points of R@5 (docs/benchmarks/memory.md)
Lift = Literal["ranked", "flat"]
By = Literal["rank", "score"]


class Weights(BaseModel):
    """One script's fusion weights (the defaults: Chinese). Each side adds
    ``weight / (rrf_k + rank + 1)`` (``by`` rank) or its standardised score (``by``
    score: ``stores.fused``). The question's people (names, or the asker's 我 / I)
    and its span ("上周") are two more sides (``Fusion.lift``): the memories of the people
    and those from the span, each ranked as the other sides ranked them, weighted
    ``person × (1 − the person's share of the chat's memories)`` and ``time`` (0: names
    are read as words, spans ignored)."""

    model_config = ConfigDict(frozen=True)

    dense: float = Field(default=1.0, ge=0, description="weight of the dense (e5) ranking")
    lexical: float = Field(default=0.5, ge=0, description="weight of the keyword (BM25) ranking")
    person: float = Field(
        default=1.0,
        ge=0,
        description="the lift of memories of a person the question names, or of the asker "
        "for 我 / I (0: names are read as words)",
    )
    time: float = Field(
        default=0.5, ge=0, description='the lift of memories from the span it is about ("上周")'
    )
    named: float = Field(
        default=0.5,
        ge=0,
        description="for a question naming a member: the weight of one more dense ranking, "
        "of the question with their names kept (the other sides read it without; 0: off)",
    )
    # off: on questions naming two people, any weight lowered recall, since every turn
    # of a dialogue answers the one before (docs/benchmarks/constants.md)
    between: float = Field(
        default=0.0,
        ge=0,
        description="for a question naming two people or more of a group (``whole_chat``): "
        "the lift of the memories of "
        "ties between them (one answering, naming, agreeing with the other; a relation "
        "stated), ranked as the other sides ranked them (0: off)",
    )
    # Chinese by rank: by score, the member paraphrases' near-alike memories of twelve
    # people outscored the asked one's lift (R@5 0.958 -> 0.859; docs/benchmarks/memory.md)
    by: By = Field(
        default="rank",
        description="`rank`: each side adds weight / (rrf_k + rank + 1); `score`: weight × "
        "(score - its lowest candidate's) / the spread of its candidates' scores, and a lift "
        "of 1 is one spread",
    )
    # none in Chinese: on DialogRE-cn train (many speakers; a line seldom answers the one
    # before) R@5 0.905 -> 0.853 (docs/benchmarks/memory.md)
    around: tuple[float, ...] = Field(
        default=(),
        description="what share of a memory's score goes to the memories said 1, 2, ... "
        "before and after it in its talk (a question and its answer find each other; "
        "empty: none)",
    )
    answers: float = Field(
        default=0.0,
        ge=0,
        description='what share of the score of a memory that asks ("What did you paint?") '
        "goes to the memory said after it in its talk, its answer (0: none)",
    )
    asking: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="what a memory that asks keeps of its score when it passes a share to its "
        "answer (``answers``)",
    )
    closed: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description='for a memory asking whether ("Is she marrying Chandler?"), not what: the '
        "share it passes to its answer and the score it loses are this much of an open "
        "question's (``answers``, ``asking``): it says what it asks about",
    )
    many: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="for a question asking for several things over time (``stores.many``): "
        "each further memory from a session already in the top k counts this much less "
        "(1: off)",
    )
    many_after: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="for a question asking for several things over time: from the sixth "
        "place on, each further memory from a session already picked counts this much less; "
        "the first five keep the order ``many`` gives them (1: off)",
    )


def _default(name: str, default: object) -> Any:
    """``Weights``' field ``name`` with another default (its bounds and description kept)."""
    return FieldInfo.merge_field_infos(Weights.model_fields[name], default=default)


class OtherWeights(Weights):
    """Weights for questions in other scripts (one field can be set alone). Chosen on
    LoCoMo's first five conversations (no neighbour turns); its last five and MemoryBank-en
    check them (docs/benchmarks/locomo.md, "Stop 59")."""

    # by score, with around: LoCoMo R@5 0.620 -> 0.703 (held-out half 0.691)
    by: By = _default("by", "score")
    dense: float = _default("dense", 1.0)
    lexical: float = _default("lexical", 1.25)
    person: float = Field(
        default=0.75, ge=0, description="the lift of memories of a person the question names"
    )
    time: float = Field(
        default=1.0, ge=0, description='the lift of memories from the span it is about ("in May")'
    )
    # ``named`` is Chinese's 0.5 since stop 64: 0.25 was flat on LoCoMo (two speakers, a
    # name narrows little); among DialogRE's three to eight, 0.5 gives its train split R@1 /
    # R@5 / R@10 0.422 / 0.812 / 0.931 -> 0.429 / 0.814 / 0.935, LoCoMo's tuning half R@10
    # 0.836 -> 0.839 at the same R@1 / R@5 (docs/benchmarks/memory.md, "Stop 64")
    # two people named among more (``Fusion.whole_chat``): their ties (not ``followed``) as
    # one more side, as heavy as the dense side. On DialogRE-en train's 53 such questions
    # R@1 / R@5 / R@10 0.377 / 0.906 / 0.981 (no spread alone) -> 0.434 / 0.925 / 1.000,
    # dense alone 0.396 / 0.792 / 0.981; heavier goes on rising there, where the gold is a
    # line naming the other, as a ``mentioned`` tie does (docs/benchmarks/memory.md, "Stop 65")
    between: float = _default("between", 1.0)
    # (0.4, 0.25) found more (R@5 0.707) but put the questions whose evidence spans
    # sessions below the dense side alone (0.333 against 0.336; docs/benchmarks/locomo.md)
    around: tuple[float, ...] = _default("around", (0.3, 0.2))
    # a question the chat asked matches a question about it best, and holds no answer: on
    # LoCoMo's tuning half R@1 0.393 -> 0.463, R@5 0.726 -> 0.754 (docs/benchmarks/locomo.md,
    # "Stop 63")
    answers: float = _default("answers", 0.6)
    asking: float = _default("asking", 0.5)
    # in DialogRE's English scenes the line that asks whether is often the evidence ("the
    # assistant is marrying Chandler?") and its answer a bare "Yeah": on its train split
    # R@1 / R@5 0.406 / 0.797 -> 0.422 / 0.812, on LoCoMo's tuning half 0.461 / 0.756 ->
    # 0.478 / 0.755 (docs/benchmarks/memory.md, "Stop 64")
    closed: float = _default("closed", 0.5)
    # since memories are indexed under the talk before them (stop 62) and answers are lifted
    # beside their questions (stop 63), one session crowds the rest out of a question asking
    # for many: on LoCoMo's tuning half 0.7 gives every gold session in the top 10 0.441 ->
    # 0.472 for R@5 0.754 -> 0.755 (docs/benchmarks/locomo.md, "Stop 63")
    # stop 65: 0.5 gives every gold session in the tuning half's top 5 0.298 -> 0.335 for
    # R@5 0.756 -> 0.753 (0.6: 0.311, 0.754; 0.35: 0.335, 0.749; docs/benchmarks/locomo.md)
    many: float = _default("many", 0.5)
    # most of a question's other sessions rank beyond the top 10; where one is near, it
    # takes a place after the fifth: on LoCoMo's tuning half every gold session in the top
    # 10 0.478 -> 0.522 for R@10 0.837 -> 0.835, R@5 unchanged (0.55: 0.509, 0.837; 0.2:
    # 0.528, 0.833; docs/benchmarks/locomo.md, "Stop 64")
    many_after: float = _default("many_after", 0.4)


class Fusion(BaseModel):
    """How the rankings are fused (GROUPMIND_SEARCH__ZH__DENSE, ...), by the question's
    script: e5-small is the stronger side on Chinese once names leave the query, BM25 on
    English. ``zh`` was tuned on DialogRE-cn train and checked on its dev split and the
    member paraphrases; ``other`` on LoCoMo, with and without neighbour turns
    (docs/benchmarks/memory.md)."""

    model_config = ConfigDict(frozen=True)

    zh: Weights = Field(default=Weights(), description="for questions with Chinese characters")
    other: OtherWeights = Field(
        default=OtherWeights(), description="for other questions (tuned on LoCoMo)"
    )
    diversity: float = Field(
        default=DIVERSITY_DEFAULT,
        gt=0,
        le=1,
        description="each further memory from a session already in the top k counts this "
        "much less (1: off)",
    )
    rrf_k: int = Field(default=10, ge=1, description="reciprocal rank fusion's k")
    talk_gap_s: float = Field(
        default=1800.0,
        gt=0,
        description="a pause longer than this ends a talk: memories on either side of it "
        "are not each other's neighbours (``around``)",
    )
    share: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="how much a named person's share of the chat's memories discounts their "
        "lift (1: one who said half the chat lifts half as much; 0: no discount)",
    )
    lift: Lift = Field(
        default="ranked",
        description="`ranked`: the people and the span are sides of their own that rank "
        "their memories as the other sides did (a prior, not a flood); `flat`: every one of "
        "them as if ranked first once more (before stop 54)",
    )
    # one: lifting both people of a question naming two drowned the evidence
    # (docs/benchmarks/constants.md)
    most_people: int = Field(
        default=1,
        ge=0,
        description="a question naming more people than this asks what passed between them: "
        "no person lift, their names are words on both sides (0: always lift)",
    )

    # a chat of two that a question names both of: LoCoMo's ten conversations are as before
    whole_chat: float = Field(
        default=0.99,
        ge=0,
        le=1,
        description="a question naming people who said at least this share of the chat's "
        "memories names the whole chat: the neighbours' spread and answers hold and no ties "
        "are looked up (below it, the question asks what passed between them: no spread, and "
        "their ties are one more side, ``between``)",
    )

    def weights_for(self, text: str) -> Weights:
        return self.zh if has_cjk(text) else self.other
