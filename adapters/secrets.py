"""Secrets kept out of what the product says and away from other users.

Error lines, log lines and checkpoint writes about a model server or an MCP server are
passed through :func:`redact`: a URL's userinfo, query parameters named like a secret
(``token``, ``api_key``, ``signature``, ...), ``Authorization``/``Bearer`` values and
``key=value`` pairs named so, and every secret this process was configured with (an API
key, a secret-named header's value, a URL's password: :func:`remember_secrets`) become
``***``. A provider's exception keeps its type, its message redacted
(:func:`redact_exception`), so what LangGraph saves of it (the ``__error__`` write, its
``repr``) holds no key either.

Files and folders made for a person's state (checkpoints, logs, token caches) are theirs
alone whatever the umask: folders 0700, files 0600 (:func:`private_folder`,
:func:`open_private`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO
from urllib.parse import parse_qsl, quote, unquote, urlsplit

__all__ = [
    "open_private",
    "private_folder",
    "redact",
    "redact_exception",
    "remember_secrets",
    "secrets_of",
    "url_secrets",
]

#: What a redacted value reads as.
MASK = "***"

# Shorter values are not secrets worth the damage their replacement would do to the text.
_SHORTEST = 4

# the secrets this process was configured with (see remember_secrets)
_KNOWN: set[str] = set()

_SECRET_WORD = r"token|key|secret|passw(?:or)?d|pwd|auth|signature|sig|credential|session"

# scheme://user:password@ → scheme://***@
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@")
# ?access_token=... &X-Amz-Signature=... → the value masked
_QUERY = re.compile(rf"(?i)([?&;][^=&#\s]*?(?:{_SECRET_WORD})[^=&#\s]*=)([^&#\s'\"]+)")
# api_key=..., "client_secret": "...", Authorization: Bearer ..., password: ...
_PAIR = re.compile(
    r"(?i)(?<![\w.-])([\"']?)((?:[\w-]*[_-]|api)key|apikey|(?:[\w-]*[_-])?(?:token|secret"
    r"|passw(?:or)?d|pwd|signature|credentials?)|authorization|auth)\1(\s*[:=]\s*)([\"']?)"
    r"((?:bearer|basic|token)\s+)?([^\s'\",;&)}\]]+)"
)
# a bearer token on its own
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/-]{8,}=*")
_SECRET_NAME = re.compile(rf"(?i)(?:{_SECRET_WORD})|cookie|authorization")


def remember_secrets(*values: object) -> None:
    """Keep ``values`` (strings; others are ignored) as secrets :func:`redact` masks
    wherever they appear, for the rest of the process.

    Example:
        >>> remember_secrets("hunter2-hunter2")
        >>> redact("the server said: bad key hunter2-hunter2")
        'the server said: bad key ***'
    """
    for value in values:
        if isinstance(value, str) and len(value.strip()) >= _SHORTEST:
            _KNOWN.add(value)


def url_secrets(url: object) -> list[str]:
    """The secrets a URL carries: its userinfo's password (or, with none, a user name long
    enough to be a token) and the values of its secret-named query parameters.

    Example:
        >>> url_secrets("https://me:pw-1234@example.com/mcp?token=abcd&page=2")
        ['pw-1234', 'abcd']
        >>> url_secrets("https://ghp_0123456789@example.com/mcp")
        ['ghp_0123456789']
    """
    if not isinstance(url, str):
        return []
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    found: list[str] = []
    if parts.password:
        found.append(unquote(parts.password))
    elif parts.username and len(parts.username) >= 8:  # a user name ("me") is no secret
        found.append(unquote(parts.username))
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_NAME.search(name):
            found.append(value)
    return found


def secrets_of(*holders: object) -> list[str]:
    """The secrets a chat model (or a binding of one, or a connection dict) holds: its
    ``SecretStr`` fields (``api_key``, ...), the values of its secret-named headers, and
    those of its URLs (:func:`url_secrets`).

    Example:
        >>> secrets_of({"url": "http://h/mcp?api_key=k-123", "headers": {"X-Api-Key": "x-456"}})
        ['k-123', 'x-456']
    """
    found: list[str] = []
    for holder in holders:
        holder = getattr(holder, "bound", holder)  # a RunnableBinding: its model
        if isinstance(holder, Mapping):
            fields = dict(holder)
        else:
            try:
                fields = dict(vars(holder))
            except TypeError:
                continue
        for name, value in fields.items():
            if hasattr(value, "get_secret_value"):  # pydantic's SecretStr
                found.append(value.get_secret_value())
            elif isinstance(value, str) and ("url" in name.lower() or "base" in name.lower()):
                found += url_secrets(value)
            elif isinstance(value, Mapping) and "header" in str(name).lower():
                for key, given in value.items():
                    if isinstance(given, str) and _SECRET_NAME.search(str(key)):
                        found.append(given)
                        scheme, _, credential = given.partition(" ")  # Bearer <token>
                        if credential and scheme.lower() in ("bearer", "basic", "token"):
                            found.append(credential.strip())
    return [f for f in found if isinstance(f, str)]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret in it masked: ``secrets`` and those remembered
    (:func:`remember_secrets`), a URL's userinfo, secret-named query parameters and
    ``name=value`` pairs, ``Authorization`` and ``Bearer`` values.

    Args:
        text: an error line, a log line, an exception's message.
        secrets: more values to mask, known to the caller (a connection's headers).

    Example:
        >>> redact("cannot connect to http://u:pw@h:1/mcp?token=t0k3n&x=1")
        'cannot connect to http://***@h:1/mcp?token=***&x=1'
        >>> redact("401: invalid api_key=sk-live-1234 (Authorization: Bearer abcdefghij)")
        '401: invalid api_key=*** (Authorization: Bearer ***)'
    """
    if not isinstance(text, str) or not text:
        return text
    known = {s for s in (*_KNOWN, *secrets) if isinstance(s, str) and len(s.strip()) >= _SHORTEST}
    for secret in sorted(known, key=len, reverse=True):  # the longest first: one masks whole
        for form in {secret, quote(secret, safe="")}:
            text = text.replace(form, MASK)
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    text = _QUERY.sub(rf"\1{MASK}", text)
    text = _PAIR.sub(_masked_pair, text)
    return _BEARER.sub(rf"\1 {MASK}", text)


