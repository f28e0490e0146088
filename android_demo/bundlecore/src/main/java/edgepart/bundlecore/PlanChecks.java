package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The cross-reference checks of a schema-valid plan (the same checks, in the same order and with
 * the same messages, as edgepart's {@code edgepart/bundle/_checks.py::check_plan}): unique ids
 * and files; ops in range, ascending, each placed once; every input a model input or an output of
 * an earlier partition; {@code depends_on} equal to the producers; nothing written twice;
 * producer and consumer agree on dtype and shape; every model output written; and for a
 * version-2 plan, {@code edgepart/bundle/tensor_parallel.py::check_tensor_parallel}'s checks of
 * the splits and collectives.
 */
final class PlanChecks {
    private PlanChecks() {}

    static void check(Plan plan, String where) {
        List<String> ids = new ArrayList<>();
        List<String> files = new ArrayList<>();
        for (Plan.Partition p : plan.partitions) {
            ids.add(p.id);
            files.add(p.file);
        }
        unique(ids, "id", where);
        unique(files, "file", where);
        checkOps(plan, where);
        Map<Integer, Plan.TensorRef> modelIn = byTensor(plan.inputs);
        Map<Integer, Plan.TensorRef> modelOut = byTensor(plan.outputs);
        if (modelIn.size() != plan.inputs.size() || modelOut.size() != plan.outputs.size()) {
            throw new BundleException(where
                    + ": a tensor is listed twice among the model inputs or outputs");
        }
        Map<Integer, Integer> madeBy = new HashMap<>();
        Map<Integer, Plan.TensorRef> made = new HashMap<>();
        for (int k = 0; k < plan.partitions.size(); k++) {
            Plan.Partition p = plan.partitions.get(k);
            String here = where + ": partition " + Json.repr(p.id);
            for (List<Plan.TensorRef> side : java.util.Arrays.asList(p.inputs, p.outputs)) {
                Set<Integer> locals = new HashSet<>();
                for (Plan.TensorRef t : side) {
                    if (!locals.add(t.index)) {
                        throw new BundleException(here
                                + ": two boundary tensors share a partition-file index");
                    }
                }
            }
            Set<String> deps = new HashSet<>();
            for (Plan.TensorRef t : p.inputs) {
                if (modelIn.containsKey(t.tensor)) {
                    sameType(t, modelIn.get(t.tensor), here + " input", where);
                    continue;
                }
                if (!made.containsKey(t.tensor)) {
                    throw new BundleException(here + " reads tensor " + t.tensor + " "
                            + Json.repr(t.tensorName) + ", which is neither a model input nor "
                            + "written by an earlier partition; list partitions in dependency "
                            + "order");
                }
                sameType(t, made.get(t.tensor), here + " input", where);
                deps.add(plan.partitions.get(madeBy.get(t.tensor)).id);
            }
            List<String> want = new ArrayList<>();
            for (String q : ids.subList(0, k)) {
                if (deps.contains(q)) {
                    want.add(q);
                }
            }
            if (!p.dependsOn.equals(want)) {
                throw new BundleException(here + ": depends_on is " + Json.repr(p.dependsOn)
                        + " but its inputs come from " + Json.repr(want));
            }
            for (Plan.TensorRef t : p.outputs) {
                if (made.containsKey(t.tensor) || modelIn.containsKey(t.tensor)) {
                    throw new BundleException(here + " writes tensor " + t.tensor
                            + ", which is already written");
                }
                made.put(t.tensor, t);
                madeBy.put(t.tensor, k);
                if (modelOut.containsKey(t.tensor)) {
                    sameType(t, modelOut.get(t.tensor), here + " output", where);
                }
            }
        }
        for (Plan.TensorRef mt : plan.outputs) {
            if (!made.containsKey(mt.tensor) && !modelIn.containsKey(mt.tensor)) {
                throw new BundleException(where + ": model output " + Json.repr(mt.name)
                        + " (tensor " + mt.tensor + ") is written by no partition");
            }
        }
        checkTensorParallel(plan, where);
    }

    /** Splits and collectives: the same checks, order and messages as Python's. */
    static void checkTensorParallel(Plan plan, String where) {
        if (plan.splits.isEmpty() && plan.collectives.isEmpty()) {
            return;
        }
        String here = where + ": splits";
        Map<Integer, String> owner = new HashMap<>();
        Set<String> pids = new HashSet<>();
        Map<Integer, String> made = new HashMap<>();
        Set<String> read = new HashSet<>();
        for (Plan.Partition p : plan.partitions) {
            pids.add(p.id);
            for (int op : p.ops) {
                owner.put(op, p.id);
            }
            for (Plan.TensorRef t : p.outputs) {
                made.put(t.tensor, p.id);
            }
            for (Plan.TensorRef t : p.inputs) {
                read.add(t.tensor + "@" + p.id);
            }
        }
        Set<Integer> inputs = new HashSet<>();
        for (Plan.TensorRef t : plan.inputs) {
            inputs.add(t.tensor);
        }
        Set<String> splitIds = new HashSet<>();
        for (Plan.Split s : plan.splits) {
            if (!splitIds.add(s.id)) {
                throw new BundleException(here + ": two splits share an id");
            }
        }
        Set<String> collIds = new HashSet<>();
        for (Plan.Collective c : plan.collectives) {
            if (!collIds.add(c.id)) {
                throw new BundleException(where + ": collectives: two collectives share an id");
            }
        }
        Set<Integer> seenSrc = new HashSet<>();
        for (Plan.Split s : plan.splits) {
            String at = here + ": " + s.id;
            if (s.sizes.length != s.shards.size() || s.shards.size() < 2) {
                throw new BundleException(at + ": " + s.shards.size() + " shards for "
                        + s.sizes.length + " sizes");
            }
            Set<Integer> src = new HashSet<>();
            for (int op : s.sourceOps) {
                src.add(op);
                if (seenSrc.contains(op)) {
                    throw new BundleException(at + ": replaces an op another split replaced");
                }
            }
            seenSrc.addAll(src);
            for (int op : s.ops) {
                if (!src.contains(op)) {
                    throw new BundleException(at
                            + ": its anchor ops are not among the ops it replaced");
                }
            }
            for (Plan.Shard sh : s.shards) {
                for (int op : sh.ops) {
                    if (!owner.containsKey(op)) {
                        throw new BundleException(at + ": shard op " + op
                                + " is in no partition");
                    }
                }
                int last = sh.ops[sh.ops.length - 1];
                if (!owner.get(last).equals(sh.partition)) {
                    throw new BundleException(at + ": shard op " + last + " runs in partition "
                            + Json.repr(owner.get(last)) + ", not " + Json.repr(sh.partition));
                }
            }
            for (int op : s.collectiveOps) {
                if (!owner.containsKey(op)) {
                    throw new BundleException(at + ": collective op " + op
                            + " is in no partition");
                }
            }
            Plan.Collective c = plan.collective(s.collective);
            if (c == null || !c.split.equals(s.id)
                    || !(c.kind.equals("all_gather") || c.kind.equals("all_reduce"))) {
                throw new BundleException(at + ": collective " + Json.repr(s.collective)
                        + " is not an all-gather or all-reduce of it");
            }
            if (c.tensor != s.output || !java.util.Arrays.equals(c.ops, s.collectiveOps)) {
                throw new BundleException(at + ": collective " + Json.repr(c.id)
                        + " does not write the split's output");
            }
        }
        for (Plan.Collective c : plan.collectives) {
            String at = where + ": collectives: " + c.id;
            if (!splitIds.contains(c.split)) {
                throw new BundleException(at + ": names split " + Json.repr(c.split)
                        + ", which the plan does not have");
            }
            List<String> named = new ArrayList<>(c.to);
            for (String p : c.from) {
                if (p != null) {
                    named.add(p);
                }
            }
            for (String p : named) {
                if (!pids.contains(p)) {
                    throw new BundleException(at + ": names partition " + Json.repr(p)
                            + ", which the plan does not have");
                }
            }
            if (c.kind.equals("broadcast") || c.kind.equals("send_recv")) {
                if (c.from.size() != 1) {
                    throw new BundleException(at + ": a " + c.kind
                            + " needs exactly one sender");
                }
                String sender = c.from.get(0);
                if (sender == null && !inputs.contains(c.tensor)) {
                    throw new BundleException(at + ": tensor " + c.tensor
                            + " is not a model input");
                }
                if (sender != null && !sender.equals(made.get(c.tensor))) {
                    throw new BundleException(at + ": tensor " + c.tensor
                            + " is not written by " + Json.repr(sender));
                }
                for (String p : c.to) {
                    if (!read.contains(c.tensor + "@" + p)) {
                        throw new BundleException(at + ": partition " + Json.repr(p)
                                + " does not read tensor " + c.tensor);
                    }
                }
                if (c.kind.equals("send_recv") && c.to.size() != 1) {
                    throw new BundleException(at
                            + ": a send_recv needs exactly one destination");
                }
            } else {
                if (c.ops.length == 0) {
                    throw new BundleException(at + ": an " + c.kind + " needs its ops");
                }
                for (int op : c.ops) {
                    if (!c.to.contains(owner.get(op))) {
                        throw new BundleException(at + ": its op " + op
                                + " is not in its partitions " + Json.repr(c.to));
                    }
                }
            }
        }
    }

    private static void unique(List<String> values, String what, String where) {
        Set<String> seen = new HashSet<>();
        Set<String> dups = new HashSet<>();
        for (String v : values) {
            if (!seen.add(v)) {
                dups.add(v);
            }
        }
        for (String v : values) { // the first value (in plan order) that is repeated
            if (dups.contains(v)) {
                throw new BundleException(where + ": two partitions have the " + what + " "
                        + Json.repr(v));
            }
        }
    }

    private static void checkOps(Plan plan, String where) {
        Map<Integer, String> owner = new HashMap<>();
        for (Plan.Partition p : plan.partitions) {
            for (int i = 1; i < p.ops.length; i++) {
                if (p.ops[i] < p.ops[i - 1]) {
                    throw new BundleException(where + ": partition " + Json.repr(p.id)
                            + ": ops must be listed ascending");
                }
            }
            for (int op : p.ops) {
                if (op >= plan.numOps) {
                    throw new BundleException(where + ": partition " + Json.repr(p.id)
                            + " lists op " + op + ", but the source subgraph has " + plan.numOps
                            + " ops");
                }
                String prev = owner.put(op, p.id);
                if (prev != null) {
                    throw new BundleException(where + ": op " + op + " is in partitions "
                            + Json.repr(prev) + " and " + Json.repr(p.id));
                }
            }
        }
        for (int i = 0; i < plan.numOps; i++) {
            if (!owner.containsKey(i)) {
                throw new BundleException(where + ": op " + i
                        + " is in no partition; every op must be placed");
            }
        }
    }

    private static Map<Integer, Plan.TensorRef> byTensor(List<Plan.TensorRef> ts) {
        Map<Integer, Plan.TensorRef> out = new LinkedHashMap<>();
        for (Plan.TensorRef t : ts) {
            out.put(t.tensor, t);
        }
        return out;
    }

    private static void sameType(Plan.TensorRef a, Plan.TensorRef b, String what, String where) {
        if (!a.dtype.equals(b.dtype) || !java.util.Arrays.equals(a.shape, b.shape)) {
            throw new BundleException(what + " tensor " + a.tensor + ": " + a.typeString()
                    + " here but " + b.typeString() + " where it is produced or declared ("
                    + where + ")");
        }
    }
}
