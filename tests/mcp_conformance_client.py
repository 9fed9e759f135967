"""An application on fncall-graph's public API, run by the MCP client conformance suite.

``@modelcontextprotocol/conformance`` starts a mock server for a scenario and runs this
script with the server's URL as the last argument (and the scenario's name in
``MCP_CONFORMANCE_SCENARIO``, its data in ``MCP_CONFORMANCE_CONTEXT``). The script does
what an application would: it opens an :class:`MCPToolkit` on the server from an
``mcpServers`` entry (streamable HTTP, with the entry's ``oauth`` when the server asks
for it; the two grants that entry does not offer, a signed key and an enterprise
identity, as the connection's own ``auth``), has a graph call each tool the server
lists in one turn (with the arguments the scenario gives, or placeholders for those the
tool requires), and answers a server's question (elicitation) as a person accepting the form as
offered, defaults included. It exits non-zero when something failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
from typing import Any
from urllib.parse import urlsplit

import httpx
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from mcp.client.auth.extensions.client_credentials import (
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)

try:  # mcp 2.x: enterprise-managed authorization (SEP-990)
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
except ImportError:  # not in mcp 1.x
    IdentityAssertionOAuthProvider = None

from fncall_graph import MCPToolkit, create_fncall_graph
from fncall_graph.adapters.mcp.oauth import TokenCache
from fncall_graph.testing import ReplayChatModel

# What the application asks of each tool it knows; another is called with a placeholder for
# each argument its schema requires (as a model fills in a form), or, where the scenario's
# context names the calls to make (``toolCalls``), with the arguments given there.
ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
PLACEHOLDERS = {
    "string": "x",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


# Scenarios whose server answers tools/list only (no tools/call): the tools are listed
# (their schemas read) when the toolkit starts, and none is called
LIST_ONLY = {"json-schema-ref-no-deref"}


def arguments_for(tool: str, schema: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    if tool in given:
        return given[tool]
    if tool in ARGUMENTS:
        return ARGUMENTS[tool]
    properties = schema.get("properties") or {}
    return {
        name: PLACEHOLDERS.get((properties.get(name) or {}).get("type"), "x")
        for name in schema.get("required") or ()
    }


class Browser:
    """The person's browser: opens the authorization page (which approves at once on
    the suite's authorization server) and follows its redirect back to the toolkit."""

    async def open(self, server: str, url: str) -> None:
        async with httpx.AsyncClient() as client:
            response = await client.get(url, follow_redirects=False)
            location = response.headers.get("location")
            if location is None:
                raise RuntimeError(f"authorization page answered {response.status_code}")
            (await client.get(location)).raise_for_status()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_entry(url: str, scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """The application's ``mcpServers`` entry for the scenario's server: OAuth with the
    account the context gives (a service account's secret, a pre-registered client, or
    none: the client registers itself or names its metadata document)."""
    oauth: dict[str, Any] = {
        "callback_port": free_port(),
        "token_cache": tempfile.mkdtemp(prefix="mcp-oauth-"),
        "client_name": "fncall-graph conformance client",
    }
    if scenario == "auth/client-credentials-basic":
        oauth["grant"] = "client_credentials"
    if context.get("client_id"):
        oauth["client_id"] = context["client_id"]
        if context.get("client_secret"):
            oauth["client_secret"] = context["client_secret"]
    else:
        oauth["client_metadata_url"] = "https://conformance-test.local/client-metadata.json"
    return {"url": url, "oauth": oauth}


def signed_key_auth(url: str, context: dict[str, Any]) -> httpx.Auth:
    """The client-credentials grant with a signed key (RFC 7523), which the ``oauth``
    entry does not offer: built as an application would, as the connection's ``auth``."""
    key = SignedJWTParameters(
        issuer=context["client_id"],
        subject=context["client_id"],
        signing_algorithm=context.get("signing_algorithm", "ES256"),
        signing_key=context["private_key_pem"],
    )
    return PrivateKeyJWTOAuthProvider(
        url, TokenCache("server", None), context["client_id"], key.create_assertion_provider()
    )


async def enterprise(url: str, tokens: TokenCache, context: dict[str, Any]) -> Any:
    """SEP-990: the person's identity token from the enterprise's identity provider is
    exchanged there for an identity assertion grant (RFC 8693), which the MCP server's
    authorization server takes for an access token (RFC 7523, by the SDK). The
    application is configured with that authorization server: the one the server's
    protected-resource metadata names."""
    parts = urlsplit(url)
    metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with httpx.AsyncClient() as client:
        issuer = (await client.get(metadata)).raise_for_status().json()["authorization_servers"][0]

    async def grant(audience: str, resource: str) -> str:
        async with httpx.AsyncClient() as client:
            response = await client.post(
                context["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "subject_token": context["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "audience": audience,
                    "resource": resource,
                    "client_id": context["idp_client_id"],
                },
            )
        return response.raise_for_status().json()["access_token"]

    return IdentityAssertionOAuthProvider(
        url,
        tokens,
        context["client_id"],
        context["client_secret"],
        issuer=issuer,
        assertion_provider=grant,
        token_endpoint_auth_method="client_secret_basic",
    )


def accept_as_offered(question: dict[str, Any]) -> dict[str, Any]:
    """A person accepting the server's form without changing it: its defaults."""
    return {"action": "accept", "content": dict(question.get("defaults") or {})}


async def call_each_tool(toolkit: MCPToolkit, context: dict[str, Any]) -> None:
    """One model turn that calls every tool the server lists, side by side."""
    given = {c["name"]: c.get("arguments") or {} for c in context.get("toolCalls") or ()}
    calls = [
        {
            "name": tool.name,
            "args": arguments_for(tool.metadata["mcp_tool"], tool.args_schema, given),  # type: ignore[arg-type]
            "id": f"c{i}",
        }
        for i, tool in enumerate(toolkit.tools)
        if tool.metadata and "mcp_tool" in tool.metadata
    ]
    model = ReplayChatModel([AIMessage(content="", tool_calls=calls), "done"])
    graph = create_fncall_graph(
        model, toolkit.tools, dialect="native", checkpointer=InMemorySaver()
    )
    cfg = {"configurable": {"thread_id": "conformance"}}
    state = await graph.ainvoke({"messages": [("user", "call the tools")]}, cfg)
    while state.get("__interrupt__"):
        answers = {
            pause.id: accept_as_offered(pause.value["mcp_elicitation"])
            for pause in state["__interrupt__"]
            if "mcp_elicitation" in pause.value
        }
        if len(answers) != len(state["__interrupt__"]):
            raise RuntimeError(f"the graph paused for something else: {state['__interrupt__']}")
        state = await graph.ainvoke(Command(resume=answers), cfg)
    failed = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            print(f"{message.name}: {message.content}")
    if failed:
        raise RuntimeError(f"{len(failed)} tool call(s) failed")


async def main(url: str) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    # the application's account for this server; OAuth acts only when the server asks
    # (HTTP 401)
    if scenario == "auth/client-credentials-jwt":
        connection = {
            "transport": "streamable_http",
            "url": url,
            "auth": signed_key_auth(url, context),
        }
        toolkit = MCPToolkit({"server": connection}, call_timeout=20, include_resources=False)
    elif context.get("idp_id_token") and IdentityAssertionOAuthProvider is not None:
        auth = await enterprise(url, TokenCache("server", None), context)
        connection = {"transport": "streamable_http", "url": url, "auth": auth}
        toolkit = MCPToolkit({"server": connection}, call_timeout=20, include_resources=False)
    else:
        config = {"mcpServers": {"server": server_entry(url, scenario, context)}}
        toolkit = MCPToolkit.from_config(
            config, call_timeout=20, include_resources=False, authorize=Browser().open
        )
    async with toolkit:
        if scenario not in LIST_ONLY:
            await call_each_tool(toolkit, context)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
