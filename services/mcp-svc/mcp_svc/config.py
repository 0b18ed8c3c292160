"""Settings of the MCP service, read from the environment (and `.env`)."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

TOKEN_SETTINGS = "MCP_HTTP_TOKEN_FILE (preferred: a file holding the token) or MCP_HTTP_TOKEN"
ENV_PREFIX = "MCP_"
# `${NAME}` (and `${env:NAME}`, `${input:x}`): what an agent config writes for a value its client
# should substitute. A client that does not substitute (or a variable it does not have) passes the
# text through as written.
PLACEHOLDER = re.compile(r"\$\{[^}]*\}?")
# Read from the environment outside McpSettings.
OTHER_SETTINGS = ("MCP_SKILLS_DIR",)
# The settings a command-line flag also sets.
FLAGS = {
    "transport": "--transport",
    "host": "--host",
    "port": "--port",
    "allow_write": "--allow-write",
}


class McpConfigError(ValueError):
    """A setting the server cannot start with; the message names the setting."""


def setting_name(field: str) -> str:
    """`gateway_url` -> `MCP_GATEWAY_URL`, with its flag when one sets it too."""
    name = f"{ENV_PREFIX}{field.upper()}"
    return f"{name} (or {FLAGS[field]})" if field in FLAGS else name


def _text(value: Any) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    return value if isinstance(value, str) else str(value) if isinstance(value, Path) else ""


def unexpanded(values: Mapping[str, Any]) -> dict[str, list[str]]:
    """The settings (by name) whose value holds an unexpanded `${...}`, with the placeholders
    found (never the rest of the value: it may be a secret)."""
    found = {}
    for name, value in values.items():
        placeholders = PLACEHOLDER.findall(_text(value))
        if placeholders:
            found[name] = list(dict.fromkeys(placeholders))
    return found


def placeholder_error(found: Mapping[str, list[str]]) -> McpConfigError:
    names = "; ".join(f"{name} holds {' '.join(held)}" for name, held in found.items())
    first = next(iter(found)).split(" ")[0]
    return McpConfigError(
        f"refusing to start: {names}: "
        + ("an unexpanded placeholder" if len(found) == 1 else "unexpanded placeholders")
        + " (the client that launched the server passed the text through as written, or the "
        "variable is not set where it runs). Set the value itself (e.g. "
        f"{first}=<value> in the MCP config's env), or set the variable where the client "
        "expands ${...}"
    )


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore")

    gateway_url: str = Field(
        "http://127.0.0.1:3099", description="Base URL of the gateway's REST API"
    )
    gateway_token: SecretStr | None = Field(
        None, description="Bearer token the gateway issued to the MCP service (viewer or operator)"
    )
    allow_write: bool = Field(
        False, description="Allow the mutating tools; off means they refuse and nothing is sent"
    )
    transport: Literal["stdio", "streamable-http"] = Field(
        "stdio", description="stdio, or streamable-http (path /mcp)"
    )
    host: str = Field("127.0.0.1", description="streamable-http: address (0.0.0.0 in containers)")
    port: int = Field(8765, ge=1, le=65535, description="streamable-http: port")
    http_token: SecretStr | None = Field(
        None,
        description="streamable-http: bearer token clients must send, by value "
        "(required unless bound to loopback; prefer MCP_HTTP_TOKEN_FILE)",
    )
    http_token_file: Path | None = Field(
        None,
        description="streamable-http: file holding the bearer token (a Docker or Kubernetes "
        "secret mount); read once at start, surrounding whitespace ignored",
    )
    http_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="streamable-http: Host header values answered, comma-separated (name or "
        "name:port; a bare name takes any port). Empty: localhost, 127.0.0.1, [::1] and the bind "
        "address",
    )
    http_allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="streamable-http: Origin header values accepted, comma-separated "
        "(scheme://name[:port]; no port takes any). Empty: http and https on the allowed hosts. "
        "A request without Origin is not a browser's and passes",
    )
    request_timeout_seconds: float = Field(
        30.0, gt=0, description="Timeout of one REST call (a long poll adds its wait to it)"
    )

    @model_validator(mode="before")
    @classmethod
    def _expanded(cls, data: Any) -> Any:
        # Before any field is parsed: `${MCP_PORT}` is not "a bad port", and a placeholder URL
        # would only fail at the first tool call, far from its cause.
        if isinstance(data, dict):
            fields = {k: v for k, v in data.items() if k in cls.model_fields}
            found = unexpanded({setting_name(k): v for k, v in fields.items()})
            if found:
                raise placeholder_error(found)
        return data

    @field_validator("http_allowed_hosts", "http_allowed_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [str(v).strip().lower() for v in value if str(v).strip()]
        return value

    def resolved_http_token(self) -> str | None:
        """The bearer token of the HTTP transport, from MCP_HTTP_TOKEN_FILE or MCP_HTTP_TOKEN
        (None when neither is set). An empty value is never a token."""
        by_value = self.http_token.get_secret_value().strip() if self.http_token else ""
        if self.http_token_file is None:
            return _checked(by_value, "MCP_HTTP_TOKEN") if by_value else None
        if by_value:
            raise McpConfigError(
                "both MCP_HTTP_TOKEN_FILE and MCP_HTTP_TOKEN are set: set only one "
                "(MCP_HTTP_TOKEN_FILE is preferred)"
            )
        try:
            token = self.http_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise McpConfigError(
                f"MCP_HTTP_TOKEN_FILE={self.http_token_file} cannot be read: {exc}"
            ) from exc
        if not token:
            raise McpConfigError(f"MCP_HTTP_TOKEN_FILE={self.http_token_file} is empty")
        return _checked(token, f"MCP_HTTP_TOKEN_FILE={self.http_token_file}")


def load_settings(environ: Mapping[str, str] | None = None, **flags: Any) -> McpSettings:
    """The settings the server starts with: the environment (and `.env`), then the flags given
    (None: not given). A value it cannot start with is a `McpConfigError` naming the setting;
    every setting is checked for an unexpanded `${...}`, also one read elsewhere
    (MCP_SKILLS_DIR)."""
    environ = os.environ if environ is None else environ
    known = {f"{ENV_PREFIX}{f.upper()}" for f in McpSettings.model_fields} | set(OTHER_SETTINGS)
    found = unexpanded(
        {
            setting_name(k[len(ENV_PREFIX) :].lower()) if k.upper() not in OTHER_SETTINGS else k: v
            for k, v in environ.items()
            if k.upper() in known
        }
    )
    if found:
        raise placeholder_error(found)
    try:
        return McpSettings(**{k: v for k, v in flags.items() if v is not None})
    except ValidationError as exc:
        raise McpConfigError(settings_problem(exc)) from None


def settings_problem(exc: ValidationError) -> str:
    """A settings validation error as one line per setting, named as it is set."""
    problems = []
    for error in exc.errors():
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        loc = [str(part) for part in error.get("loc", ())]
        if loc and loc[0] in McpSettings.model_fields:
            problems.append(f"{setting_name(loc[0])}: {message}")
        else:
            problems.append(message)
    return "; ".join(problems)


def _checked(token: str, setting: str) -> str:
    # What an `Authorization: Bearer <token>` header can carry (RFC 6750 section 2.1 allows less).
    if not all("\x21" <= c <= "\x7e" for c in token):
        raise McpConfigError(
            f"{setting}: the token has a space, a control or a non-ASCII character, which an "
            "Authorization header cannot carry"
        )
    return token


def is_loopback(host: str) -> bool:
    """Whether a bind address reaches only this machine: localhost, 127.0.0.0/8 or ::1.

    Anything else (0.0.0.0, ::, an interface address, another name) may be reachable from the
    network."""
    name = host.strip().removeprefix("[").removesuffix("]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def require_http_token(host: str, token: str | None) -> None:
    """Refuse to serve HTTP beyond loopback without a bearer token: whoever reaches the endpoint
    would act with the gateway token's role."""
    if token is None and not is_loopback(host):
        raise McpConfigError(
            f"refusing to serve streamable HTTP on {host} without a bearer token: set "
            f"{TOKEN_SETTINGS}, or bind to loopback (--host 127.0.0.1)"
        )
