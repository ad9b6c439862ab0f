"""Network and security policy, as the sandbox is created with it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

__all__ = ["NetworkPolicy", "SecurityPolicy", "Secret", "Credential"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


@dataclass(frozen=True)
class Secret:
    """A value that must never be shown: masked in everything the sandbox prints, named (not
    shown) in the audit trail. In ``environment`` it enters the sandbox (and is redacted from
    output); in a :class:`Credential` it never enters the sandbox at all."""

    name: str
    value: str = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"Secret name {self.name!r}: letters, digits and _, not starting "
                             "with a digit")
        if not isinstance(self.value, str) or len(self.value) < 8:
            raise ValueError(f"Secret {self.name}: the value must be a str of at least 8 "
                             "characters (shorter values cannot be told apart from output)")

    @staticmethod
    def from_env(name: str) -> Secret:
        value = os.environ.get(name)
        if value is None:
            raise ValueError(f"Secret.from_env({name!r}): the variable is not set: export it")
        return Secret(name, value)


@dataclass(frozen=True)
class Credential:
    """Added by the engine's egress proxy for ``host`` only; the sandbox never holds it.

    ``header`` (e.g. ``"Authorization: Bearer ${secret:GITHUB_TOKEN}"``) is set on each HTTPS
    request to the host; with ``placeholder=True`` the sandbox's variable ``secret.name`` holds an
    opaque placeholder that the proxy swaps for the value in requests to the host only."""

    host: str
    secret: Secret
    header: str | None = None
    placeholder: bool = False

    def __post_init__(self) -> None:
        if (self.header is None) == (not self.placeholder):
            raise ValueError("Credential: give exactly one of header=... and placeholder=True")

    def wire(self) -> dict[str, object]:
        out: dict[str, object] = {"host": self.host, "name": self.secret.name,
                                  "value": self.secret.value}
        if self.placeholder:
            out["placeholder"] = True
        else:
            out["header"] = self.header
        return out


@dataclass(frozen=True)
class NetworkPolicy:
    """Egress: denied (the default), or an allowlist of domains (``*.example.org`` wildcards)."""

    domains: tuple[str, ...] = ()
    cidrs: tuple[str, ...] = ()
    credentials: tuple[Credential, ...] = ()

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

    def inject(self, host: str, secret: Secret,
               header: str = "Authorization: Bearer ${secret}") -> NetworkPolicy:
        """This policy plus ``header`` added to HTTPS requests to ``host`` (allowed too).
        ``${secret}`` in the header stands for the secret's value."""
        line = header.replace("${secret}", "${secret:" + secret.name + "}")
        return self._with(Credential(host, secret, header=line))

    def placeholder(self, host: str, secret: Secret) -> NetworkPolicy:
        """This policy plus a placeholder in the sandbox's ``secret.name`` variable that the proxy
        swaps for the value in requests to ``host`` only (allowed too)."""
        return self._with(Credential(host, secret, placeholder=True))

    def _with(self, c: Credential) -> NetworkPolicy:
        domains = self.domains if c.host in self.domains else (*self.domains, c.host)
        return replace(self, domains=domains, credentials=(*self.credentials, c))


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
