"""An MCP server that fails at start: it says why on stderr and exits."""

import sys

sys.stderr.write("broken: MISSING_TOKEN is not set\n")
sys.exit(1)
