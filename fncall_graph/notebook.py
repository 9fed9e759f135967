"""Jupyter helpers: a graph as a picture, a run's model calls as a compact table.

- :func:`graph_picture` draws a compiled graph as an inline SVG with Graphviz's ``dot``
  (Debian/Ubuntu ``apt-get install graphviz``, macOS ``brew install graphviz``); where
  ``dot`` is missing it falls back to a Mermaid block, which JupyterLab 4.1+ and
  VS Code draw themselves.
- :func:`transcript` shows the :class:`~fncall_graph.trace.ModelCallRecord` s of a run as
  one table row per model call — question, calls made, answer — with the model's exact
  input and raw output folded away (shown once per distinct system prompt).

Example:
    ```python
    from fncall_graph.notebook import graph_picture, transcript

    graph_picture(graph)          # the picture, as the cell's output
    transcript(tracer.records)    # after a traced run
    ```
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from typing import Any

from fncall_graph.adapters.formats.base import text_of
from fncall_graph.trace import ModelCallRecord

__all__ = ["graph_picture", "transcript"]


def graph_dot(graph: Any) -> str:
    """The Graphviz source of a compiled graph: nodes as boxes, conditional edges dashed."""
    drawable = graph.get_graph()
    lines = [
        "digraph {",
        '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.4, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fillcolor="#e8eefc", color="#5b6fa6", '
        'fontname="Helvetica", fontsize=11];',
        '  edge [color="#5b6fa6", arrowsize=0.7, fontname="Helvetica", fontsize=9];',
    ]
    for node_id, node in drawable.nodes.items():
        label = node.name
        shape = ""
        if node_id in ("__start__", "__end__"):
            label = node_id.strip("_")
            shape = ', shape=oval, fillcolor="#f1f1f1", color="#999999"'
        lines.append(f"  {json.dumps(node_id)} [label={json.dumps(label)}{shape}];")
    for edge in drawable.edges:
        style = ' [style="dashed"]' if edge.conditional else ""
        lines.append(f"  {json.dumps(edge.source)} -> {json.dumps(edge.target)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graph_picture(graph: Any) -> Any:
    """The graph drawn as an inline SVG (an ``IPython.display`` object).

    Uses Graphviz's ``dot``; without it, a Mermaid block that JupyterLab 4.1+ draws.
    """
    from IPython.display import SVG, Markdown

    dot = shutil.which("dot")
    if dot is None:
        return Markdown("```mermaid\n" + graph.get_graph().draw_mermaid() + "```")
    done = subprocess.run(
        [dot, "-Tsvg"], input=graph_dot(graph), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"graphviz dot failed: {done.stderr.strip()}")
    return SVG(done.stdout)


def _calls(output: dict[str, Any]) -> str:
    calls = [
        f"<code>{html.escape(c['function']['name'])}</code> "
        f"{html.escape(_short(c['function']['arguments'], 90))}"
        for c in output.get("tool_calls") or []
    ]
    calls += [
        f"<span style='color:#b00'>unreadable: {html.escape(str(c.get('error')))}</span>"
        for c in output.get("invalid_tool_calls") or []
    ]
    return "<br>".join(calls)


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fold(summary: str, body: str) -> str:
    return (
        f"<details><summary>{html.escape(summary)}</summary>"
        f"<pre style='white-space:pre-wrap;max-height:24em;overflow:auto'>{html.escape(body)}"
        "</pre></details>"
    )


def _input_text(messages: Sequence[dict[str, Any]], shown: set[str]) -> str:
    parts = []
    for m in messages:
        body = text_of(m.get("content"))
        if m["role"] == "system":
            if body in shown:
                body = "(the system prompt with the tools, shown above)"
            else:
                shown.add(body)
        parts.append(f"[{m['role']}]\n{body}")
    return "\n\n".join(parts)


def transcript(records: Iterable[ModelCallRecord]) -> Any:
    """A table of model calls: round, question, the calls or answer, and folded details.

    Each row folds the exact model input (the system prompt once per distinct prompt)
    and the raw output under ``<details>``, so a long session stays short to read.
    """
    from IPython.display import HTML

    rows = []
    shown: set[str] = set()
    for r in records:
        output = r.processed_output
        answer = text_of(output.get("content"))
        raw = r.raw_output if isinstance(r.raw_output, str) else json.dumps(r.raw_output)
        details = _fold(
            f"model input ({len(r.processed_input)} messages)",
            _input_text(r.processed_input, shown),
        ) + _fold("raw output", raw)
        rows.append(
            "<tr>"
            f"<td>{r.index}</td><td>{r.round}</td>"
            f"<td>{html.escape(_short(r.question, 40))}</td>"
            f"<td>{html.escape(r.dialect or '')}</td>"
            f"<td>{_calls(output) or html.escape(_short(answer, 160))}</td>"
            f"<td>{details}</td>"
            "</tr>"
        )
    head = "".join(
        f"<th style='text-align:left'>{h}</th>"
        for h in ("#", "round", "question", "dialect", "calls / answer", "details")
    )
    return HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
