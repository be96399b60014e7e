"""POST /v1/responses (placeholder while the module is written)."""
from __future__ import annotations
from typing import Any
ROUTES: list[Any] = []
OPENAPI_PATHS: dict[str, Any] = {}
