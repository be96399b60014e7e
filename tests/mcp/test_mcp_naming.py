"""Tool names offered to the model: `mcp__<server>__<tool>` in OpenAI's charset, ≤ 64 chars."""

from __future__ import annotations

import re

from hermes.agent.mcp.naming import split_name, tool_name, unique_name

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_plain_names_are_prefixed() -> None:
    assert tool_name("x", "y") == "mcp__x__y"
    assert split_name("mcp__x__y") == ("x", "y")
    assert split_name("terminal") is None


def test_other_characters_become_underscores() -> None:
    name = tool_name("files", "read.file/v2 (beta)")
    assert name == "mcp__files__read_file_v2__beta_"
    assert OPENAI_NAME.match(name)


def test_long_names_are_cut_to_64_and_stay_distinct() -> None:
    a = tool_name("server", "t" * 80 + "a")
    b = tool_name("server", "t" * 80 + "b")
    assert len(a) == len(b) == 64 and a != b
    assert OPENAI_NAME.match(a) and OPENAI_NAME.match(b)


def test_unique_name_adds_a_counter() -> None:
    taken = {"mcp__x__a_b"}
    assert unique_name("mcp__x__a_b", taken) == "mcp__x__a_b_2"
    assert unique_name("mcp__x__c", taken) == "mcp__x__c"
