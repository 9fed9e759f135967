"""Models: model specs, what a model can do, the tool-calling wrapper, the bundled local server.

- :mod:`.specs`: one string names any chat model (:func:`resolve_model`);
- :mod:`.chat_model`: :func:`with_dialect`, tool calling for any chat model;
- :mod:`.local_server`: the bundled SmolLM2-135M on a loopback llama.cpp server;
- :mod:`.capabilities`: native tools, a declared dialect, grammars: what a model can do.
"""

from typing import TYPE_CHECKING, Any

from .capabilities import (
    accepts_grammar,
    declared_dialect,
    initial_dialect,
)
from .specs import (
    DEFAULT_SPEC,
    MODEL_ENV,
    ModelServerUnreachable,
    ModelSpecError,
    is_tools_unsupported_error,
    packaged_recording,
    resolve_model,
    unreachable_server,
)

if TYPE_CHECKING:
    from .openai_compatible import CompatibleChatOpenAI

__all__ = [
    "DEFAULT_SPEC",
    "MODEL_ENV",
    "CompatibleChatOpenAI",
    "ModelServerUnreachable",
    "ModelSpecError",
    "accepts_grammar",
    "declared_dialect",
    "initial_dialect",
    "is_tools_unsupported_error",
    "packaged_recording",
    "resolve_model",
    "unreachable_server",
]


def __getattr__(name: str) -> Any:
    # langchain-openai loads only when an OpenAI-compatible model is made or named
    if name == "CompatibleChatOpenAI":
        from .openai_compatible import CompatibleChatOpenAI

        return CompatibleChatOpenAI
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
