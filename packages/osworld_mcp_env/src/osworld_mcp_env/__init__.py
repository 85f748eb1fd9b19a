"""Gymnasium env for hybrid (GUI + MCP) computer-use agents on a real desktop."""
