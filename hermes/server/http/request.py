"""Request parsing shared by the handlers: JSON bodies, bool-ish fields, session ids,
and OpenAI message content normalisation (the session headers are read by
`hermes.server.http.request_session`).

Every failure raises a typed `RequestValidationError` with a
``param`` naming the offending field; nothing reaches the agent or a store from a
rejected request.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from aiohttp import web

from hermes.server.http.errors import PayloadTooLarge, RequestValidationError
from hermes.server.http.schema import CONTENT_PARTS_DOC
from hermes.server.http.state import SETTINGS

MAX_TEXT_LENGTH = 65_536
MAX_CONTENT_PARTS = 1_000
MAX_HEADER_VALUE = 256
MAX_KEY_LENGTH = 255

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

CONTENT_DOC: dict[str, Any] = {
    "anyOf": [{"type": "string"}, CONTENT_PARTS_DOC, {"type": "null"}]
}
"""The documented shape of OpenAI message content (`normalize_content` checks it)."""

TEXT_PART_TYPES = {"text", "input_text", "output_text"}
IMAGE_PART_TYPES = {"image_url", "input_image"}
FILE_PART_TYPES = {"file", "input_file"}


PARSED_BODY: web.RequestKey[object] = web.RequestKey("hermes.parsed_body", object)
"""Request key: the body as parsed JSON, left by the JSON guard middleware so the handler
does not parse it again (taken by `read_json_object`, once)."""


async def read_json_object(request: web.Request) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 ("Invalid JSON in request body")."""
    data = request.pop(PARSED_BODY, None)
    if isinstance(data, dict):
        return data
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise PayloadTooLarge() from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise RequestValidationError("Invalid JSON in request body", code="invalid_json") from None
    if not isinstance(data, dict):
        raise RequestValidationError("Request body must be a JSON object", code="invalid_json")
    return data


def coerce_bool(value: Any, default: bool) -> bool:
    """bool → itself; None → default; 1/true/yes/on and 0/false/no/off strings; numbers → bool."""
    if isinstance(value, bool):
        return value
    if value is None:
        return default
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        return default
    if isinstance(value, (int, float)):
        return bool(value)
    return default


def optional_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RequestValidationError(f"'{name}' must be a string", code="invalid_type", param=name)
    return value


def has_server_key(request: web.Request) -> bool:
    return request.config_dict[SETTINGS].server_key is not None


def has_control(value: str) -> bool:
    """A CR, LF or NUL: never allowed in a header value hermes echoes or stores."""
    return any(ch in value for ch in ("\r", "\n", "\x00"))


_SAFE_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$")
SESSION_ID_PATTERN = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._:@-]*$"
"""What `validate_session_id` accepts, as one JSON Schema pattern (for the document)."""


def validate_session_id(value: str, *, param: str) -> str:
    """A path-safe session id (`SESSION_ID_PATTERN`, ≤256 chars), else 400 `invalid_session_id`."""
    if len(value) > MAX_HEADER_VALUE:
        raise RequestValidationError("Session ID too long", code="invalid_session_id", param=param)
    if has_control(value) or not _SAFE_SESSION_ID.match(value) or ".." in value:
        raise RequestValidationError("Invalid session ID", code="invalid_session_id", param=param)
    return value


_SDK_AGENT = re.compile(r"(?:^|[\s(;])(?:ai-sdk[/-]|litellm/|codex_[a-z_]+/)", re.IGNORECASE)
"""User-Agent tokens of SDK clients that send no `X-Stainless-Lang`: the Vercel AI SDK
(`ai-sdk/…`, `ai-sdk-openai-compatible/…`, `ai-sdk-provider-utils/…`), LiteLLM, whose
Responses API talks HTTP itself (`litellm/1.110.2`; its chat completions go through the
openai SDK and carry `X-Stainless-Lang`), and Codex CLI (`<originator>/<version> (os; arch)
terminal`, the originator being `codex_exec` for `codex exec`, `codex_cli_rs` for the TUI,
`codex_vscode`…): it would try to run a server-run tool sent as a `function_call` itself."""


def is_sdk_client(request: web.Request) -> bool:
    """An "SDK client" (docs/api-decisions.md, "Real clients"): `X-Stainless-Lang` (the official
    OpenAI SDKs and everything built on them) or an SDK's own User-Agent token
    (`_SDK_AGENT`: the Vercel AI SDK, LiteLLM, Codex CLI)."""
    if "X-Stainless-Lang" in request.headers:
        return True
    return _SDK_AGENT.search(request.headers.get("User-Agent", "")) is not None


def _opted_in(request: web.Request) -> bool | None:
    """`X-Hermes-Tool-Progress` as a bool (None when absent)."""
    opt = request.headers.get("X-Hermes-Tool-Progress")
    return None if opt is None else coerce_bool(opt, False)


def tool_progress_enabled(request: web.Request) -> bool:
    """Whether named `hermes.*` SSE frames go to this client (docs/api-decisions.md,
    "Named SSE frames").

    ``auto``: yes, except to SDK clients (`is_sdk_client`), unless the request opts in
    with ``X-Hermes-Tool-Progress: true``.
    """
    mode = request.config_dict[SETTINGS].server_tool_progress_events.strip().lower()
    if mode in _TRUE:
        return True
    if mode in _FALSE:
        return False
    opt = _opted_in(request)
    if opt is not None:
        return opt
    return not is_sdk_client(request)


