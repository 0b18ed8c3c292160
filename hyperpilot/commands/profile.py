"""`hyperpilot profile`: named gateways with their tokens, kept in the user's config directory."""

from __future__ import annotations

from typing import Annotated

import typer

from hyperpilot import config as configuration
from hyperpilot.commands.common import GLOBALS, Area, Output, examples, fmt
from hyperpilot.commands.complete import profile_names
from hyperpilot.output import Column, emit, table

app = Area("profile", "Profiles: gateway URL + token, in ~/.config/hyperpilot/config.yaml.")

ProfileName = Annotated[
    str, typer.Argument(help="Profile name", autocompletion=profile_names, show_default=False)
]


@app.command(
    epilog=examples(
        "hyperpilot profile add local --url http://127.0.0.1:3099 --token $(cat .hyperpilot/admin-token)",
        "hyperpilot profile add prod --url https://hyperpilot.example.com   # asks for the token",
    )
)
def add(
    name: Annotated[str, typer.Argument(help="Profile name", show_default=False)],
    url: Annotated[str, typer.Option(help="The gateway's base URL")],
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token (asked for, hidden, when omitted on a terminal)",
            show_default=False,
        ),
    ] = None,
    use: Annotated[bool, typer.Option("--use/--no-use", help="Make it the current profile")] = True,
) -> None:
    """Add (or replace) a profile; the file is written with mode 0600."""
    if token is None and typer.get_text_stream("stdin").isatty():
        token = typer.prompt("token", hide_input=True, default="", show_default=False) or None
    config = configuration.add_profile(name, url, token, make_current=use)
    typer.echo(
        f"profile {name} saved in {configuration.config_path()}"
        + (" (current)" if config.current == name else "")
    )


@app.command(epilog=examples("hyperpilot profile use prod"))
def use(name: ProfileName) -> None:
    """Make a profile the current one."""
    configuration.use_profile(name)
    typer.echo(f"current profile: {name}")


@app.command("list", epilog=examples("hyperpilot profile list", "hyperpilot profile list -o json"))
def list_(output: Output = None) -> None:
    """List profiles (tokens masked); the current one is marked with *."""
    config = configuration.load()
    rows = [
        {
            "current": name == config.current,
            "name": name,
            "url": p.url,
            "token": configuration.mask(p.token),
        }
        for name, p in sorted(config.profiles.items())
    ]
    columns = [
        Column("", lambda r: "*" if r["current"] else ""),
        Column("NAME", "name"),
        Column("URL", "url", wrap=True),
        Column("TOKEN", "token"),
    ]
    emit(rows, fmt(output), lambda r: table(r, columns) if r else "(no profiles)")


@app.command(epilog=examples("hyperpilot profile remove old-staging"))
def remove(name: ProfileName) -> None:
    """Remove a profile."""
    config = configuration.remove_profile(name)
    typer.echo(f"removed {name}; current profile: {config.current or 'none'}")


@app.command(
    epilog=examples(
        "hyperpilot profile show", "HYPERPILOT_URL=http://10.0.0.5:3099 hyperpilot profile show"
    )
)
def show(output: Output = None) -> None:
    """Show what commands will use (URL, token masked) and where each came from."""
    resolved = configuration.resolve(profile=GLOBALS.profile, url=GLOBALS.url)
    data = {
        "profile": resolved.profile,
        "url": resolved.url,
        "url_from": resolved.url_source,
        "token": configuration.mask(resolved.token),
        "token_from": resolved.token_source,
        "config_file": str(configuration.config_path()),
    }
    emit(data, fmt(output))
