"""What a LangGraph server loads (``langgraph.json``): the graph factories and the auth
handler."""
