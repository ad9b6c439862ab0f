"""AgentNest: secure, policy-wrapped sandboxes for AI agents.

>>> from agentnest import Sandbox                          # doctest: +SKIP
>>> sandbox = Sandbox()                                     # doctest: +SKIP
>>> sandbox.run_code("a = 10; print(a * 2)").output         # doctest: +SKIP
'20\\n'

Without ``AGENTNEST_URL`` the package starts one local engine per user on first use (Java 17 and
Docker are the prerequisites); with ``AGENTNEST_URL`` and ``AGENTNEST_API_KEY`` it talks to an
``agentnest serve`` instead. Same API either way.
"""

from .aio import AsyncPythonSession, AsyncSandbox
from .errors import (
    AgentNestError,
    ExecutionTimeoutError,
    FileAccessError,
    PolicyDeniedError,
    QuotaExceededError,
    RuntimeNotAvailableError,
    SandboxDestroyedError,
)
from .policy import Credential, NetworkPolicy, Secret, SecurityPolicy
from .pool import SandboxPool
from .results import Artifact, CodeError, CodeResult, ExecutionResult, FileInfo, SessionResult
from .sandbox import ApprovalRequest, PythonSession, Sandbox

__version__ = "0.1.0.dev0"

__all__ = [
    "Sandbox",
    "AsyncSandbox",
    "PythonSession",
    "AsyncPythonSession",
    "SandboxPool",
    "NetworkPolicy",
    "SecurityPolicy",
    "Secret",
    "Credential",
    "ApprovalRequest",
    "ExecutionResult",
    "CodeResult",
    "CodeError",
    "SessionResult",
    "Artifact",
    "FileInfo",
    "AgentNestError",
    "ExecutionTimeoutError",
    "PolicyDeniedError",
    "SandboxDestroyedError",
    "FileAccessError",
    "RuntimeNotAvailableError",
    "QuotaExceededError",
]
