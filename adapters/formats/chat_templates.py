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

__all__ = ["TEMPLATE_MARKERS", "format_of_template"]

#: ``(markers, format)``: a template holding every marker of a row writes calls in its
#: format; the first row that matches wins. Markers as llama.cpp's ``common/chat.cpp``
#: detects templates (``common_chat_try_specialized_template`` and the handlers before
#: it), and the readers' own call markers for formats llama.cpp has no handler for.
TEMPLATE_MARKERS: tuple[tuple[tuple[str, ...], str], ...] = (
    ((">>>all",), "functionary"),
    ((" functools[",), "functools"),
    (("<|tool_calls_section_begin|>", "<|tool_call_begin|>"), "kimi"),
    (("<|open|>", "<|close|>", "<|end_of_msg|>"), "kimi-k3"),
    (("<|START_ACTION|>",), "command-r"),
    (("<|tool_call_start|>",), "lfm2"),
    (("List of tools: [",), "lfm2"),  # LFM2.5: no special tokens in the template
    (("<|role_sep|>", "<|message_sep|>"), "gigachat3"),
    (("]<]minimax[>[",), "minimax"),  # MiniMax-M3's namespace token, before <tool_call>
    (("dsml_token", "DSML"), "dsml"),  # DeepSeek V3.2 / V4 name the token in a variable
    (("｜DSML｜",), "dsml"),
    (("｜GCML｜",), "gcml"),
    (("<|tool_call>call:",), "gemma4"),
    (("<start_function_call>",), "functiongemma"),
    (("<seed:tool_call>",), "seed-oss"),
    (("<minimax:tool_call>",), "minimax"),
    (("<steptml:invoke",), "step3"),
    (("<|channel|>",), "harmony"),
    (("<｜tool▁calls▁begin｜>",), "deepseek"),
    (("[TOOL_CALLS]",), "mistral"),
    (("<|tools_prefix|>",), "apertus"),
    (("<TOOLCALL>",), "nemotron"),
    (("<longcat_tool_call>",), "longcat"),
    (("<|plamo:begin_tool_request",), "plamo3"),
    (("<tool_calls:opensource>",), "hunyuan-labelled"),
    (("<tool_calls>",), "tool-calls-tag"),
    (("<|tool_call|>",), "granite"),
    (("<function_call>",), "granite-fc"),
    (("<|action_start|><|plugin|>",), "internlm"),
    (("<function_calls>",), "pythonic-tag"),  # OLMo 3
    (("<|python_start|>",), "pythonic-tag"),  # Llama 4
    # Hermes 2/3 Pro, Qwen2.5/3; Qwen3-Coder / Qwen3.5 (<function=…> inside) and GLM-4.5+
    # (<arg_key> inside) write their calls in the same tag, which the hermes reader reads
    (("<tool_call>",), "hermes"),
    (("<|start_header_id|>", "<function="), "function-tag"),  # Functionary v3.1 on Llama 3.1
    (("<|start_header_id|>ipython<|end_header_id|>",), "json"),  # Llama 3.1-3.3 JSON calls
)


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
    for markers, name in TEMPLATE_MARKERS:
        if all(m in template for m in markers):
            return name
    return None
