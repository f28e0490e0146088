"""Ground truth from LiteRT itself: the DELEGATE nodes the interpreter really creates.

``Interpreter._get_ops_details()`` lists the original nodes and then the DELEGATE nodes with their
boundary tensors. The Python API does not expose which nodes a DELEGATE replaced, so the node set
of each is recovered from a second interpreter with ``experimental_preserve_all_tensors=True``,
which disables node fusion: every delegated node becomes its own DELEGATE node (the delegate's
node selection does not depend on that flag), identifying the delegated ops exactly; each
partition's ops are then the delegated ops needed to compute its outputs from its inputs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class OracleDelegate:
    node: int
    ops: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def _details(path, shapes=None, **kw):
    from ai_edge_litert.interpreter import Interpreter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = Interpreter(model_path=str(path), **kw)
    # an application sizes dynamic inputs before allocate_tensors, where XNNPACK is applied
    for d in it.get_input_details():
        if shapes and d["name"] in shapes:
            it.resize_tensor_input(d["index"], list(shapes[d["name"]]))
    it.allocate_tensors()
    return it._get_ops_details()


def litert_delegates(path, *, greedy: bool = True, shapes=None) -> list[OracleDelegate]:
    """The DELEGATE nodes LiteRT (default XNNPACK) creates for subgraph 0, in node order, with
    the inputs named in ``shapes`` (tensor name -> shape) resized first."""
    kw = {} if greedy else {"experimental_disable_delegate_clustering": True}
    ops = _details(path, shapes, **kw)
    orig = [o for o in ops if o["op_name"] != "DELEGATE"]
    dele = [o for o in ops if o["op_name"] == "DELEGATE"]
    delegated = _delegated_ops(path, orig, shapes)
    producer = {}
    for o in orig:
        for t in o["outputs"]:
            if t >= 0:
                producer[int(t)] = o["index"]
    out = []
    for d in dele:
        ins = {int(t) for t in d["inputs"]}
        todo = [int(t) for t in d["outputs"]]
        members: set[int] = set()
        while todo:
            t = todo.pop()
            if t in ins or t not in producer:
                continue
            op = producer[t]
            if op in members:
                continue
            members.add(op)
            todo.extend(int(x) for x in orig[op]["inputs"] if x >= 0)
        assert members <= delegated, (members, delegated)
        out.append(
            OracleDelegate(
                int(d["index"]),
                tuple(sorted(members)),
                tuple(int(t) for t in d["inputs"]),
                tuple(int(t) for t in d["outputs"]),
            )
        )
    # Delegated ops not reached from any partition output (e.g. an ASSIGN_VARIABLE and the ops
    # feeding only it) are grouped by the tensors they pass among themselves (which no DELEGATE
    # node exposes, so they share a partition); each group belongs to the one partition that
    # can supply all of the group's other inputs.
    members_of = [set(d.ops) for d in out]
    left = delegated - set().union(*members_of) if out else set(delegated)
    boundary = {t for d in out for t in d.inputs + d.outputs}
    parent = {op: op for op in left}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for op in left:
        for t in orig[op]["inputs"]:
            t = int(t)
            src = producer.get(t)
            if t >= 0 and src in left and t not in boundary:
                parent[find(op)] = find(src)
    groups: dict[int, set[int]] = {}
    for op in left:
        groups.setdefault(find(op), set()).add(op)
    pending = list(groups.values())
    while pending:
        progress = False
        for grp in list(pending):
            produced = {int(t) for op in grp for t in orig[op]["outputs"] if t >= 0}
            need = {int(t) for op in grp for t in orig[op]["inputs"] if t >= 0} - produced
            homes = [
                k
                for k, d in enumerate(out)
                if all(t in d.inputs or producer.get(t) in members_of[k] for t in need)
            ]
            if len(homes) == 1:
                members_of[homes[0]] |= grp
                pending.remove(grp)
                progress = True
        assert progress, f"cannot place delegated ops {sorted(set().union(*pending))}"
    out = [
        OracleDelegate(d.node, tuple(sorted(members_of[k])), d.inputs, d.outputs)
        for k, d in enumerate(out)
    ]
    covered = set().union(*members_of) if out else set()
    assert covered == delegated, (covered, delegated)
    return out


def _delegated_ops(path, orig, shapes=None) -> set[int]:
    ops = _details(path, shapes, experimental_preserve_all_tensors=True)
    # Candidates are looked up by an output tensor: comparing every DELEGATE node with every
    # original node was quadratic (16 million comparisons, most of a minute, on a 4,000-op graph).
    out_sets = [{int(t) for t in o["outputs"]} for o in orig]
    in_sets = [{int(t) for t in o["inputs"] if t >= 0} for o in orig]
    by_output: dict[int, list[int]] = {}
    for k, outs in enumerate(out_sets):
        for t in outs:
            by_output.setdefault(t, []).append(k)
    found = set()
    for d in (o for o in ops if o["op_name"] == "DELEGATE"):
        ins = {int(t) for t in d["inputs"]}
        outs = {int(t) for t in d["outputs"]}
        # a node without outputs could match any original node: then every one is a candidate
        near = by_output.get(min(outs), []) if outs else range(len(orig))
        cands = [orig[k]["index"] for k in near if outs <= out_sets[k] and ins == in_sets[k]]
        assert len(cands) == 1, (d, cands)
        found.add(cands[0])
    return found


def litert_delegates_isolated(
    path, timeout: float = 300.0, shapes=None
) -> dict[bool, list[OracleDelegate]] | str:
    """Both clustering modes, computed in a child process (LiteRT can abort on odd models).

    Returns {greedy: delegates} or, if LiteRT fails or crashes on the model, the error text.
    """
    import json
    import subprocess
    import sys
    from pathlib import Path

    here, target = str(Path(__file__).parent), str(path)
    code = (
        f"import json, sys; sys.path.insert(0, {here!r})\n"
        "from litert_oracle import litert_delegates\n"
        f"out = {{str(g): [d.__dict__ for d in litert_delegates({target!r}, greedy=g, "
        f"shapes={dict(shapes or {})!r})]"
        " for g in (True, False)}\n"
        "print('ORACLE' + json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    for line in proc.stdout.splitlines():
        if line.startswith("ORACLE"):
            raw = json.loads(line[len("ORACLE") :])
            return {
                g == "True": [
                    OracleDelegate(
                        d["node"], tuple(d["ops"]), tuple(d["inputs"]), tuple(d["outputs"])
                    )
                    for d in v
                ]
                for g, v in raw.items()
            }
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return f"LiteRT failed on {path} (exit {proc.returncode}): {tail}"
