# SPDX-License-Identifier: BSD-3-Clause
"""Two network namespaces joined by a veth pair, made for one experiment
and always removed: the server runs in one, the load generator in the
other, so their traffic crosses a real (virtual) link instead of loopback.

    with NetnsPair() as ns:
        server = MemcachedServer(..., wrap=ns.server_wrap(), host=ns.server_addr, netns=ns.client)
        subprocess.run([*ns.client_wrap(), "loadgen", "-s", ns.server_addr, "--allow-nonloopback", ...])

The addresses are in 10.211.0.0/16, inside namespaces this process made;
nothing outside them can route to them.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field


class NetnsError(RuntimeError):
    pass


def ip(*args: str) -> None:
    out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if out.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {out.stderr.strip()}")


def exists(name: str) -> bool:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20)
    return any(line.split()[0] == name for line in out.stdout.splitlines() if line.strip())


@dataclass
class NetnsPair:
    tag: str = field(default_factory=lambda: str(os.getpid()))
    created: list[str] = field(default_factory=list)

    @property
    def server(self) -> str:
        return f"svb-{self.tag}-srv"

    @property
    def client(self) -> str:
        return f"svb-{self.tag}-cli"

    @property
    def subnet(self) -> int:
        return int(self.tag) % 250 + 1

    @property
    def server_addr(self) -> str:
        return f"10.211.{self.subnet}.1"

    @property
    def client_addr(self) -> str:
        return f"10.211.{self.subnet}.2"

    def server_wrap(self) -> list[str]:
        return ["ip", "netns", "exec", self.server]

    def client_wrap(self) -> list[str]:
        return ["ip", "netns", "exec", self.client]

    def create(self) -> "NetnsPair":
        if os.geteuid() != 0:
            raise NetnsError("network namespaces need root (ip netns add)")
        try:
            for ns in (self.server, self.client):
                if exists(ns):
                    raise NetnsError(f"network namespace {ns} already exists")
                ip("netns", "add", ns)
                self.created.append(ns)
            veth_s, veth_c = f"svb{self.tag}s"[:15], f"svb{self.tag}c"[:15]
            ip("link", "add", veth_s, "netns", self.server, "type", "veth",
               "peer", "name", veth_c, "netns", self.client)
            for ns, dev, addr in ((self.server, veth_s, self.server_addr),
                                  (self.client, veth_c, self.client_addr)):
                ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
                ip("-n", ns, "link", "set", dev, "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self) -> None:
        """Delete what create() made (the veth goes with its namespace)."""
        for ns in reversed(self.created):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=20)
        self.created.clear()

    def __enter__(self) -> "NetnsPair":
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()
