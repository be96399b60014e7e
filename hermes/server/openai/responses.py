"""POST /v1/responses (JSON and SSE), GET and DELETE /v1/responses/{id}.

The request, its chain and the response object are in `hermes.server.openai.response_objects`;
the SSE form is `hermes.server.openai.responses_stream`; the pipeline (the non-streamed
completion) is `hermes.server.openai.turns` and idempotency `hermes.server.http.idempotent`,
shared with chat completions. A request without `previous_response_id`, `conversation` or
`conversation_history` resends its conversation in `input`: its session is placed by
`hermes.server.openai.conversation` (one session per conversation, keyed by the client's
chat id when it names one: `hermes.server.http.request_session`), as in chat.
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from typing import Any

from aiohttp import web

from hermes.agent.client_tools import ClientTools, first_results
from hermes.agent.types import TurnResult
from hermes.runs.idempotency import fingerprint
from hermes.runs.utility import is_utility_request
from hermes.runs.wire import Outcome
from hermes.server.http.errors import AgentIncomplete, NotFound, json_response
from hermes.server.http.idempotent import Answer, Preamble, answered, read_preamble
from hermes.server.http.request import tool_item_form
from hermes.server.http.request_session import requested_session, session_headers
from hermes.server.http.route import (
    IDEMPOTENCY_KEY,
    NOT_FOUND,
    TURN_ERRORS,
    UNAUTHORIZED,
    Component,
    Param,
    Reply,
    Route,
)
from hermes.server.http.state import AGENT, SETTINGS, STORAGE
from hermes.server.openai.client_tools import continuation_results, continued_history, responses_client_tools
from hermes.server.openai.conversation import (
    CONVERSATIONS,
    Placement,
    cross_instance_receipts,
    place_conversation,
)
from hermes.server.openai.response_objects import (
    RESPONSE_REQUEST,
    Chain,
    ResponsesRequest,
    envelope,
    error_object,
    output_items,
    parse_responses_body,
    referenced_items,
    resolve_chain,
    response_id,
    response_status,
    store_record,
    system_text,
)
from hermes.server.openai.responses_stream import stream_response
from hermes.server.openai.turns import (
    api_turn,
    compacted,
    run_to_end,
    stored_history,
    utility_engine,
    utility_turn,
)

IDEMPOTENCY_FIELDS = (
    "input",
    "instructions",
    "previous_response_id",
    "conversation",
    "conversation_history",
    "model",
    "store",
    "truncation",
    "tools",
    "text",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
)


async def create_response(request: web.Request) -> web.StreamResponse:
    app = request.app
    preamble = await read_preamble(request)
    store = app[STORAGE].responses
    references = await referenced_items(preamble.body, store)
    req = parse_responses_body(preamble.body, app[SETTINGS].server_model_name, references.get)
    chain = await resolve_chain(req, store)
    chain.history = first_results(chain.history)  # an output for a call hermes ran is ignored
    own_tools = app[AGENT].tools.names()
    client_tools = responses_client_tools(preamble.body, own_tools)
    utility = req.tool_results is None and is_utility_request(
        stream=req.stream, new_input=req.input, metadata=req.metadata
    )

    asked = requested_session(request, preamble.body, "chat_id")

    async def run(watch: bool) -> Answer:  # after the Idempotency-Key's receipt: a replay places nothing
        if utility or not _follows_conversation(req, chain):
            return await _respond(request, preamble, req, chain, utility, None, client_tools, own_tools, watch)
        async with place_conversation(
            app[STORAGE].sessions, app[CONVERSATIONS], history=chain.history,
            key=asked.chat_key, opening=None, receipts=cross_instance_receipts(app[STORAGE]),
            continuing=req.tool_results is not None,
        ) as placement:
            placed = replace(chain, session_id=placement.session_id)
            return await _respond(
                request, preamble, req, placed, utility, placement.how, client_tools, own_tools, watch,
                placement=placement,
            )  # fmt: skip

    return await answered(
        request, preamble, run, endpoint="responses",
        fingerprint=lambda: fingerprint(preamble.body, IDEMPOTENCY_FIELDS, session_key=preamble.session_key),
    )


def _follows_conversation(req: ResponsesRequest, chain: Chain) -> bool:
    """Whether the session comes from the resent input (`hermes.server.openai.conversation`):
    no previous response, no named conversation, no explicit history."""
    return chain.previous_response_id is None and req.conversation is None and req.conversation_history is None


async def _turn_history(request: web.Request, req: ResponsesRequest, chain: Chain, how: str | None) -> list[Any]:
    """The history the turn sends: the chain's, unless it continues a stored session that
    was compacted; then the summary and what came after it, as `chat -r` resumes (the
    chain's whole transcript would be summarised again on every turn). Only where the
    store holds the whole chain: no explicit `conversation_history`, no extra input items."""
    continues = (chain.previous_response_id is not None and not req.input_history) or how in (
        "keyed", "continued", "forked"
    )
    if req.conversation_history is not None or not continues:
        return chain.history
    stored = await stored_history(request, chain.session_id)
    if not compacted(stored):
        return chain.history
    return stored if req.tool_results is None else continued_history(chain.history, stored, req.tool_results)


async def _respond(
    request: web.Request, preamble: Preamble, req: ResponsesRequest, chain: Chain, utility: bool, how: str | None,
    client_tools: ClientTools | None, own_tools: list[str], watch: bool, *, placement: Placement | None = None,
) -> Answer:
    """Run the turn and answer it; `placement` (the session the resent input chose) is
    marked by the turn's end write, else once the turn has ended (`_settle`)."""
    app = request.app
    store = app[STORAGE].responses
    if utility:  # one plain model call: no session, not stored
        turn_request = utility_turn(req.input, chain.history, system_text(req, chain), req.output_format)
        headers: dict[str, str] = {}
    else:
        turn_request = api_turn(
            request,
            input=req.input,
            session_id=chain.session_id,
            history=await _turn_history(request, req, chain, how),
            client_prompt=system_text(req, chain),
            output_format=req.output_format,
            client_tools=client_tools,
            tool_results=None
            if req.tool_results is None
            else continuation_results(req.tool_results, chain.history, own_tools, param="input"),
            conversation_mark=None if placement is None else partial(placement.mark_of, req.input),
        )
        headers = session_headers(chain.session_id, preamble.session_key, placement=how)
    form = tool_item_form(request)
    settle = None if placement is None else partial(_settle, placement, req.input)
    if req.stream:
        return await stream_response(
            request, req, chain, turn_request, headers, form, record=preamble.idempotency_key is not None,
            settle=settle,
        )  # fmt: skip
    rid, created_at = response_id(), int(time.time())

    async def finish(result: TurnResult | None) -> Answer:
        if settle is not None:
            await settle(result)
        outcome = Outcome.of(result)
        status = response_status(result)
        error = error_object(result) if status == "failed" else None
        output = output_items(result, form) if result else []
        response = envelope(rid, created_at, req, chain, status=status, output=output, result=result, error=error)
        transcript: list[Any] = (
            list(result.messages) if result is not None else [{"role": "user", "content": req.input}]
        )
        if not utility:
            await store_record(store, req, chain, rid, response, transcript)
        out_headers = {**headers, **outcome.headers()}
        if outcome.hard_failure:
            failure = AgentIncomplete(
                outcome.error or "Agent run did not produce a response.",
                extra={"hermes": outcome.hermes, "response_id": rid},
            )
            return Answer(failure.status, failure.body(), out_headers)
        return Answer(200, response, out_headers)

    engine = utility_engine(request) if utility else None
    return await finish(await run_to_end(request, turn_request, watch=watch, engine=engine))


async def _settle(placement: Placement, input: Any, result: TurnResult | None) -> None:
    """Mark the placement after a turn whose end did not (a failed end write, a stop, a crash)."""
    if result is None:
        await placement.settle_from_store(input)  # the turn crashed: what it stored is the answer
    else:
        await placement.settle_after(input, result)


async def get_response(request: web.Request) -> web.Response:
    rid = request.match_info["response_id"]
    record = await request.app[STORAGE].responses.get(rid)
    if record is None or not isinstance(record.get("response"), dict):
        raise NotFound(f"Response not found: {rid[:256]}", code="response_not_found", param="response_id")
    return json_response(record["response"])


async def delete_response(request: web.Request) -> web.Response:
    rid = request.match_info["response_id"]
    if not await request.app[STORAGE].responses.delete(rid):
        raise NotFound(f"Response not found: {rid[:256]}", code="response_not_found", param="response_id")
    return json_response({"id": rid, "object": "response", "deleted": True})


RESPONSE = Component(
    "Response",
    {
        "type": "object",
        "required": ["id", "object", "status", "output"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "response"},
            "status": {"type": "string"},
            "output": {"type": "array", "items": {"type": "object"}},
        },
    },
)

