"""Agent harness for hybrid GUI + MCP computer-use agents."""
