"""Stand-in: SandboxFusion's step statuses and results (see ../../README.md)."""
from enum import Enum

from sandbox.models import Model


class CommandRunStatus(str, Enum):
    Finished = 'Finished'
    Error = 'Error'
    TimeLimitExceeded = 'TimeLimitExceeded'


class CommandRunResult(Model):
    FIELDS = {'status': None, 'execution_time': None, 'return_code': None, 'stdout': None,
              'stderr': None}
    NESTED = {'status': CommandRunStatus}


class CellRunResult(Model):
    FIELDS = {'stdout': '', 'stderr': '', 'display': [], 'error': []}
