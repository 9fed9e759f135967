"""The dialect wrapper (``adapters/models/chat_model.py``) keeps its public face; each of
its jobs has one file: what it is (``chat_model`` itself), structured output
(``structured_output``), a call made ready, sent and read (``model_call``: its tools
bound, too) and its runs (``runs``).
A call is made ready in one place, whichever way it is made: the wrapper's own runs,
``model_call`` (the graph's model node) and ``render_input`` (the adapter node)."""

from __future__ import annotations

import ast

from product_code import ROOT, called, sources

MODELS = ROOT / "adapters" / "models"
PARTS = ("chat_model", "structured_output", "model_call", "runs")


def calls_of(names: set[str]) -> dict[str, int]:
    """How many calls of each of ``names`` each product file makes, as ``path:name``."""
    found: dict[str, int] = {}
    for path, tree in sources().items():
        for node in ast.walk(tree):
            if (name := called(node)) in names:
                found[f"{path}:{name}"] = found.get(f"{path}:{name}", 0) + 1
    return found


def test_each_part_is_one_file_of_reasonable_size() -> None:
    sizes = {p: len((MODELS / f"{p}.py").read_text(encoding="utf-8").splitlines()) for p in PARTS}
    assert max(sizes.values()) <= 700, sizes


def test_a_call_is_made_ready_in_one_place() -> None:
    assert calls_of({"prepare_call", "ModelCall"}) == {
        "adapters/models/chat_model.py:prepare_call": 1,
        "adapters/models/model_call.py:ModelCall": 1,
    }
    # the three ways a call is made all go through the wrapper's one ``_prepare``
    assert calls_of({"_prepare"}) == {"adapters/models/chat_model.py:_prepare": 6}


def test_the_wrappers_runs_are_its_own_four() -> None:
    assert calls_of({"run_call", "arun_call", "stream_call", "astream_call"}) == {
        f"adapters/models/chat_model.py:{name}": 1
        for name in ("run_call", "arun_call", "stream_call", "astream_call")
    }


def test_the_public_names_stay_where_they_are_imported() -> None:
    from fncall_graph.adapters import with_dialect as from_adapters
    from fncall_graph.adapters.models.chat_model import DialectChatModel, with_dialect

    assert from_adapters is with_dialect
    assert (
        with_dialect.__module__
        == DialectChatModel.__module__
        == ("fncall_graph.adapters.models.chat_model")
    )
