"""Profiles: which gateway to talk to and with which token.

The file is `$XDG_CONFIG_HOME/hyperpilot/config.yaml` (or `~/.config/hyperpilot/config.yaml`),
written with mode 0600 because it holds bearer tokens:

    current: prod
    profiles:
      prod: {url: https://hyperpilot.example.com, token: hp_...}
      local: {url: http://127.0.0.1:3099, token: hp_...}

What a command uses, highest first: `--url` / `HYPERPILOT_URL` and `HYPERPILOT_TOKEN`, then the
profile named by `--profile` / `HYPERPILOT_PROFILE`, then the current profile, then the local
default URL (http://127.0.0.1:3099) without a token.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_URL = "http://127.0.0.1:3099"
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class ConfigError(Exception):
    """The config file or a profile request is unusable; the message says how to fix it."""


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hyperpilot"


def config_path() -> Path:
    return config_dir() / "config.yaml"


@dataclass
class Profile:
    url: str
    token: str | None = None


@dataclass
class Config:
    current: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "current": self.current,
            "profiles": {
                name: {"url": p.url, **({"token": p.token} if p.token else {})}
                for name, p in sorted(self.profiles.items())
            },
        }


def load(path: Path | None = None) -> Config:
    path = path or config_path()
    if not path.exists():
        return Config()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML ({exc}); fix or remove it") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping with 'current' and 'profiles'")
    profiles: dict[str, Profile] = {}
    raw_profiles = data.get("profiles") or {}
    if not isinstance(raw_profiles, dict):
        raise ConfigError(f"{path}: 'profiles' must be a mapping of name -> {{url, token}}")
    for name, raw in raw_profiles.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("url"), str):
            raise ConfigError(f"{path}: profile {name!r} needs a 'url' string")
        token = raw.get("token")
        profiles[str(name)] = Profile(url=raw["url"], token=str(token) if token else None)
    current = data.get("current")
    return Config(current=str(current) if current else None, profiles=profiles)


def save(config: Config, path: Path | None = None) -> Path:
    """Write the file atomically with mode 0600 (its directory 0700)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config.to_dict(), handle, sort_keys=False)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def check_url(url: str) -> str:
    if not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f"{url!r} is not an http(s) URL; use e.g. {DEFAULT_URL}")
    return url.rstrip("/")


def add_profile(
    name: str, url: str, token: str | None, *, make_current: bool, path: Path | None = None
) -> Config:
    if not PROFILE_NAME.match(name):
        raise ConfigError(
            f"{name!r} is not a valid profile name; use letters, digits, '.', '_' or '-'"
        )
    config = load(path)
    config.profiles[name] = Profile(url=check_url(url), token=token or None)
    if make_current or config.current is None:
        config.current = name
    save(config, path)
    return config


def use_profile(name: str, path: Path | None = None) -> Config:
    config = load(path)
    if name not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none yet"
        raise ConfigError(
            f"no profile named {name!r} (known: {known}); add it with "
            f"`hyperpilot profile add {name} --url URL --token TOKEN`"
        )
    config.current = name
    save(config, path)
    return config


def remove_profile(name: str, path: Path | None = None) -> Config:
    config = load(path)
    if name not in config.profiles:
        raise ConfigError(f"no profile named {name!r}; `hyperpilot profile list` shows them")
    del config.profiles[name]
    if config.current == name:
        config.current = next(iter(sorted(config.profiles)), None)
    save(config, path)
    return config


@dataclass
class Resolved:
    """The gateway URL and token a command uses, and where each came from."""

    url: str
    token: str | None
    profile: str | None
    url_source: str
    token_source: str


def resolve(
    *, profile: str | None = None, url: str | None = None, path: Path | None = None
) -> Resolved:
    config = load(path)
    name = profile or os.environ.get("HYPERPILOT_PROFILE") or config.current
    chosen: Profile | None = None
    if name is not None:
        chosen = config.profiles.get(name)
        if chosen is None and (profile or os.environ.get("HYPERPILOT_PROFILE")):
            known = ", ".join(sorted(config.profiles)) or "none yet"
            raise ConfigError(f"no profile named {name!r} (known: {known})")
    env_url = os.environ.get("HYPERPILOT_URL")
    env_token = os.environ.get("HYPERPILOT_TOKEN")
    if url:
        final_url, url_source = url, "--url"
    elif env_url:
        final_url, url_source = env_url, "HYPERPILOT_URL"
    elif chosen is not None:
        final_url, url_source = chosen.url, f"profile {name}"
    else:
        final_url, url_source = DEFAULT_URL, "default"
    if env_token:
        token, token_source = env_token, "HYPERPILOT_TOKEN"
    elif chosen is not None and chosen.token:
        token, token_source = chosen.token, f"profile {name}"
    else:
        token, token_source = None, "none"
    return Resolved(
        url=check_url(final_url),
        token=token,
        profile=name if chosen is not None else None,
        url_source=url_source,
        token_source=token_source,
    )


def mask(token: str | None) -> str:
    if not token:
        return "-"
    return token[:5] + "..." + token[-3:] if len(token) > 12 else "***"
