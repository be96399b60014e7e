"""Which network addresses a web fetch may reach.

Invariants:
- an address is public only when it is a global unicast address: loopback, private
  (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10, so cloud metadata services),
  shared (100.64/10), multicast, reserved and unspecified addresses are not, nor an
  IPv4-mapped or 6to4/Teredo form of one;
- `GuardedResolver` resolves a name and hands the connector only public addresses (all of
  them when private ones are allowed); a name with none left is an error, so the address
  checked is the address connected to (no second lookup to race, no DNS rebinding);
- a host written as an IP address never reaches a resolver, so it is checked by
  `literal_refusal` before the request.
"""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class PrivateAddressError(OSError):
    """The host resolved only to addresses a fetch may not reach."""


def is_public(address: IpAddress) -> bool:
    """A global unicast address (see the module's invariants)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None and not is_public(embedded):
            return False
    return address.is_global and not address.is_multicast


def parse_ip(host: str) -> IpAddress | None:
    """The address when `host` is written as one (brackets and a zone id allowed), else None."""
    text = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def literal_refusal(host: str, allow_private: bool) -> str | None:
    """Why a host written as an IP address may not be fetched, or None."""
    address = parse_ip(host)
    if address is None or allow_private or is_public(address):
        return None
    return f"{host} is a private, loopback or link-local address"


class GuardedResolver(AbstractResolver):
    """Resolves like aiohttp's default resolver, then drops the addresses a fetch may not reach."""

    def __init__(self, allow_private: bool = False) -> None:
        self._inner = DefaultResolver()
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        if self._allow_private:
            return found
        kept = [entry for entry in found if (ip := parse_ip(entry["host"])) is not None and is_public(ip)]
        if not kept:
            shown = ", ".join(sorted({entry["host"] for entry in found})) or "no address"
            raise PrivateAddressError(f"{host} resolves to a private, loopback or link-local address ({shown})")
        return kept

    async def close(self) -> None:
        await self._inner.close()
