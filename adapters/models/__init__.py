"""Models: model specs, the tool-calling wrapper, the bundled local server, constrained decoding.

- :mod:`.specs`: one string names any chat model (:func:`resolve_model`);
- :mod:`.chat_model`: :func:`with_dialect`, tool calling for any chat model;
- :mod:`.local_server`: the bundled SmolLM2-135M on a loopback llama.cpp server;
- :mod:`.constrained`: GBNF grammars that hold a reply to a dialect's call format.
"""

from .specs import (
    DEFAULT_SPEC,
    MODEL_ENV,
    CompatibleChatOpenAI,
    ModelServerUnreachable,
    ModelSpecError,
    is_tools_unsupported_error,
    packaged_recording,
    recording_names,
    resolve_model,
    unreachable_server,
)

__all__ = [
    "DEFAULT_SPEC",
    "MODEL_ENV",
    "CompatibleChatOpenAI",
    "ModelServerUnreachable",
    "ModelSpecError",
    "is_tools_unsupported_error",
    "packaged_recording",
    "recording_names",
    "resolve_model",
    "unreachable_server",
]
