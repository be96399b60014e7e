"""The documents the code cites are in the repository and say what is cited.

A citation is a path of a Markdown file of this repository (`docs/api-decisions.md`,
`tests/clients/FINDINGS.md`, `README`), optionally followed by a quoted section name:
`docs/api-decisions.md, "Idempotency"`. The file must exist and hold that section (a heading,
or for the README a paragraph that starts with it). Every `hermes.…` name the decisions
document points to as its code must exist.
"""

from __future__ import annotations

import importlib
import re

import pytest
from layering import PACKAGE

ROOT = PACKAGE.parent
CITATION = re.compile(r'(docs/[\w./-]+\.md|tests/[\w./-]+\.md|README(?:\.md)?)(?:,\s*"([^"]+)")?')


def _citations() -> list[tuple[str, str, str | None]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(ROOT)), match.group(1), match.group(2)))
    return found


def test_the_code_cites_the_decisions_document() -> None:
    cited = {document for _, document, _ in _citations()}
    assert "docs/api-decisions.md" in cited


@pytest.mark.parametrize(("source", "document", "section"), _citations())
def test_a_cited_document_exists_and_holds_the_section(source: str, document: str, section: str | None) -> None:
    path = ROOT / (document if document.endswith(".md") else f"{document}.md")
    assert path.is_file(), f"{source} cites {document}, which is not in the repository"
    if section is None:
        return
    text = path.read_text(encoding="utf-8")
    heading = re.search(rf"^#+ {re.escape(section)}\s*$", text, re.MULTILINE)
    paragraph = re.search(rf"^{re.escape(section)}\b", text, re.MULTILINE)
    assert heading or paragraph, f'{source} cites {document}, "{section}", which has no such section'


def test_every_code_name_the_decisions_document_gives_exists() -> None:
    text = (ROOT / "docs" / "api-decisions.md").read_text(encoding="utf-8")
    names = re.findall(r"`(hermes(?:\.\w+)+)`", text)
    assert len(names) >= 4
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
            continue
        except ImportError:
            pass
        module, _, attribute = name.rpartition(".")
        try:
            if not hasattr(importlib.import_module(module), attribute):
                missing.append(name)
        except ImportError:
            missing.append(name)
    assert missing == []
