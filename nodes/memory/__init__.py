"""The memory graph's node slots, in order, with their variants."""

from nodes.memory import embed, intake, merge_profile, quality_gate, rewrite
from nodes.variants import VariantFn

VARIANTS: dict[str, dict[str, VariantFn]] = {
    **intake.VARIANTS,
    **rewrite.VARIANTS,
    **quality_gate.VARIANTS,
    **embed.VARIANTS,
    **merge_profile.VARIANTS,
}
