"""docindex's stdio MCP server (`docindex serve-mcp`), split along its seams:

    contract.py   crag-mcp's contract: argument validation and its wording, crag text formats
    payloads.py   what the tools answer (MCP results, JSON payloads)
    tools.py      the tools over the process's one Index (IndexService)
    server.py     the process: resources, logging to stderr, `run_stdio`

Clients: docs/mcp-clients.md (desktop `mcpServers` JSON, a Python client).
"""
