"""The host graph's own nodes (graphs/host.py): what a host bot framework that keeps its
own model asks of groupmind's memory. The graph reuses the reply graph's slots (observe,
retrieve, rank_context, hand_off) for everything a reply run would do."""
