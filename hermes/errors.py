"""Every error hermes raises on purpose, as one tree with structured fields.

    HermesError
    ├── UsageError            bad command-line input            (exit 2)
    ├── ConfigError           missing or invalid configuration  (exit 2)
    ├── ProviderError         the model endpoint failed          (exit 1)
    │   ├── ProviderAuthError       401/403: never retried
    │   ├── ProviderTimeout         connect/read timeout, stale stream
    │   ├── ProviderConnectionError connection refused/reset/lost
    │   ├── ProviderRateLimited     429
    │   ├── ContextLengthExceeded   the request does not fit the model's context
    │   └── StreamingUnsupported    the endpoint cannot stream
    ├── ToolError             a tool failed (becomes a tool result, never a crash)
    ├── SessionNotFound / MessageNotFound                        (exit 1)
    ├── CheckpointError       a file checkpoint could not be taken or restored
    │   ├── FilesChangedOutside   undo/redo would overwrite files edited since  (HTTP 409)
    │   ├── RestoreRefused        undo/redo would write outside or through a symlink, or a
    │   │                         protected path; nothing was changed           (HTTP 409)
    │   ├── NothingToUndo         no turn to undo or redo                       (HTTP 409)
    │   └── TurnInProgress        the session has a turn running                (HTTP 409)
    └── StoreError            the database is unusable           (exit 1)

Front ends map these to exit codes or HTTP envelopes in one place each; nothing
encodes a code inside a message string.
"""

from __future__ import annotations


class HermesError(Exception):
    """Base of every deliberate hermes error."""

    exit_code: int = 1
    code: str = "hermes_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(HermesError):
    exit_code = 2
    code = "usage_error"


class ConfigError(HermesError):
    exit_code = 2
    code = "config_error"


class ProviderError(HermesError):
    """The model endpoint failed.

    Attributes:
        status: HTTP status from the upstream, when there was one.
        retryable: whether a fresh request may succeed (transient network trouble, 429, 5xx).
        retry_after: seconds the upstream asked us to wait, when it said.
    """

    code = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.provider = provider


class ProviderAuthError(ProviderError):
    code = "authentication_failed"


class ProviderTimeout(ProviderError):
    code = "provider_timeout"


class ProviderConnectionError(ProviderError):
    code = "provider_unreachable"


class ProviderRateLimited(ProviderError):
    code = "rate_limited"


class ContextLengthExceeded(ProviderError):
    """The upstream refused the request as longer than the model's context window."""

    code = "context_length_exceeded"


class StreamingUnsupported(ProviderError):
    code = "streaming_unsupported"


class ToolError(HermesError):
    code = "tool_error"


class SessionNotFound(HermesError):
    code = "session_not_found"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}")
        self.session_id = session_id


class MessageNotFound(HermesError):
    code = "message_not_found"

    def __init__(self, message_id: int | str, session_id: str | None = None) -> None:
        where = f" in session {session_id!r}" if session_id else ""
        super().__init__(f"no message with id {message_id!r}{where}")
        self.message_id = message_id
        self.session_id = session_id


class CheckpointError(HermesError):
    """Git failed, or is missing, for a file checkpoint (hermes/checkpoints)."""

    code = "checkpoint_error"


class FilesChangedOutside(CheckpointError):
    """Undo or redo would overwrite files changed since the checkpoint (outside hermes)."""

    code = "files_changed"

    def __init__(self, paths: list[str]) -> None:
        super().__init__("changed since the checkpoint, not overwritten: " + ", ".join(paths))
        self.paths = paths


class RestoreRefused(CheckpointError):
    """Undo or redo would write a path it may not: outside the worktree, through a symlinked
    folder, or a protected path. `force` never overrides it; nothing at all was changed."""

    code = "restore_refused"

    def __init__(self, refusals: list[tuple[str, str]], message: str | None = None) -> None:
        """`refusals`: (path relative to the worktree, why) for each refused path; `message`
        replaces the one made of them (a server's, relayed)."""
        listed = "; ".join(f"{path} ({why})" for path, why in refusals)
        super().__init__(message or f"refused, nothing was changed: {listed}")
        self.refusals = refusals
        self.paths = [path for path, _ in refusals]


class NothingToUndo(CheckpointError):
    """No visible turn to undo, or no undone turns that can come back."""

    code = "nothing_to_undo"


class TurnInProgress(CheckpointError):
    """The session has a turn running: its files and transcript are not settled."""

    code = "run_already_active"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} has a turn running; try again when it ends")
        self.session_id = session_id


class StoreError(HermesError):
    code = "store_error"


class StreamEnded(StoreError):
    """A run's event stream already has its final event: nothing more can be appended."""


class SessionBusy(StoreError):
    """The session already has an unsettled run: the storage holds at most one per session."""

    code = "run_already_active"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already has an unsettled run")
        self.session_id = session_id


class RunRefused(HermesError):
    """A turn was not admitted; nothing was written for it."""

    code = "run_refused"


class ServiceClosing(RunRefused):
    """The instance is shutting down and admits no new turn."""

    code = "server_shutting_down"

    def __init__(self) -> None:
        super().__init__("The server is shutting down.")


class RunAlreadyActive(RunRefused):
    """The session already has an unsettled run (`run_id`, when known)."""

    code = "run_already_active"

    def __init__(self, run_id: str | None) -> None:
        super().__init__("A run is already active for this session")
        self.run_id = run_id


class TooManyTurns(RunRefused):
    """`limit` turns are in flight already."""

    code = "rate_limit_exceeded"

    def __init__(self, limit: int) -> None:
        super().__init__(f"Too many concurrent runs (max {limit})")
        self.limit = limit


class RemoteError(HermesError):
    """`hermes chat --server` / `sessions --server`: the server answered with an error."""

    code = "remote_error"

    def __init__(self, message: str, *, status: int | None = None, remote_code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.remote_code = remote_code


class ServerUnreachable(RemoteError):
    """The server could not be reached (refused, reset, timed out)."""

    code = "server_unreachable"

    def __init__(self, message: str, *, connected: bool = True) -> None:
        super().__init__(message)
        self.connected = connected
        """False: no connection was made, so the request was certainly not received."""


class RemoteAuthError(RemoteError):
    """The server refused the key (401)."""

    code = "server_auth_failed"


class RemoteUnsupported(RemoteError):
    """Something a local session offers that the server does not offer over HTTP."""

    code = "remote_unsupported"
