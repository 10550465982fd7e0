"""Stand-in for SandboxFusion's FastAPI app: the test client sends to
$SANDCELL_URL instead (../../fastapi/testclient.py)."""
app = object()
