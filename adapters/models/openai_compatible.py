"""``CompatibleChatOpenAI``: ``ChatOpenAI`` for OpenAI-compatible servers.

A module of its own so that langchain-openai (and the openai client under it) loads only
when such a model is made: ``resolve_model`` imports it for ``openai:`` and URL specs.
"""

from __future__ import annotations

from fncall_graph._compat import ChatOpenAIMaxTokens

__all__ = ["CompatibleChatOpenAI"]


class CompatibleChatOpenAI(ChatOpenAIMaxTokens):
    """``ChatOpenAI`` for OpenAI-compatible servers (llama.cpp, vLLM, DashScope, DeepSeek).

    langchain-openai sends a token limit as ``max_completion_tokens``, which OpenAI
    introduced in 2024; llama-cpp-python's server ignores that field and other servers
    may too, while all of them read ``max_tokens``. This class sends ``max_tokens``.

    Attributes:
        accepts_grammar: the server applies a request's GBNF ``grammar`` field, as
            llama.cpp's servers do. ``create_fncall_graph`` then constrains the replies of
            prompt dialects by default (see its ``constrained`` option). The bundled
            ``local`` model sets it; pass ``accepts_grammar=True`` to ``resolve_model`` for
            another llama.cpp server.
        dialect: the dialect ``create_fncall_graph(dialect="auto")`` speaks with this
            model, if set (the bundled ``local`` model sets ``"hermes"``); ``None``:
            native when it binds tools.
        model_path: the model file the server serves (a GGUF file, or a folder with a
            ``tokenizer_config.json``), if it is local: its chat template tells the
            model's call format where the server does not (the ``local`` model sets it).
    """

    accepts_grammar: bool = False
    dialect: str | None = None
    model_path: str | None = None
