"""web_fetch against a scripted site on loopback: Markdown, caps, refusals, who may fetch what."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from web_site import Site

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.web import make_web_fetch_tool
from hermes.agent.types import ApprovalDecision, ApprovalRequest
from hermes.agent.web import addresses
from hermes.agent.web.fetch import WebPolicy
from hermes.errors import ToolError


class Approver:
    def __init__(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decision


def _ctx(tmp_path: Path, approver: Approver | None = None) -> ToolContext:
    return ToolContext(session_id="web", cwd=tmp_path, approve=approver)


async def _fetch(policy: WebPolicy, ctx: ToolContext, url: str, prompt: str | None = None) -> str:
    args = {"url": url} if prompt is None else {"url": url, "prompt": prompt}
    return await make_web_fetch_tool(policy).handler(args, ctx)


LOOPBACK_ALLOWED = WebPolicy(allow=("localhost",), allow_private=True)


async def test_an_html_page_reads_as_markdown_marked_as_from_the_web(site: Site, tmp_path: Path) -> None:
    result = await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/docs"), prompt="how to greet")
    head, *rest = result.splitlines()
    assert head.startswith(f"[web content from {site.url('/docs')} · Greeting docs · read as Markdown · untrusted")
    body = "\n".join(rest)
    assert "[looking for: how to greet]" in body
    assert "# greet()" in body and "**greeting**" in body and "`greet(name)`" in body
    assert f"[the API]({site.url('/api')})" in body  # links made absolute
    assert '```\ngreet("Ada")  # Hello, Ada\n```' in body
    assert "alert" not in body and "color:red" not in body  # scripts and styles dropped
    assert "* fast" in body


async def test_text_and_json_are_kept_as_they_are(site: Site, tmp_path: Path) -> None:
    plain = await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/plain"))
    assert plain.splitlines()[1:] == ["just text", "line two", ""] or plain.endswith("just text\nline two\n")
    assert "read as text" in plain.splitlines()[0]
    data = await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/data.json"))
    assert '{"name": "hermes", "ok": true}' in data


async def test_the_size_cap_cuts_the_page_and_says_so(site: Site, tmp_path: Path) -> None:
    policy = WebPolicy(allow=("localhost",), allow_private=True, max_bytes=2048)
    result = await _fetch(policy, _ctx(tmp_path), site.url("/big"))
    assert result.endswith("[cut: only the first 2 KB of the page were read (web_fetch_max_kb)]")
    assert result.count("word") < 500


async def test_binary_content_is_refused_with_its_type(site: Site, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="image/png, not text"):
        await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/logo.png"))


async def test_http_errors_redirect_loops_and_bad_urls_are_one_line_errors(site: Site, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="HTTP 404"):
        await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/missing"))
    with pytest.raises(ToolError, match="more than 5 redirects"):
        await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), site.url("/loop"))
    for bad, why in [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.com/x", "only http and https"),
        ("http://user:pw@localhost/", "user name or password"),
        ("http:///nohost", "has no host"),
    ]:
        result = await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path), bad)
        assert result.startswith("BLOCKED by the web policy:") and why in result, result


async def test_a_slow_page_ends_at_the_timeout(site: Site, tmp_path: Path) -> None:
    policy = WebPolicy(allow=("localhost",), allow_private=True, timeout=0.5)
    with pytest.raises(ToolError, match="within 0.5 s"):
        await _fetch(policy, _ctx(tmp_path), site.url("/slow"))


# ---- private addresses ------------------------------------------------------------------


async def test_a_name_that_resolves_to_loopback_is_refused_without_web_allow_private(
    site: Site, tmp_path: Path
) -> None:
    policy = WebPolicy(allow=("*",))
    result = await _fetch(policy, _ctx(tmp_path), site.url("/docs"))
    assert result.startswith("BLOCKED by the web policy:")
    assert "resolves to a private, loopback or link-local address" in result and "web_allow_private" in result
    assert site.hits == []


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]", "169.254.169.254", "10.0.0.7", "[::ffff:127.0.0.1]"])
async def test_a_private_address_written_as_an_ip_is_refused(host: str, site: Site, tmp_path: Path) -> None:
    result = await _fetch(WebPolicy(allow=("*",)), _ctx(tmp_path), f"http://{host}:{site.port}/docs")
    assert result.startswith("BLOCKED by the web policy:") and "private, loopback or link-local" in result
    assert site.hits == []


async def test_a_redirect_to_a_private_address_is_refused(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.1 plays a public server here; every other private address keeps its rule
    real = addresses.is_public
    monkeypatch.setattr(addresses, "is_public", lambda ip: ip == ipaddress.ip_address("127.0.0.1") or real(ip))
    policy = WebPolicy(allow=("*",))
    public = site.url("/docs", host="127.0.0.1")
    assert "greet()" in await _fetch(policy, _ctx(tmp_path), public)  # the stand-in is reachable
    for target in ("http://169.254.169.254/latest/meta-data/", f"http://[::1]:{site.port}/docs", "http://10.1.1.1/"):
        site.hits.clear()
        result = await _fetch(policy, _ctx(tmp_path), site.url(f"/hop?to={target}", host="127.0.0.1"))
        assert result.startswith("BLOCKED by the web policy:"), result
        assert target.split("/")[2].split(":")[0].strip("[]") in result or "private" in result
        assert len(site.hits) == 1 and site.hits[0].startswith("/hop?")  # the first hop only, never the private one


# ---- who may fetch what -----------------------------------------------------------------


async def test_a_domain_outside_web_allow_is_refused_when_nobody_can_approve(site: Site, tmp_path: Path) -> None:
    policy = WebPolicy(allow=("docs.python.org",), allow_private=True)
    result = await _fetch(policy, _ctx(tmp_path), site.url("/docs"))
    assert result.startswith("DENIED:") and "localhost is not in web_allow" in result
    assert "no one can approve it here" in result and "hermes config set web_allow localhost" in result
    assert site.hits == []


async def test_web_allow_covers_a_domain_and_its_subdomains_only() -> None:
    policy = WebPolicy(allow=("python.org", "*.example.com"))
    assert policy.allows("python.org") and policy.allows("docs.python.org") and policy.allows("DOCS.Python.org.")
    assert policy.allows("a.example.com") and policy.allows("example.com")
    assert not policy.allows("evilpython.org") and not policy.allows("python.org.evil.com")
    assert WebPolicy(allow=("*",)).allows("anything.test") and not WebPolicy().allows("python.org")


async def test_an_allowed_domain_is_fetched_without_asking(site: Site, tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)
    result = await _fetch(LOOPBACK_ALLOWED, _ctx(tmp_path, approver), site.url("/docs"))
    assert "greet()" in result and approver.requests == []


async def test_a_session_grant_covers_that_domain_only(site: Site, tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.SESSION)
    policy = WebPolicy(allow_private=True)
    ctx = _ctx(tmp_path, approver)
    assert "greet()" in await _fetch(policy, ctx, site.url("/docs"))
    assert "just text" in await _fetch(policy, ctx, site.url("/plain"))  # same domain: not asked again
    assert [r.command for r in approver.requests] == [site.url("/docs")]
    assert approver.requests[0].grant == "fetches from localhost only"
    approver.decision = ApprovalDecision.DENY
    other = await _fetch(policy, ctx, site.url("/docs", host="127.0.0.1"))  # another host asks again
    assert other.startswith("DENIED:") and "the user denied it" in other
    assert len(approver.requests) == 2


async def test_a_redirect_to_another_domain_asks_about_that_domain(site: Site, tmp_path: Path) -> None:
    approver = Approver(ApprovalDecision.DENY)
    policy = WebPolicy(allow=("localhost",), allow_private=True)
    to = site.url("/docs", host="127.0.0.1")
    result = await _fetch(policy, _ctx(tmp_path, approver), site.url(f"/hop?to={to}"))
    assert result.startswith("DENIED:") and "127.0.0.1 is not in web_allow" in result
    assert [r.command for r in approver.requests] == [to]
    assert site.hits == [f"/hop?to={to}"]
