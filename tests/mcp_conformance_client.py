"""An application on fncall-graph's public API, run by the MCP client conformance suite.

``@modelcontextprotocol/conformance`` starts a mock server for a scenario and runs this
script with the server's URL as the last argument (and the scenario's name in
``MCP_CONFORMANCE_SCENARIO``, its data in ``MCP_CONFORMANCE_CONTEXT``). The script does
what an application would: it opens an :class:`MCPToolkit` on the server (streamable
HTTP, with OAuth when the server asks for it), has a graph call each tool the server
lists, and answers a server's question (elicitation) as a person accepting the form as
offered, defaults included. It exits non-zero when something failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

try:  # mcp 2.x: the authorization callback answers with a model
    from mcp.shared.auth import AuthorizationCodeResult
except ImportError:  # mcp 1.x: with a (code, state) pair
    AuthorizationCodeResult = None
try:  # mcp 2.x: enterprise-managed authorization (SEP-990)
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
except ImportError:  # not in mcp 1.x
    IdentityAssertionOAuthProvider = None

from fncall_graph import MCPToolkit, create_fncall_graph
from fncall_graph.testing import ReplayChatModel

# What the application asks of each tool it knows; a tool not listed is called with {}.
ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}

REDIRECT_URI = "http://localhost:3000/callback"


class MemoryTokens(TokenStorage):
    """The tokens and client registration of one run, kept in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The person's browser: opens the authorization page (which approves at once on
    the suite's authorization server) and hands back the code from the redirect."""

    def __init__(self) -> None:
        self.code: tuple[str, str | None] | None = None

    async def open(self, url: str) -> None:
        async with httpx.AsyncClient() as client:
            response = await client.get(url, follow_redirects=False)
        location = response.headers.get("location")
        if location is None:
            raise RuntimeError(f"authorization page answered {response.status_code}, no redirect")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"authorization refused: {location}")
        self.code = (query["code"][0], (query.get("state") or [None])[0])

    async def callback(self) -> Any:
        """The code and state, in the shape the installed MCP SDK takes them."""
        assert self.code is not None, "no authorization code: the page was not opened"
        (code, state), self.code = self.code, None
        if AuthorizationCodeResult is not None:
            return AuthorizationCodeResult(code=code, state=state)
        return code, state


async def oauth(url: str, scenario: str, context: dict[str, Any]) -> httpx.Auth:
    """OAuth as the MCP SDK does it: the client-credentials grant for a service account
    (a secret or a signed key), else the authorization code with PKCE, with a
    pre-registered client when the context gives one."""
    tokens, browser = MemoryTokens(), Browser()
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsOAuthProvider(
            url, tokens, context["client_id"], context["client_secret"]
        )
    if scenario == "auth/client-credentials-jwt":
        key = SignedJWTParameters(
            issuer=context["client_id"],
            subject=context["client_id"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
            signing_key=context["private_key_pem"],
        )
        return PrivateKeyJWTOAuthProvider(
            url, tokens, context["client_id"], key.create_assertion_provider()
        )
    if context.get("idp_id_token") and IdentityAssertionOAuthProvider is not None:
        return await enterprise(url, tokens, context)
    if context.get("client_id"):
        secret = context.get("client_secret")
        tokens.client = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=secret,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="fncall-graph conformance client",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=tokens,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url="https://conformance-test.local/client-metadata.json",
    )


async def enterprise(url: str, tokens: TokenStorage, context: dict[str, Any]) -> Any:
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


async def call_each_tool(toolkit: MCPToolkit) -> None:
    calls = [
        {"name": tool.name, "args": ARGUMENTS.get(tool.metadata["mcp_tool"], {}), "id": f"c{i}"}
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
    # the application's account for this server; the SDK's OAuth acts only when the
    # server asks (HTTP 401)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = await oauth(url, scenario, context)
    connection = {"transport": "streamable_http", "url": url, "auth": auth}
    async with MCPToolkit({"server": connection}, call_timeout=20) as toolkit:
        await call_each_tool(toolkit)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
