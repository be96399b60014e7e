"""run_openwebui.py drives Open WebUI in a browser (see README.md here): a script, never collected by pytest."""

collect_ignore_glob = ["*.py"]
