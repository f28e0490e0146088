"""Cluster profiles: several devices (each a device profile) and the network links between them.

A cluster profile (``schema: edgepart/cluster@1``) names its nodes in pipeline order, each
with a device profile (shipped name or path, relative to the cluster file) and the Ray custom
resource that pins a stage to that node, and the links between nodes with their bandwidth and
latency::

    schema: edgepart/cluster@1
    name: three_hosts            # must match the file name
    nodes:
      - {name: n0, profile: x86_host}              # resource defaults to edgepart_node_n0
      - {name: n1, profile: x86_host, resource: rack1}
      - {name: n2, profile: raspberry_pi5}
    links:                       # directed; a missing reverse link is the same link
      - {src: n0, dst: n1, bandwidth_bytes_per_s: 1.25e+8, latency_s: 0.0002}
      - {src: n1, dst: n2, bandwidth_bytes_per_s: 1.25e+8, latency_s: 0.0002}

Every error names the file and key path (:class:`~edgepart.errors.ProfileError`).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from edgepart.devices.profile import DeviceProfile, load_profile
from edgepart.devices.yaml_files import Loc, check_header, load_yaml
from edgepart.errors import ProfileError

__all__ = ["SCHEMA", "ClusterLink", "ClusterNode", "ClusterProfile", "load_cluster"]

SCHEMA = "edgepart/cluster@1"


@dataclass(frozen=True)
class ClusterNode:
    """One device of the cluster and the Ray resource that places stages on it."""

    name: str
    profile: DeviceProfile
    resource: str


@dataclass(frozen=True)
class ClusterLink:
    """A network link between two nodes."""

    src: str
    dst: str
    bandwidth_bytes_per_s: float
    latency_s: float

    def seconds(self, nbytes: int) -> float:
        """Time to move ``nbytes`` over the link."""
        return self.latency_s + nbytes / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class ClusterProfile:
    """The nodes in pipeline order and the links between them."""

    name: str
    nodes: tuple[ClusterNode, ...]
    links: tuple[ClusterLink, ...]
    path: str = ""

    def link(self, a: str, b: str) -> ClusterLink | None:
        """The link from node ``a`` to node ``b`` (either direction as written), or None."""
        for ln in self.links:
            if (ln.src, ln.dst) == (a, b):
                return ln
        for ln in self.links:
            if (ln.src, ln.dst) == (b, a):
                return ln
        return None


def load_cluster(path: str | os.PathLike[str]) -> ClusterProfile:
    r"""Load a cluster profile YAML file.

    Parameters
    ----------
    path
        The cluster profile file.

    Returns
    -------
    ClusterProfile
        Its nodes (profiles loaded) and links.

    Raises
    ------
    ProfileError
        A missing file, bad YAML, an unknown key, a bad value, an unknown or repeated node, a
        device profile that does not load, or consecutive nodes without a link (file and key
        path in the message).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "two.yaml")
    >>> with open(path, "w") as f:
    ...     _ = f.write(
    ...         "schema: edgepart/cluster@1\nname: two\nnodes:\n"
    ...         "  - {name: a, profile: x86_host}\n  - {name: b, profile: raspberry_pi5}\n"
    ...         "links:\n  - {src: a, dst: b, bandwidth_bytes_per_s: 1.25e+8, latency_s: 0.0002}\n"
    ...     )
    >>> cluster = load_cluster(path)
    >>> [(n.name, n.profile.name) for n in cluster.nodes]
    [('a', 'x86_host'), ('b', 'raspberry_pi5')]
    """
    p = os.fspath(path)
    loc = Loc(p)
    d = loc.mapping(load_yaml(p))
    loc.keys(d, ("schema", "name", "nodes", "links"), ("title", "source"))
    name = check_header(d, loc, SCHEMA)
    nodes: list[ClusterNode] = []
    nl = loc / "nodes"
    for i, body in enumerate(nl.sequence(d["nodes"], nonempty=True)):
        at = nl / i
        b = at.mapping(body)
        at.keys(b, ("name", "profile"), ("resource",))
        nname = (at / "name").string(b["name"])
        if any(n.name == nname for n in nodes):
            raise (at / "name").error(f"node {nname!r} is listed twice")
        ref = (at / "profile").string(b["profile"])
        local = Path(p).parent / ref
        try:
            prof = load_profile(local if ref.endswith((".yaml", ".yml")) else ref)
        except ProfileError as err:
            raise (at / "profile").error(f"{ref!r} does not load: {err}") from None
        res = (
            (at / "resource").string(b["resource"]) if "resource" in b else f"edgepart_node_{nname}"
        )
        nodes.append(ClusterNode(nname, prof, res))
    names = {n.name for n in nodes}
    links: list[ClusterLink] = []
    ll = loc / "links"
    for i, body in enumerate(ll.sequence(d["links"])):
        at = ll / i
        b = at.mapping(body)
        at.keys(b, ("src", "dst", "bandwidth_bytes_per_s", "latency_s"), ())
        ends = [(at / k).choice(b[k], sorted(names)) for k in ("src", "dst")]
        if ends[0] == ends[1]:
            raise (at / "dst").error(f"a link joins two different nodes, got {ends[0]!r} twice")
        links.append(
            ClusterLink(
                ends[0],
                ends[1],
                (at / "bandwidth_bytes_per_s").number(b["bandwidth_bytes_per_s"], positive=True),
                (at / "latency_s").number(b["latency_s"], lo=0.0),
            )
        )
    out = ClusterProfile(name, tuple(nodes), tuple(links), p)
    for a, b2 in itertools.pairwise(nodes):
        if out.link(a.name, b2.name) is None:
            raise ll.error(
                f"nodes {a.name!r} and {b2.name!r} are consecutive pipeline stages but no link "
                "joins them; add {src: ..., dst: ..., bandwidth_bytes_per_s: ..., latency_s: ...}"
            )
    return out
