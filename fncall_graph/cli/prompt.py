"""The ``prompt`` command: the system prompt a dialect writes for an MCP config's tools."""

from __future__ import annotations

import argparse
import json
import sys

from langchain_core.messages import SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from fncall_graph.adapters.formats.base import text_of

from .model_options import call_format_note, declared_call_format
from .resources import CLIError, load_model, mcp_tools
from .terminal import UI

__all__ = []


def cmd_prompt(args: argparse.Namespace) -> int:
    """Print the system prompt a dialect writes for the tools of an MCP config."""
    from fncall_graph.adapters import get_dialect

    options = {"lang": args.lang} if args.lang else {}
    try:
        dialect = get_dialect(args.dialect, **options)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--dialect {args.dialect}: {exc}") from exc
    call_format = declared_call_format(args)
    if args.model is not None:
        # how this model's calls will be read back, on stderr: stdout is the prompt
        model = load_model(args.model, UI(sys.stderr))
        print(call_format_note(model, dialect, call_format), file=sys.stderr, flush=True)
    with mcp_tools(args.mcp) as tools:
        if dialect.native:
            # native calling has no prompt text: the tools travel as the request's `tools`
            payload = [convert_to_openai_tool(t) for t in tools]
            print(json.dumps(payload, ensure_ascii=False, indent=1))
            return 0
        history = [SystemMessage(args.system)] if args.system else []
        rendered = dialect.render(history, tools)
    prompts = [text_of(m.content) for m in rendered if m.type == "system"]
    sys.stdout.write("\n\n".join(prompts) + "\n")
    sys.stdout.flush()
    return 0
