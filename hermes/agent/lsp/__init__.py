"""Language servers for diagnostics after edits.

- rpc.py: one server process spoken to in JSON-RPC over stdio (LSP's framing);
- languages.py: which language a file is, and which server command serves it;
- diagnostics.py: `LanguageServers`, started lazily per language and working folder, which
  answers "what did this edit break?" for `write_file` and `patch`.
"""
