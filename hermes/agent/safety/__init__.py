"""What a tool may touch: hermes' whole tool policy, in one folder.

The tools (hermes/agent/tools/) ask these modules before they read, write or run anything;
this package never imports the tools, the engine or a front end (tests/sandbox/test_safety_layering.py).

Where things live:
- paths.py            where hermes's own files are (its home, ~/.hermes, its installation):
                      worked out once, asked by every module below;
- confinement.py      where tools may write and what they may never see (hidden paths), one
                      policy for every tool: `Confinement`, `private_tmp`, `is_process_secret`;
- sandbox.py          the bubblewrap sandbox for tool processes, built from the confinement;
- verdict.py          the policy's answer for one action: allow, approve or block (`Verdict`);
- approval.py         the dangerous-command and file-write policy (`classify_command`,
                      `check_write_path`) and the refusal texts the model reads;
- command_rules.py    per-program rules of the approval policy (rm, git, dd, chmod, …);
- shell_syntax.py     the forgiving shell reader the approval policy classifies with;
- protected_paths.py  critical targets, disk devices, sensitive and secret files, and how
                      paths written in commands are read (`~`, `$HOME`, `$HERMES_HOME`);
- runs_later.py       files that run code later (shell start-up files, .git/config, hooks, .envrc);
- grants.py           what "allow for this session" covers (`session_grant`, `path_grant`);
- secret_reads.py     the read guards of the file tools (hidden paths, private keys in server mode);
- restore_guard.py    what undo and redo may never write, handed down by the front ends;
- tool_env.py         the allowlisted environment every tool process starts with;
- limits.py           how the per-call `[tool_limits]` are enforced (rlimits, pids cgroup);
- launch.py           how tool processes start: environment, supervisor, optional sandbox;
- _supervisor.py      the supervisor script of one tool call (run as a script, never imported).
"""
