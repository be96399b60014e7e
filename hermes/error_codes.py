"""The machine-readable codes of a turn's outcome, shared by the engine, the server and the TUI.

A `TurnResult.error_code` is one of these (or the `code` of the `HermesError` that failed
the turn, e.g. ``provider_error``). Front ends branch on the code, never on message text.
"""

from __future__ import annotations

from typing import Final

INTERRUPTED: Final = "interrupted"
"""The user (TUI Esc, CLI Ctrl+C, an HTTP client's disconnect or stop) interrupted the turn."""
SERVER_SHUTDOWN: Final = "server_shutdown"
"""The server is shutting down; the turn was stopped and stored with its partial text."""
OUTPUT_TRUNCATED: Final = "output_truncated"
"""Some text was delivered but the answer is incomplete (output limit or a broken stream)."""
STREAM_STALLED: Final = "stream_stalled"
"""The stream went silent mid tool-call; the cut-off calls were not executed."""
MAX_ITERATIONS: Final = "max_iterations"
"""The turn used its model-call budget and ended with a forced summary."""
INTERNAL_ERROR: Final = "internal_error"
"""An unexpected exception inside hermes ended the turn (a bug or a broken store)."""
AGENT_ERROR: Final = "agent_error"
"""The server could not get a result from the engine at all."""
AGENT_INCOMPLETE: Final = "agent_incomplete"
"""HTTP envelope code for a failed turn with no usable text (502)."""
PROMPT_BLOCKED: Final = "prompt_blocked"
"""A UserPromptSubmit hook refused the prompt (its message is the error); no model was called."""
