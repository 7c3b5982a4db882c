"""The vocabulary every layer shares, on the ground floor (it imports nothing of groupmind):
``scope`` (bots, chats and their stream keys, personas, sharing, forget targets),
``people`` (relationship stages, key-fact types and their labels) and ``limits`` (a
deployment's defaults and limits as one typed object)."""
