"""Stand-in for SandboxFusion's package (see ../README.md)."""
