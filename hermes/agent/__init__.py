"""The agent engine: one async turn loop shared by the TUI, the server and the CLI.

Public surface:
    Agent.run_turn(TurnRequest, interrupt=TurnInterrupt()) -> AsyncIterator[AgentEvent]
        (ends with TurnCompleted; `interrupt.interrupt()` stops it, see agent/interrupt.py)
    events: the typed event vocabulary every front end consumes
    Provider: the model seam (OpenAI-compatible by default)
"""
