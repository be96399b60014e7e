"""Health, models, capabilities, auth, CORS, security headers, error envelopes, body limits."""

from __future__ import annotations

import io
import os

import pytest
from _api_harness import SERVER_KEY, MakeServer, Server

from hermes import __version__
from hermes.server.http.middleware import check_bearer
from hermes.server.http.routes import TABLE
from hermes.testing.upstream import text_reply

SECURITY = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
}


def assert_envelope(data: dict, code: str | None = None) -> dict:
    error = data["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code
    return error


# ---- health --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
async def test_health_ok_with_security_headers(server: Server, path: str) -> None:
    resp = await server.client.get(path)
    assert resp.status == 200
    data = await resp.json()
    assert data["status"] == "ok"
    assert data["platform"] == "hermes-agent"
    assert data["version"]
    for name, value in SECURITY.items():
        assert resp.headers.get(name) == value


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
async def test_liveness_needs_no_key_and_tells_nothing_but_status(auth_server: Server, path: str) -> None:
    resp = await auth_server.client.get(path)
    assert resp.status == 200
    data = await resp.json()
    # Only the status and what /v1/models tells anyone anyway: no worker, instance,
    # storage, counters or errors (those are /health/detailed's, behind the key).
    assert data == {"status": "ok", "platform": "hermes-agent", "version": __version__}


async def test_health_detailed_without_the_key_tells_the_reference_fields_only(auth_server: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        resp = await auth_server.client.get("/health/detailed", headers=headers)
        assert resp.status == 200
        data = await resp.json()
        assert set(data) == {
            "status", "platform", "gateway_state", "platforms", "active_agents", "exit_reason", "updated_at", "pid",
        }  # fmt: skip
        assert (data["status"], data["platform"], data["gateway_state"]) == ("ok", "hermes-agent", "running")
        assert data["platforms"] == {} and data["active_agents"] == 0 and data["exit_reason"] is None
        assert data["pid"] == os.getpid() and isinstance(data["updated_at"], str)
    resp = await auth_server.client.get("/health/detailed", headers=auth_server.auth)
    assert resp.status == 200
    data = await resp.json()
    assert data["pid"] == os.getpid()
    assert {"version", "instance_id", "storage", "checks", "api_server"} <= set(data)
    assert data["api_server"]["last_upstream_error"] is None


async def test_health_detailed_is_open_like_the_whole_api_without_a_key(server: Server) -> None:
    # No key configured: every route is open (serve refuses that off loopback), and
    # /health/detailed tells everything, as every other route does.
    assert (await server.client.get("/v1/models")).status == 200
    resp = await server.client.get("/health/detailed")
    assert resp.status == 200
    data = await resp.json()
    assert data["status"] == "ok"
    assert {"instance_id", "storage", "checks", "api_server"} <= set(data)


async def test_only_liveness_is_documented_and_served_without_a_key(server: Server) -> None:
    doc = await (await server.client.get("/openapi.json")).json()
    open_paths = {path for path, item in doc["paths"].items() for op in item.values() if op.get("security") == []}
    assert open_paths == {"/health", "/v1/health"}
    # /health/detailed: the key is optional (it shows more).
    assert doc["paths"]["/health/detailed"]["get"]["security"] == [{}, {"bearer": []}]
    assert TABLE.open_paths == open_paths | {"/health/detailed"}


async def test_health_detailed_exposes_no_secrets_or_paths(make_server: MakeServer) -> None:
    srv = await make_server(server_key=SERVER_KEY)
    resp = await srv.client.get("/health/detailed", headers=srv.auth)
    text = await resp.text()
    data = await resp.json()
    assert data["status"] == "ok"
    assert data["platforms"] == {}
    assert isinstance(data["pid"], int)
    assert isinstance(data["updated_at"], str)
    assert data["gateway_state"] == "running"
    assert SERVER_KEY not in text
    assert "sk-upstream" not in text
    assert str(srv.settings.home) not in text


# ---- models / capabilities ---------------------------------------------------------------------


async def test_models_lists_advertised_name(server: Server) -> None:
    resp = await server.client.get("/v1/models")
    assert resp.status == 200
    data = await resp.json()
    assert data["object"] == "list"
    assert len(data["data"]) == 1
    model = data["data"][0]
    assert model["id"] == "hermes-agent"
    assert model["owned_by"] == "hermes"
    assert model["root"] == "hermes-agent"
    assert model["parent"] is None
    # What answers behind the agent: the provider seam and its model.
    assert model["hermes"] == {"provider": "openai", "model": server.agent.model}


async def test_models_uses_configured_name(make_server: MakeServer) -> None:
    srv = await make_server(server_model_name="my-custom-agent")
    data = await (await srv.client.get("/v1/models")).json()
    assert data["data"][0]["id"] == "my-custom-agent"
    assert data["data"][0]["root"] == "my-custom-agent"


async def test_capabilities_document(server: Server) -> None:
    resp = await server.client.get("/v1/capabilities")
    assert resp.status == 200
    data = await resp.json()
    assert data["object"] == "hermes.api_server.capabilities"
    assert data["platform"] == "hermes-agent"
    assert data["model"] == "hermes-agent"
    assert data["auth"] == {"type": "bearer", "required": False}
    assert data["runtime"]["mode"] == "server_agent"
    assert data["runtime"]["tool_execution"] == "server"
    assert data["runtime"]["split_runtime"] is False
    assert "API-server host" in data["runtime"]["description"]
    features = data["features"]
    assert features["chat_completions"] is True
    assert features["responses_api"] is True
    assert features["session_continuity_header"] == "X-Hermes-Session-Id"
    assert features["session_key_header"] == "X-Hermes-Session-Key"
    assert features["tool_progress_events"] is True
    assert features["tool_progress_events_mode"] == "auto"
    assert features["cors"] is False
    assert data["endpoints"]["chat_completions"] == {"method": "POST", "path": "/v1/chat/completions"}
    assert data["endpoints"]["responses"] == {"method": "POST", "path": "/v1/responses"}


async def test_capabilities_reflect_config(make_server: MakeServer) -> None:
    srv = await make_server(
        server_key=SERVER_KEY, server_tool_progress_events="false", server_cors_origins=("http://localhost:3000",)
    )
    resp = await srv.client.get("/v1/capabilities")
    assert resp.status == 401
    data = await (await srv.client.get("/v1/capabilities", headers=srv.auth)).json()
    assert data["auth"]["required"] is True
    assert data["features"]["tool_progress_events"] is False
    assert data["features"]["cors"] is True


# ---- auth --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/v1/models"),
        ("GET", "/v1/capabilities"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("GET", "/v1/responses/resp_any"),
        ("DELETE", "/v1/responses/resp_any"),
        ("GET", "/openapi.json"),
    ],
)
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-key", "Basic dXNlcjpwYXNz", "Bearer", "sk-secret", "Bearer sk-secret-but-longer"],
)
async def test_protected_routes_answer_401_envelope(
    auth_server: Server, method: str, path: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    resp = await auth_server.client.request(method, path, headers=headers, json={"input": "x"})
    assert resp.status == 401
    data = await resp.json()
    assert data == {
        "error": {
            "message": "Invalid API key",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    assert auth_server.upstream.requests == []


async def test_valid_key_passes_and_token_is_stripped(auth_server: Server) -> None:
    for value in (f"Bearer {SERVER_KEY}", f"bearer   {SERVER_KEY}  "):
        resp = await auth_server.client.get("/v1/models", headers={"Authorization": value})
        assert resp.status == 200


def test_bearer_check_is_bytes_based_and_never_raises() -> None:
    assert check_bearer(None, None) is True
    assert check_bearer("sk-é", "Bearer sk-é") is True
    assert check_bearer("sk-secret", "Bearer sk-\udcff") is False
    assert check_bearer("sk-secret", "Bearer ключ") is False
    assert check_bearer("sk-secret", "") is False


async def test_non_ascii_token_is_401_not_500(auth_server: Server) -> None:
    resp = await auth_server.client.get(
        "/v1/models", headers={"Authorization": "Bearer ключ".encode().decode("latin-1")}
    )
    assert resp.status == 401


# ---- CORS ------------------------------------------------------------------------------------


async def test_no_cors_headers_by_default(server: Server) -> None:
    resp = await server.client.get("/health")
    assert resp.headers.get("Access-Control-Allow-Origin") is None


async def test_browser_origin_rejected_by_default(server: Server) -> None:
    resp = await server.client.get("/health", headers={"Origin": "http://evil.example"})
    assert resp.status == 403
    assert resp.headers.get("Access-Control-Allow-Origin") is None
    assert_envelope(await resp.json())


async def test_preflight_rejected_by_default(server: Server) -> None:
    resp = await server.client.options(
        "/v1/chat/completions",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert resp.status == 403
    assert resp.headers.get("Access-Control-Allow-Origin") is None


@pytest.fixture
async def cors_server(make_server: MakeServer) -> Server:
    return await make_server(server_key=SERVER_KEY, server_cors_origins=("http://localhost:3000",))


async def test_allowed_origin_gets_cors_headers(cors_server: Server) -> None:
    resp = await cors_server.client.get("/health", headers={"Origin": "http://localhost:3000"})
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert resp.headers["Vary"] == "Origin"
    methods = resp.headers["Access-Control-Allow-Methods"]
    for method in ("GET", "POST", "PATCH", "DELETE", "OPTIONS"):
        assert method in methods
    assert "X-Hermes-Session-Id" in resp.headers["Access-Control-Expose-Headers"]
    assert "X-Hermes-Session-Key" in resp.headers["Access-Control-Expose-Headers"]


async def test_unknown_origin_rejected_even_when_cors_configured(cors_server: Server) -> None:
    resp = await cors_server.client.get("/v1/models", headers={"Origin": "http://evil.example", **cors_server.auth})
    assert resp.status == 403


async def test_preflight_for_configured_origin_needs_no_key(cors_server: Server) -> None:
    resp = await cors_server.client.options(
        "/v1/chat/completions",
        headers={
            "Origin": "http://localhost:3000",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "Authorization, Content-Type, Idempotency-Key",
        },
    )
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    allowed = resp.headers["Access-Control-Allow-Headers"]
    for header in (
        "Authorization",
        "Content-Type",
        "Idempotency-Key",
        "Last-Event-ID",
        "X-Hermes-Session-Id",
        "X-Hermes-Session-Key",
        "X-Hermes-Tool-Progress",
    ):
        assert header in allowed
    assert resp.headers["Access-Control-Max-Age"] == "600"


async def test_wildcard_origin(make_server: MakeServer) -> None:
    srv = await make_server(server_cors_origins=("*",))
    resp = await srv.client.get("/health", headers={"Origin": "http://anything.example"})
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"


async def test_cors_headers_on_error_responses(cors_server: Server) -> None:
    resp = await cors_server.client.get("/v1/models", headers={"Origin": "http://localhost:3000"})
    assert resp.status == 401
    assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"


# ---- envelopes for router errors and body limits ------------------------------------------------


async def test_unknown_route_is_404_envelope(server: Server) -> None:
    resp = await server.client.get("/v1/nope")
    assert resp.status == 404
    assert_envelope(await resp.json(), "not_found")
    for name, value in SECURITY.items():
        assert resp.headers.get(name) == value


async def test_wrong_method_is_405_envelope(server: Server) -> None:
    resp = await server.client.get("/v1/chat/completions")
    assert resp.status == 405
    assert_envelope(await resp.json(), "method_not_allowed")
    assert "POST" in resp.headers["Allow"]


async def test_body_over_10mb_is_413(server: Server) -> None:
    body = b'{"messages": [{"role": "user", "content": "' + b"x" * 10_000_001 + b'"}]}'
    # A file-like body: aiohttp warns that raw bytes this large would block the loop while sent.
    resp = await server.client.post(
        "/v1/chat/completions", data=io.BytesIO(body), headers={"Content-Type": "application/json"}
    )
    assert resp.status == 413
    assert_envelope(await resp.json(), "body_too_large")
    assert server.upstream.requests == []


async def test_chunked_body_over_10mb_is_413(server: Server) -> None:
    async def chunks():
        yield b'{"input": "'
        for _ in range(11):
            yield b"x" * 1_000_000
        yield b'"}'

    resp = await server.client.post("/v1/responses", data=chunks(), headers={"Content-Type": "application/json"})
    assert resp.status == 413
    assert_envelope(await resp.json(), "body_too_large")
    assert server.upstream.requests == []


async def test_sse_responses_carry_cors_and_security_headers(cors_server: Server) -> None:
    cors_server.upstream.enqueue(text_reply("hi"), text_reply("hi"))
    headers = {**cors_server.auth, "Origin": "http://localhost:3000"}
    for path, body in (
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "stream": True}),
        ("/v1/responses", {"input": "x", "stream": True}),
    ):
        resp = await cors_server.client.post(path, json=body, headers=headers)
        await resp.text()
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        assert "X-Hermes-Session-Id" in resp.headers["Access-Control-Expose-Headers"]
        assert resp.headers["X-Content-Type-Options"] == "nosniff"


async def test_stream_with_bad_idempotency_key_is_400(server: Server) -> None:
    resp = await server.client.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "stream": True},
        headers={"Idempotency-Key": "bad key"},
    )
    assert resp.status == 400
    assert server.upstream.requests == []
