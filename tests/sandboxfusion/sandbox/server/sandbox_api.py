"""Stand-in: the request and response models of SandboxFusion's API, with
its documented fields and defaults (see ../../README.md)."""
from enum import Enum

from sandbox.models import REQUIRED, Model
from sandbox.runners import CellRunResult, CommandRunResult


class RunStatus(str, Enum):
    Success = 'Success'
    Failed = 'Failed'
    SandboxError = 'SandboxError'


class RunCodeRequest(Model):
    FIELDS = {'compile_timeout': 10, 'run_timeout': 10, 'memory_limit_MB': -1, 'code': REQUIRED,
              'stdin': None, 'language': REQUIRED, 'files': {}, 'fetch_files': []}


class RunCodeResponse(Model):
    FIELDS = {'status': REQUIRED, 'message': REQUIRED, 'compile_result': None, 'run_result': None,
              'executor_pod_name': None, 'files': {}}
    NESTED = {'status': RunStatus, 'compile_result': CommandRunResult,
              'run_result': CommandRunResult}


class RunJupyterRequest(Model):
    FIELDS = {'cells': REQUIRED, 'cell_timeout': 0, 'total_timeout': 45, 'memory_limit_MB': -1,
              'kernel': 'python3', 'files': {}, 'fetch_files': []}


class RunJupyterResponse(Model):
    FIELDS = {'status': REQUIRED, 'message': REQUIRED, 'driver': None, 'cells': [],
              'executor_pod_name': None, 'files': {}}
    NESTED = {'status': RunStatus, 'driver': CommandRunResult, 'cells': (CellRunResult,)}