ToolItemForm = Literal["function_call", "mcp_call"]
"""How a server-run tool appears in Responses output (see `hermes.server.openai.tool_items`)."""


def tool_item_form(request: web.Request) -> ToolItemForm:
    """`mcp_call` for SDK clients (they take it as already executed), unless the request
    opts in with ``X-Hermes-Tool-Progress: true``; `function_call` + `function_call_output`
    for everyone else (Open WebUI draws tool cards for those). docs/api-decisions.md, "Real clients"."""
    if is_sdk_client(request) and not _opted_in(request):
        return "mcp_call"
    return "function_call"


# ---- content normalisation ------------------------------------------------------------------


def _check_text(text: str, param: str) -> str:
    if len(text) > MAX_TEXT_LENGTH:
        raise RequestValidationError(
            f"Text content exceeds {MAX_TEXT_LENGTH} characters.", code="content_too_long", param=param
        )
    return text


def _image_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    url: Any
    detail: Any
    if part.get("type") == "image_url":
        spec = part.get("image_url")
        if isinstance(spec, str):
            url, detail = spec, part.get("detail")
        elif isinstance(spec, dict):
            url, detail = spec.get("url"), spec.get("detail")
        else:
            url, detail = None, None
    else:
        url, detail = part.get("image_url"), part.get("detail")
        if isinstance(url, dict):
            url, detail = url.get("url"), url.get("detail", detail)
    if not isinstance(url, str) or not url.strip():
        raise RequestValidationError(
            "Image parts must include a non-empty image URL.", code="invalid_image_url", param=param
        )
    url = url.strip()
    lowered = url.lower()
    if lowered.startswith("data:"):
        if not lowered.startswith("data:image/") or "," not in url:
            raise RequestValidationError(
                "Only image data URLs are supported. Non-image data payloads are not supported.",
                code="unsupported_content_type",
                param=param,
            )
    elif not (lowered.startswith(("http://", "https://"))):
        raise RequestValidationError(
            "Image inputs must use http(s) URLs or data:image/... URLs.", code="invalid_image_url", param=param
        )
    image: dict[str, Any] = {"url": url}
    if detail is not None:
        if not isinstance(detail, str) or not detail.strip():
            raise RequestValidationError(
                "Image detail must be a non-empty string when provided.", code="invalid_content_part", param=param
            )
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}


def normalize_content(content: Any, param: str) -> str | list[dict[str, Any]]:
    """OpenAI content (string or parts) → a string, or text/image_url parts when images are present."""
    if content is None:
        return ""
    if isinstance(content, str):
        return _check_text(content, param)
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise RequestValidationError(
            "Content must be a string or an array of content parts.", code="invalid_content", param=param
        )
    if len(content) > MAX_CONTENT_PARTS:
        raise RequestValidationError(
            f"Content arrays are limited to {MAX_CONTENT_PARTS} parts.", code="invalid_content", param=param
        )
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    has_image = False
    for part in content:
        if isinstance(part, str):
            texts.append(_check_text(part, param))
            parts.append({"type": "text", "text": part})
            continue
        if not isinstance(part, dict):
            raise RequestValidationError(
                "Content parts must be strings or objects.", code="invalid_content_part", param=param
            )
        kind = part.get("type")
        if not isinstance(kind, str):
            raise RequestValidationError(
                "Content parts need a string 'type'.", code="invalid_content_part", param=param
            )
        if kind in TEXT_PART_TYPES:
            text = part.get("text")
            if not isinstance(text, str):
                raise RequestValidationError(
                    "Text parts must carry a string 'text'.", code="invalid_content_part", param=param
                )
            texts.append(_check_text(text, param))
            parts.append({"type": "text", "text": text})
        elif kind in IMAGE_PART_TYPES:
            has_image = True
            parts.append(_image_part(part, param))
        elif kind in FILE_PART_TYPES:
            raise RequestValidationError(
                "Inline image inputs are supported, but uploaded files and document inputs are not "
                "supported on this endpoint.",
                code="unsupported_content_type",
                param=param,
            )
        else:
            raise RequestValidationError(
                f"Unsupported content part type {str(kind)[:64]!r}. Only text and image_url/input_image "
                "parts are supported.",
                code="unsupported_content_type",
                param=param,
            )
    if has_image:
        return parts
    return _check_text("\n".join(texts), param)


def has_visible_payload(content: str | list[dict[str, Any]]) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return any(
        p.get("type") == "image_url" or (p.get("type") == "text" and str(p.get("text", "")).strip())
        for p in content
    )


def validate_key(raw: str | None) -> str | None:
    """`Idempotency-Key`: absent → None; else 1–255 visible ASCII characters."""
    if raw is None:
        return None
    if not (1 <= len(raw) <= MAX_KEY_LENGTH) or any(not (33 <= ord(ch) <= 126) for ch in raw):
        raise RequestValidationError(
            "Idempotency-Key must be 1-255 visible ASCII characters",
            code="invalid_idempotency_key",
            param="Idempotency-Key",
        )
    return raw
