"""Each format's markers are written once, and every table of markers is made from them.

A format's markers (``<tool_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``, ``✿FUNCTION✿``,
``Action:``, reasoning markers …) are defined with its reader or its dialect; markup that
several formats write (``<think>``, ``<tool_call>``, ChatML's, ``</s>``) in
``adapters/formats/markup.py``. The tables that list markers (the auto reader's, what
``neutralise`` breaks, what detection and stream reading look for, the chat templates'
rows, a dialect's drop tokens and control markers) take them from there: a marker spelled
out a second time is a table that can drift from its format.

The markers are those the formats' own tables hold, with the special tokens they are made
of (harmony's ``<|channel|>`` in ``<|channel|>analysis<|message|>``). A marker is
*written* by a string literal that holds it; docstrings and the readers' example replies
(``examples``) are text about the format, not definitions. Two rules:

* a marker is written in one module only, its home;
* there it stands as a whole literal (white space aside) once.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator

from product_code import sources

from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats.readers import AUTO, KNOWN_MARKUP, NO_CALL_MARKUP, READERS

ROOM = "adapters/formats/"
# the special tokens markers are made of: <|…|> and DeepSeek's fullwidth <｜…｜>
_ATOMS = re.compile(r"<\|[^|<>\s]+\|>|<｜[^｜<>\s]+｜>")


def markers() -> frozenset[str]:
    """Every marker the formats' tables hold, and the special tokens they are made of."""
    found: set[str] = set(KNOWN_MARKUP)
    for reader in (*READERS, AUTO, NO_CALL_MARKUP, *map(get_dialect, ("hermes", "qwen", "react"))):
        for block in reader.blocks:
            found.update((block.open, *block.close))
        found.update(reader.drop_tokens)
        found.update(getattr(reader, "channel_tokens", ()))
        found.update(getattr(reader, "control_markers", ()))
        found.update(getattr(reader, "stop", ()))
    found.update(atom for m in list(found) for atom in _ATOMS.findall(m))
    return frozenset(m.strip() for m in found if len(m.strip()) > 2)


def _not_definitions(tree: ast.AST) -> set[int]:
    """The string constants that are text about a format: docstrings and examples."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        value: ast.AST | None = None
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            value = node.value  # a docstring (of a module, class, function or attribute)
        elif isinstance(node, ast.keyword) and node.arg == "examples":
            value = node.value
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == "examples" for t in targets):
                value = node.value
        if value is not None:
            skipped.update(id(c) for c in ast.walk(value) if isinstance(c, ast.Constant))
    return skipped


def literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of each string literal that may define markup."""
    skipped = _not_definitions(tree)
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in skipped:
            yield node.lineno, node.value


def repeats(modules: dict[str, ast.Module], vocabulary: Iterable[str]) -> list[str]:
    """Markers written in a second module, or a second time whole in their module."""
    where: dict[str, dict[str, list[tuple[int, bool]]]] = defaultdict(lambda: defaultdict(list))
    for path, tree in modules.items():
        for line, text in literals(tree):
            for marker in vocabulary:
                if marker in text:
                    where[marker][path].append((line, text.strip() == marker))
    found: list[str] = []
    for marker, places in sorted(where.items()):
        spots = [f"{path}:{line}" for path, hits in sorted(places.items()) for line, _ in hits]
        if len(places) > 1:
            found.append(f"{marker!r} written in {len(places)} modules: {', '.join(spots)}")
            continue
        [(path, hits)] = places.items()
        whole = [line for line, is_whole in hits if is_whole]
        if len(whole) > 1:
            found.append(f"{marker!r} written whole {len(whole)} times in {path}: {whole}")
    return found


def test_the_vocabulary_holds_every_kind_of_marker() -> None:
    vocabulary = markers()
    for marker in (
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "<|python_tag|>",
        "✿FUNCTION✿",
        "✿RESULT✿",
        "Action:",
        "Observation:",
        "<think>",
        "[THINK]",
        "<|im_end|>",
        "<|channel|>",  # a token harmony's markers are made of
        "<tool_response>",
    ):
        assert marker in vocabulary, marker


def test_each_marker_is_written_once() -> None:
    modules = {path: tree for path, tree in sources(("adapters",)).items() if path.startswith(ROOM)}
    assert modules
    found = repeats(modules, markers())
    assert not found, "markers written more than once:\n" + "\n".join(found)


def test_a_second_place_is_found() -> None:
    home = ast.parse('TOOL_CALLS = "[TOOL_CALLS]"\nEXAMPLES = "[TOOL_CALLS][]"\n')
    table = ast.parse('HOLD = ("[TOOL_CALLS]", "<|channel|>final")\n')
    again = ast.parse('A = "<think>"\nB = f"<think>{x}"\n')
    about = ast.parse('"""``[TOOL_CALLS]`` in a docstring."""\nexamples = ("[TOOL_CALLS]x",)\n')
    vocabulary = ["[TOOL_CALLS]", "<|channel|>", "<think>"]
    assert repeats({"home.py": home, "about.py": about}, vocabulary) == []
    found = repeats({"home.py": home, "table.py": table, "again.py": again}, vocabulary)
    assert len(found) == 2 and "home.py:1" in found[1] and "table.py:1" in found[1]
    assert "written whole 2 times in again.py" in found[0]