def _masked_pair(m: re.Match[str]) -> str:
    # ``name: value`` in prose ("invalid_token: the token expired") is no pair: a colon
    # counts after a quoted name (JSON, a dict) or a header's name only
    name, quote_, sep = m[2], m[1], m[3]
    header = "-" in name or name.lower() in ("authorization", "auth")
    if "=" not in sep and not quote_ and not header:
        return m[0]
    return f"{quote_}{name}{quote_}{sep}{m[4]}{m[5] or ''}{MASK}"


def redact_exception(exc: BaseException, secrets: Iterable[str] = ()) -> BaseException:
    """``exc`` itself, its string arguments redacted in place (its type and its other
    attributes kept, so callers still catch it as before): its ``str`` and ``repr`` (what
    LangGraph's checkpoint saves of a failed step) hold no secret. Its causes too."""
    secrets = list(secrets)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        with contextlib.suppress(Exception):  # an exception whose args cannot be set
            current.args = tuple(
                redact(a, secrets) if isinstance(a, str) else a for a in current.args
            )
        current = current.__cause__ or current.__context__
    return exc


def private_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder, each missing part of it created 0700 (whatever the umask);
    folders there already are left as they are.

    Example:
        >>> import tempfile, stat
        >>> made = private_folder(Path(tempfile.mkdtemp()) / "a" / "b")
        >>> oct(stat.S_IMODE(made.parent.stat().st_mode)), oct(stat.S_IMODE(made.stat().st_mode))
        ('0o700', '0o700')
    """
    folder = Path(path)
    missing: list[Path] = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs to set
        os.chmod(part, 0o700)  # mkdir's mode is masked by the umask
    return folder


def open_private(path: str | os.PathLike[str], mode: str = "a") -> IO[str]:
    """``path`` opened for writing text (``mode`` ``"a"`` or ``"w"``), created 0600 if it
    is new (whatever the umask; its missing folders 0700). A file there already keeps its
    mode.

    Example:
        >>> import tempfile, stat
        >>> path = Path(tempfile.mkdtemp()) / "log" / "x.log"
        >>> with open_private(path) as out:
        ...     _ = out.write("line\\n")
        >>> oct(stat.S_IMODE(path.stat().st_mode))
        '0o600'
    """
    if mode not in ("a", "w"):
        raise ValueError(f"mode must be 'a' or 'w', got {mode!r}")
    target = Path(path)
    private_folder(target.parent)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if mode == "a" else os.O_TRUNC
    try:
        fd = os.open(target, flags | os.O_EXCL, 0o600)
        created = True
    except FileExistsError:
        fd = os.open(target, flags, 0o600)
        created = False
    try:
        if created and stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
