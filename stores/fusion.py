"""How ``HybridEventStore`` fuses its rankings: settings, so they live apart from the store
(``Settings`` imports this; it must not load numpy or the segmenter)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stores.script import has_cjk

DIVERSITY_DEFAULT = 1.0  # off: on LoCoMo 0.8 costs 7.7 points of R@5 (README, "Memory quality")


class Weights(BaseModel):
    """One script's fusion weights (the defaults: Chinese). Each side adds
    ``weight / (rrf_k + rank + 1)``; a memory of a person the question names (or of the
    asker, for 我 / I) gets ``person × (1 − their share of the chat's memories) /
    (rrf_k + 1)``, as if ranked first once more on a side of that weight (0: names are read
    as words); one from the span the question is about ("上周") gets ``time / (rrf_k + 1)``."""

    model_config = ConfigDict(frozen=True)

    dense: float = Field(default=1.0, ge=0)
    lexical: float = Field(default=0.5, ge=0)
    person: float = Field(default=1.0, ge=0)
    time: float = Field(default=0.5, ge=0)


class OtherWeights(Weights):
    """Weights for questions in other scripts (one field can be set alone)."""

    dense: float = Field(default=0.5, ge=0)
    lexical: float = Field(default=1.0, ge=0)
    person: float = Field(default=0.5, ge=0)


class Fusion(BaseModel):
    """How the rankings are fused (GROUPMIND_SEARCH__ZH__DENSE, ...), by the question's
    script: e5-small is the stronger side on Chinese once names leave the query, BM25 on
    English. ``zh`` was tuned on DialogRE-cn train and checked on its dev split and the
    member paraphrases; ``other`` on LoCoMo, with and without neighbour turns (README,
    "Memory quality")."""

    model_config = ConfigDict(frozen=True)

    zh: Weights = Weights()
    other: OtherWeights = OtherWeights()
    # each further memory from a session already in the top k counts this much less (1: off)
    diversity: float = Field(default=DIVERSITY_DEFAULT, gt=0, le=1)
    rrf_k: int = Field(default=10, ge=1)
    # how much a named person's share of the chat's memories discounts their lift (1: one
    # who said half the chat lifts half as much, their name narrows little; 0: no discount)
    share: float = Field(default=1.0, ge=0, le=1)

    def weights_for(self, text: str) -> Weights:
        return self.zh if has_cjk(text) else self.other
