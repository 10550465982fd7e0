"""sandcell: run code in sandcell cells from Python (standard library only).

llm-sandbox's API (SandboxSession, ArtifactSandboxSession,
InteractiveSandboxSession, ConsoleOutput, ExecutionResult, PlotOutput, the
security policy and exceptions), an E2B-style Sandbox, and SandboxPool.
By default a private `sandcell serve` is started on a unix socket (and
stopped at exit); SANDCELL_URL (and SANDCELL_TOKEN) name a running server."""

from ._client import stop_private_servers
from .e2b import (CommandResult, EntryInfo, Execution, ExecutionError, Logs, Result, Sandbox)
from .exceptions import (CommandEmptyError, CommandExitException, CommandFailedError, ForkError,
                         LanguageNotSupportedError, LanguageNotSupportPlotError,
                         LibraryInstallationNotSupportedError, NotOpenSessionError, SandboxError,
                         SandboxTimeoutError, SecurityError, UnsupportedBackendError)
from .pool import SandboxPool
from .security import RestrictedModule, SecurityIssueSeverity, SecurityPattern, SecurityPolicy
from .session import (ArtifactSandboxSession, ConsoleOutput, ExecutionResult, FileType,
                      InteractiveSandboxSession, PlotOutput, SandboxBackend, SandboxSession)


class SupportedLanguage:
    """llm-sandbox's language names (sandcell knows more: `sandcell code languages`)."""
    PYTHON = "python"
    JAVASCRIPT = "javascript"
    JAVA = "java"
    CPP = "cpp"
    GO = "go"
    RUBY = "ruby"
    R = "r"
    BASH = "bash"


__version__ = "0.1.0"
__all__ = [n for n in dir() if not n.startswith("_")]
