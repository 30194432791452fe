"""The TCP addresses a process listens on, from ``/proc`` (Linux): the process's socket
inodes (``/proc/PID/fd``) matched against ``/proc/net/tcp`` and ``tcp6`` in LISTEN state."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

__all__ = ["LOOPBACK", "listening", "not_loopback"]

_LISTEN = "0A"


def _address(hex_ip: str) -> str:
    raw = bytes.fromhex(hex_ip)
    # /proc prints each 32-bit word in host (little-endian) order
    fixed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(fixed)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def listening(pid: int) -> set[tuple[str, int]]:
    """``(address, port)`` of every TCP socket ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out: set[tuple[str, int]] = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and inode in inodes:
                hex_ip, hex_port = local.split(":")
                out.add((_address(hex_ip), int(hex_port, 16)))
    return out


LOOPBACK = frozenset({"127.0.0.1", "::1"})


def not_loopback(sockets: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The sockets not on a loopback address (0.0.0.0 and :: included)."""
    return {s for s in sockets if s[0] not in LOOPBACK}
