"""The operator's console (docs/console.md): server-rendered pages over one bot's stores,
served by the LangGraph server beside the graphs (``langgraph.json`` ``http.app``) and by
``groupmind console`` for in-process bots; Prometheus metrics at ``/metrics``."""
