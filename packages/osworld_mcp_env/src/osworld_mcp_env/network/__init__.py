"""Network access of a desktop: loopback only by default, the web through a host proxy on request."""

from osworld_mcp_env.network.config import RELAY_PORT, NetworkConfig, NetworkMode

__all__ = ["RELAY_PORT", "NetworkConfig", "NetworkMode"]
