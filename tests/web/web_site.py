"""The scripted web site's address and what it was asked (imported by the web tests)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Site:
    """The site's address (`http://localhost:PORT`) and the paths it was asked for."""

    base: str
    port: int
    hits: list[str] = field(default_factory=list)

    def url(self, path: str, host: str = "localhost") -> str:
        return f"http://{host}:{self.port}{path}"


PAGE = """<!doctype html><html><head><title>Greeting docs</title><style>body{color:red}</style>
<script>alert('x')</script></head><body><h1>greet()</h1><p>Call <code>greet(name)</code> to get a
<b>greeting</b>. See <a href="/api">the API</a>.</p><pre><code>greet("Ada")  # Hello, Ada</code></pre>
<ul><li>fast</li><li>friendly</li></ul></body></html>"""
