"""The MCP service: agent tools that call the gateway's REST API, and nothing else."""
