"""`hermes hooks list`: the hooks that run here, and where each is configured.

    hermes hooks list [--json]

Lists config.toml's `[[hooks.EVENT]]` entries and, with `hooks_claude_compat = true`,
those of this folder's `.claude/settings.json` (and settings.local.json). `--json` prints
`{"object": "list", "data": [{"event", "matcher", "command", "timeout", "source"}],
"problems": [...], "claude_compat": bool}`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from hermes.cli._common import load_settings, print_json

app = typer.Typer(help="Show the hooks (commands run around tools, prompts and turn ends).", no_args_is_help=True)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help='Print {"object": "list", "data": [...]}.')) -> None:
    """Show every hook that runs in this folder and where it is configured."""
    from hermes.agent.hooks.claude_settings import FILES, claude_hooks

    settings = load_settings()
    hooks = list(settings.hooks)
    problems: list[str] = []
    if settings.hooks_claude_compat:
        found, problems = claude_hooks(Path.cwd())
        hooks += found
    if as_json:
        data = [
            {"event": h.event, "matcher": h.matcher, "command": h.command, "timeout": h.timeout, "source": h.source}
            for h in hooks
        ]
        print_json(
            {"object": "list", "data": data, "problems": problems, "claude_compat": settings.hooks_claude_compat}
        )
        return
    if not hooks:
        typer.echo(f"no hooks configured ([[hooks.PreToolUse]] … in {settings.config_path})")
    for hook in hooks:
        matcher = f" [{hook.matcher}]" if hook.matcher not in ("", "*") else ""
        source = str(settings.config_path) if not hook.from_claude else hook.source
        typer.echo(f"{hook.event}{matcher}  {hook.command}  (timeout {hook.timeout:g}s; {source})")
    if not settings.hooks_claude_compat:
        typer.echo(f"Claude Code's {' and '.join(FILES)} are not read (set hooks_claude_compat = true)")
    for problem in problems:
        typer.echo(f"problem: {problem}", err=True)
