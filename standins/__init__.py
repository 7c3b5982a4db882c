"""Stand-ins for what groupmind talks to (an OpenAI-compatible model server, a OneBot v11
implementation, LangSmith) and the servers and databases the tests and benchmarks run
against. Shared by ``tests/`` and ``benchmarks/``; not part of the installed package."""
