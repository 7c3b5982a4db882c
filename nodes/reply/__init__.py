"""The reply graph's node slots, in order, with their variants."""

from nodes.reply import emoji, hand_off, observe, plan, rank_context, reply, retrieve
from nodes.variants import VariantFn

VARIANTS: dict[str, dict[str, VariantFn]] = {
    **observe.VARIANTS,
    **retrieve.VARIANTS,
    **rank_context.VARIANTS,
    **plan.VARIANTS,
    **reply.VARIANTS,
    **emoji.VARIANTS,
    **hand_off.VARIANTS,
}
