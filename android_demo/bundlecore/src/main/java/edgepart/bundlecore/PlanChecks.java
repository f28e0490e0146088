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
 * producer and consumer agree on dtype and shape; every model output written.
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