_ONE_RESPONSE = "/v1/responses/{response_id}"
_ID = Param("response_id", "path", {"type": "string"})

ROUTES = (
    Route(
        "POST",
        "/v1/responses",
        create_response,
        operation_id="createResponse",
        endpoint="responses",
        summary="One agent turn, OpenAI Responses shape (JSON, or SSE with stream: true)",
        parameters=(IDEMPOTENCY_KEY,),
        body=RESPONSE_REQUEST,
        responses={
            200: Reply("A response object (or an SSE stream of response.* events)", RESPONSE, sse=True),
            **TURN_ERRORS,
            404: NOT_FOUND,
            502: Reply("The agent produced no usable answer (agent_incomplete)"),
        },
    ),
    Route(
        "GET",
        _ONE_RESPONSE,
        get_response,
        operation_id="getResponse",
        endpoint="response_get",
        summary="A stored response",
        parameters=(_ID,),
        responses={200: Reply("OK", RESPONSE), 401: UNAUTHORIZED, 404: NOT_FOUND},
    ),
    Route(
        "DELETE",
        _ONE_RESPONSE,
        delete_response,
        operation_id="deleteResponse",
        endpoint="response_delete",
        summary="Delete a stored response (and conversation names pointing at it)",
        parameters=(_ID,),
        responses={200: Reply("Deleted", {"type": "object"}), 401: UNAUTHORIZED, 404: NOT_FOUND},
    ),
)
