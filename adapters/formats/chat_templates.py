"""A chat template's call format, told by the markers it writes calls with.

A server that says which template it renders with (llama.cpp's ``GET /props``, Ollama's
``POST /api/show``, a model's ``tokenizer_config.json`` or GGUF ``tokenizer.chat_template``)
tells how its model writes calls: the template writes the model's earlier calls back in
the model's own format. :func:`format_of_template` reads that format from the markers, in
the order llama.cpp's ``common/chat.cpp`` tests templates (the more specific markers
first: Qwen3-Coder's ``<function=`` sits inside a ``<tool_call>``, MiniMax-M3's namespace
token before its ``<tool_call>``). The names are the formats the readers record
(``response_metadata["fncall_markup_format"]``).

Example:
    >>> format_of_template("{{ '<tool_call>' }}{{ tool_call | tojson }}{{ '</tool_call>' }}")
    'hermes'
    >>> format_of_template("{{ '[TOOL_CALLS]' }}") ,  format_of_template("{{ m.content }}")
    ('mistral', None)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .markup import TOOL_CALL

__all__ = ["format_of_template"]

_HEADER = "<|start_header_id|>"  # Llama 3's


@lru_cache(maxsize=1)
def _template_markers() -> tuple[tuple[tuple[str, ...], str], ...]:
    """:data:`TEMPLATE_MARKERS`, built when a template is first read (every reader loads)."""
    from .readers import READERS
    from .readers.dsml import DSML, GCML
    from .readers.harmony import CHANNEL
    from .readers.json_tags import GIGACHAT_SEPS
    from .readers.kimi import K3_TAGS
    from .readers.xml_params import FUNCTION, NS

    def _opens(name: str) -> tuple[str, ...]:
        """The markers that open a call in the format ``name``, as its reader defines them."""
        return tuple(
            b.open for r in READERS if r.name == name for b in r.blocks if b.kind == "call"
        )

    return (
        ((_opens("functionary")[0] + "all",), "functionary"),
        ((" " + _opens("functools")[0],), "functools"),
        (_opens("kimi"), "kimi"),  # the section's and a call's
        ((*K3_TAGS[:2], "<|end_of_msg|>"), "kimi-k3"),
        (_opens("command-r"), "command-r"),
        (_opens("lfm2"), "lfm2"),
        (("List of tools: [",), "lfm2"),  # LFM2.5: no special tokens in the template
        (GIGACHAT_SEPS, "gigachat3"),
        ((NS,), "minimax"),  # MiniMax-M3's namespace token, before <tool_call>
        (("dsml_token", "DSML"), "dsml"),  # DeepSeek V3.2 / V4 name the token in a variable
        ((DSML,), "dsml"),
        ((GCML,), "gcml"),
        ((_opens("gemma4")[0] + "call:",), "gemma4"),
        (_opens("functiongemma"), "functiongemma"),
        (_opens("seed-oss"), "seed-oss"),
        (_opens("minimax")[:1], "minimax"),
        (("<steptml:invoke",), "step3"),
        ((CHANNEL,), "harmony"),
        (_opens("deepseek")[:1], "deepseek"),
        (_opens("mistral"), "mistral"),
        (_opens("apertus"), "apertus"),
        (_opens("nemotron"), "nemotron"),
        (_opens("longcat"), "longcat"),
        (("<|plamo:begin_tool_request",), "plamo3"),
        (_opens("hunyuan-labelled"), "hunyuan-labelled"),
        (_opens("tool-calls-tag"), "tool-calls-tag"),
        (_opens("granite"), "granite"),
        (_opens("granite-fc"), "granite-fc"),
        (_opens("internlm"), "internlm"),
        (_opens("pythonic-tag")[:1], "pythonic-tag"),  # OLMo 3
        (_opens("pythonic-tag")[1:], "pythonic-tag"),  # Llama 4
        # Hermes 2/3 Pro, Qwen2.5/3; Qwen3-Coder / Qwen3.5 (<function=…> inside) and GLM-4.5+
        # (<arg_key> inside) write their calls in the same tag, which the hermes reader reads
        ((TOOL_CALL.open,), "hermes"),
        ((_HEADER, FUNCTION), "function-tag"),  # Functionary v3.1 on Llama 3.1
        ((f"{_HEADER}ipython<|end_header_id|>",), "json"),  # Llama 3.1-3.3 JSON calls
    )


def __getattr__(name: str) -> Any:
    # ``(markers, format)``: a template holding every marker of a row writes calls in its
    # format; the first row that matches wins. Markers as llama.cpp's ``common/chat.cpp``
    # detects templates (``common_chat_try_specialized_template`` and the handlers before
    # it), and the readers' own call markers for formats llama.cpp has no handler for. The
    # formats' markers are taken from their readers; only what a template alone writes
    # (names, Llama 3's headers) is spelled here.
    if name == "TEMPLATE_MARKERS":
        return _template_markers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def format_of_template(template: str | None) -> str | None:
    """The call format a chat template writes calls in, or ``None`` if it shows none.

    Args:
        template: the template's source (Jinja, or Ollama's Go template), or ``None``.

    Returns:
        A format name, e.g. ``"hermes"``, ``"mistral"``, ``"harmony"``; ``None`` for a
        template without tool calls (plain ChatML, say) or in a format not known here.
    """
    if not template:
        return None
    for markers, name in _template_markers():
        if all(m in template for m in markers):
            return name
    return None
