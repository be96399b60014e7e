"""run_matrix.py drives libraries that are not project dependencies (see its docstring):
it is a script, never collected by pytest."""

collect_ignore_glob = ["*.py"]
