"""Every prompt-dialect variant the property tests, the fuzz and the parse bench cover."""

from __future__ import annotations

from typing import Any

#: label -> (name, options) for ``get_dialect``
PROMPT_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hermes": ("hermes", {}),
    "qwen-en-parallel": ("qwen", {"lang": "en", "parallel": True}),
    "qwen-en-single": ("qwen", {"lang": "en", "parallel": False}),
    "qwen-zh-parallel": ("qwen", {"lang": "zh", "parallel": True}),
    "qwen-zh-single": ("qwen", {"lang": "zh", "parallel": False}),
    "react": ("react", {}),
}
