"""Network and security policy, as the sandbox is created with it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["NetworkPolicy", "SecurityPolicy"]


@dataclass(frozen=True)
class NetworkPolicy:
    """Egress: denied (the default), or an allowlist of domains (``*.example.org`` wildcards)."""

    domains: tuple[str, ...] = ()
    cidrs: tuple[str, ...] = ()

    @staticmethod
    def denied() -> NetworkPolicy:
        return NetworkPolicy()

    @staticmethod
    def allowlist(domains: Iterable[str] = (), cidrs: Iterable[str] = ()) -> NetworkPolicy:
        d = tuple(domains)
        c = tuple(cidrs)
        for name in d:
            if not isinstance(name, str) or not name or "/" in name or " " in name:
                raise ValueError(
                    f"NetworkPolicy.allowlist: domain {name!r} is not a host name: write e.g. "
                    "'api.example.com' or '*.example.org'"
                )
        if c:
            raise ValueError(
                "NetworkPolicy.allowlist: cidrs are not accepted by the egress proxy, which "
                "decides by name and refuses private ranges; list the domains instead"
            )
        return NetworkPolicy(d, c)

    @property
    def enabled(self) -> bool:
        return bool(self.domains)


@dataclass(frozen=True)
class SecurityPolicy:
    """What the sandbox may do beyond the hardened defaults.

    ``approvals``: ``"none"`` or ``"recommended"`` (file deletion, system modification, git push
    and Python subprocesses wait for the ``approval_hook``).
    """

    network: NetworkPolicy = field(default_factory=NetworkPolicy.denied)
    max_output_bytes: int | None = None
    approvals: str | None = None

    def __post_init__(self) -> None:
        if self.max_output_bytes is not None and (
            not isinstance(self.max_output_bytes, int) or self.max_output_bytes <= 0
        ):
            raise ValueError(
                f"SecurityPolicy.max_output_bytes={self.max_output_bytes!r}: give a positive "
                "number of bytes, e.g. 10_000_000"
            )
        if self.approvals not in (None, "none", "recommended"):
            raise ValueError(
                f"SecurityPolicy.approvals={self.approvals!r}: use 'none' or 'recommended'"
            )
