"""Exceptions, named as llm-sandbox names them (and E2B's command error)."""


class SandboxError(Exception):
    """Something sandcell itself could not do (server, cell, request)."""


class SandboxTimeoutError(SandboxError):
    """The code or command ran past its timeout (it was killed in the cell)."""


class SecurityError(SandboxError):
    """A refused path ('..' in a cell path) or code refused by the security policy."""


class NotOpenSessionError(SandboxError):
    """The session is not open: call open() or use it as a context manager."""

    def __init__(self, msg="session is not open: call open() or use 'with'"):
        super().__init__(msg)


class LanguageNotSupportedError(SandboxError):
    """The language is unknown, or cannot do what was asked (state, libraries)."""


class LanguageNotSupportPlotError(LanguageNotSupportedError):
    """Plots are captured for python only."""


class LibraryInstallationNotSupportedError(LanguageNotSupportedError):
    """The language has no library installer in sandcell."""


class UnsupportedBackendError(SandboxError, ValueError):
    """A backend= sandcell cannot stand in for (kubernetes, micromamba, ...)."""


class CommandEmptyError(SandboxError):
    """An empty command was given."""


class CommandFailedError(SandboxError):
    """A command of execute_commands failed."""


class ForkError(SandboxError):
    """Some children of a fork were not made: .children holds the ones that
    were (still open: close them, or use them), .errors each failure."""

    def __init__(self, children, errors):
        super().__init__("%d of %d children not made: %s"
                         % (len(errors), len(children) + len(errors), "; ".join(errors)[:500]))
        self.children, self.errors = children, errors


class CommandExitException(SandboxError):
    """E2B: a command exited non-zero (stdout, stderr, exit_code are kept)."""

    def __init__(self, stdout, stderr, exit_code, error=None):
        super().__init__("command exited with code %d: %s" % (exit_code, (stderr or "")[-500:]))
        self.stdout, self.stderr, self.exit_code, self.error = stdout, stderr, exit_code, error
