"""The agent engine: one async turn loop shared by the TUI, the server and the CLI.

Public surface:
    Agent.start(TurnRequest) -> TurnHandle
        (the turn in its own task: `events()` end with TurnCompleted; `stop(code)`,
        `aclose(grace)`, `result`; see agent/turn_handle.py)
    events: the typed event vocabulary every front end consumes
    Provider: the model seam (OpenAI-compatible by default)
"""
