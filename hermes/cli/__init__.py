"""The `hermes` command line: thin Typer commands over library code."""
