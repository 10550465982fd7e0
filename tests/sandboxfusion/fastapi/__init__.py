"""Stand-in for FastAPI (see ../README.md): only fastapi.testclient."""
