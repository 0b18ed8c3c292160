"""Settings of the MCP service, read from the environment (and `.env`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class McpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_", env_file=".env", extra="ignore")

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
        None, description="streamable-http: bearer token clients must send (unset: none asked)"
    )
    request_timeout_seconds: float = Field(
        30.0, gt=0, description="Timeout of one REST call (a long poll adds its wait to it)"
    )
