"""The module graph of hermes: no import circle, no arrow that runs back up the layers.

Every import statement counts (at the top, under `if TYPE_CHECKING:`, inside a function), so
a circle cannot be hidden by moving an import into a function body. The layers are
DESIGN.md's (see `layering.LAYERS`); every module of hermes must have one.
"""

from __future__ import annotations

from layering import all_modules, circles, import_graph, layer_of, module_edges, upward_arrows


def test_hermes_has_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_no_import_runs_back_up_the_layers() -> None:
    assert upward_arrows(import_graph()) == []


def test_every_module_has_a_layer() -> None:
    # A new top-level module or folder is placed in layering.LAYERS on purpose.
    assert [name for name in all_modules() if layer_of(name) is None] == []


def test_the_graph_counts_type_checking_and_function_imports() -> None:
    modules = all_modules()
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from hermes.tui.screens.chat import ChatScreen\n"
        "def later():\n"
        "    import hermes.store.records\n"
        "    from hermes.tui import commands\n"
        "from hermes import config\n"
    )
    edges = module_edges(source, "hermes.tui.example", False, modules)
    assert edges == {"hermes.tui.screens.chat", "hermes.store.records", "hermes.tui.commands", "hermes.config"}


def test_a_circle_through_a_hidden_import_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"x": {"y"}, "y": set()}) == []


def test_an_arrow_from_the_store_to_the_engine_runs_up() -> None:
    graph = {"hermes.store.records": {"hermes.agent.types"}, "hermes.agent.types": {"hermes.messages"}}
    assert upward_arrows(graph) == [("hermes.store.records", "hermes.agent.types")]
