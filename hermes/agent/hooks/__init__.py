"""Hooks: the person's commands around tools, prompts, turn ends and new sessions,
compatible with Claude Code's (events, matchers, stdin JSON, exit code 2, decisions).

- hermes/hooks_config.py: the `[[hooks.EVENT]]` tables (and the one entry parser);
- claude_settings.py: a project's `.claude/settings.json` (`hooks_claude_compat = true`);
- names.py: Claude Code's tool names and hermes' own;
- runner.py: one hook command (tool environment, supervisor, sandbox, time limit);
- dispatch.py: which hooks run, their stdin, what their answers mean (HookOutcome);
- context.py: where their text goes in the model's copy of a turn.
"""

from hermes.agent.hooks.dispatch import HookOutcome, Hooks, TurnHooks

__all__ = ["HookOutcome", "Hooks", "TurnHooks"]
