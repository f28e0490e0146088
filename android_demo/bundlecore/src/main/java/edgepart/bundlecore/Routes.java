package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Tensor routing and dispatch order of a checked plan, computed once when a bundle is loaded:
 * the same analysis as edgepart's Python runtime ({@code edgepart/runtime/routing.py::plan_routes}
 * over {@code edgepart/bundle/graph.py::PlanGraph}), plus the by-name table the Android app uses.
 *
 * <p>Positions index {@code plan.partitions}. Tensors are keyed by their source-model tensor
 * index; inside a partition they are addressed by file index ({@link #pulls}) or signature name
 * ({@link #byName}).
 */
public final class Routes {
    /** Where one partition input comes from. */
    public static final class Route {
        /** The input's signature name in the consuming partition. */
        public final String input;
        /** Source tensor index (the routing key). */
        public final int tensor;
        /** Producing partition's position, or -1 for a model input. */
        public final int from;
        /** Producing partition's id, or {@code null} for a model input. */
        public final String fromId;
        /** Signature name at the producer's output (or of the model input). */
        public final String fromName;

        Route(String input, int tensor, int from, String fromId, String fromName) {
            this.input = input;
            this.tensor = tensor;
            this.from = from;
            this.fromId = fromId;
            this.fromName = fromName;
        }
    }

    /** One split's shards at run time (the Python runtime's {@code edgepart/runtime/shards.py}).
     */
    public static final class ShardGroup {
        public final String split;
        /** {@code CONV_2D op 12}: the layer (or block) and its source op(s). */
        public final String layer;
        public final String mode;
        /** The shards' partitions (one per shard; a partition may hold several shards). */
        public final List<String> partitions;
        public final List<String> units;
        /** The shards run at the same time: distinct units, no dependency between them. */
        public final boolean concurrent;
        /** {@code all-gather in p3}: the collective and where it runs. */
        public final String collective;

        ShardGroup(String split, String layer, String mode, List<String> partitions,
                List<String> units, boolean concurrent, String collective) {
            this.split = split;
            this.layer = layer;
            this.mode = mode;
            this.partitions = Collections.unmodifiableList(partitions);
            this.units = Collections.unmodifiableList(units);
            this.concurrent = concurrent;
            this.collective = collective;
        }
    }

    /** {@code processor:unit} of each partition. */
    public final List<String> units;
    /** Positions each partition reads from (ascending). */
    public final int[][] deps;
    /** Every position each partition transitively waits for. */
    public final List<BitSet> ancestors;
    /** Per partition: {@code {local input, producer position, producer local output}}. */
    public final int[][][] pulls;
    /** Model input tensor to the {@code {position, local input}} it is written to. */
    public final Map<Integer, int[][]> inputTargets;
    /** Readable tensor to the {@code {position, local index}} it is read from. */
    public final Map<Integer, int[]> homes;
    /** Per partition: positions on other units it must wait for. */
    public final int[][] waits;
    /** Positions per unit in plan order, the first unit being partition 0's. */
    public final int[][] unitLists;
    /** Some two partitions on different units may run at the same time. */
    public final boolean parallel;
    /** Per partition, its inputs by signature name in plan (ascending tensor) order. */
    public final List<List<Route>> byName;
    /** Per split of a version-2 plan, its shards' partitions and whether they run at once. */
    public final List<ShardGroup> shardGroups;
    private final Map<Integer, Integer> producer;
    private final Map<Integer, List<Integer>> consumers;

    public Routes(Plan plan) {
        List<Plan.Partition> parts = plan.partitions;
        int n = parts.size();
        producer = new HashMap<>();
        consumers = new HashMap<>();
        for (int k = 0; k < n; k++) {
            for (Plan.TensorRef t : parts.get(k).outputs) {
                if (!producer.containsKey(t.tensor)) {
                    producer.put(t.tensor, k);
                }
            }
            for (Plan.TensorRef t : parts.get(k).inputs) {
                List<Integer> c = consumers.get(t.tensor);
                if (c == null) {
                    consumers.put(t.tensor, c = new ArrayList<>());
                }
                c.add(k);
            }
        }
        deps = new int[n][];
        List<BitSet> anc = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            TreeSet<Integer> d = new TreeSet<>();
            for (Plan.TensorRef t : parts.get(k).inputs) {
                Integer p = producer.get(t.tensor);
                if (p != null && p < k) {
                    d.add(p);
                }
            }
            deps[k] = toArray(d);
            BitSet a = new BitSet();
            for (int j : deps[k]) {
                a.set(j);
                a.or(anc.get(j));
            }
            anc.add(a);
        }
        ancestors = Collections.unmodifiableList(anc);

        Map<Integer, int[]> outLocal = new HashMap<>();
        for (int k = 0; k < n; k++) {
            for (Plan.TensorRef t : parts.get(k).outputs) {
                outLocal.put(t.tensor, new int[] {k, t.index});
            }
        }
        Map<Integer, String> modelIn = new LinkedHashMap<>();
        for (Plan.TensorRef t : plan.inputs) {
            modelIn.put(t.tensor, t.name);
        }
        Map<Integer, List<int[]>> targets = new TreeMap<>();
        for (Integer t : modelIn.keySet()) {
            targets.put(t, new ArrayList<int[]>());
        }
        pulls = new int[n][][];
        List<List<Route>> named = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            List<int[]> row = new ArrayList<>();
            List<Route> routes = new ArrayList<>();
            for (Plan.TensorRef t : parts.get(k).inputs) {
                if (modelIn.containsKey(t.tensor)) {
                    targets.get(t.tensor).add(new int[] {k, t.index});
                    routes.add(new Route(t.name, t.tensor, -1, null, modelIn.get(t.tensor)));
                } else {
                    int[] src = outLocal.get(t.tensor);
                    row.add(new int[] {t.index, src[0], src[1]});
                    Plan.Partition from = parts.get(src[0]);
                    routes.add(new Route(t.name, t.tensor, src[0], from.id,
                            outputName(from, t.tensor)));
                }
            }
            pulls[k] = row.toArray(new int[0][]);
            named.add(Collections.unmodifiableList(routes));
        }
        byName = Collections.unmodifiableList(named);
        Map<Integer, int[][]> tg = new TreeMap<>();
        Map<Integer, int[]> hm = new TreeMap<>(outLocal);
        for (Map.Entry<Integer, List<int[]>> e : targets.entrySet()) {
            tg.put(e.getKey(), e.getValue().toArray(new int[0][]));
            hm.put(e.getKey(), e.getValue().isEmpty() ? new int[] {-1, -1} : e.getValue().get(0));
        }
        inputTargets = Collections.unmodifiableMap(tg);
        homes = Collections.unmodifiableMap(hm);

        List<String> us = new ArrayList<>();
        Map<String, List<Integer>> order = new LinkedHashMap<>();
        for (int k = 0; k < n; k++) {
            String u = parts.get(k).unitName();
            us.add(u);
            List<Integer> l = order.get(u);
            if (l == null) {
                order.put(u, l = new ArrayList<>());
            }
            l.add(k);
        }
        units = Collections.unmodifiableList(us);
        waits = new int[n][];
        for (int k = 0; k < n; k++) {
            List<Integer> w = new ArrayList<>();
            for (int d : deps[k]) {
                if (!us.get(d).equals(us.get(k))) {
                    w.add(d);
                }
            }
            waits[k] = toArray(w);
        }
        unitLists = new int[order.size()][];
        int i = 0;
        for (List<Integer> l : order.values()) {
            unitLists[i++] = toArray(l);
        }
        boolean par = false;
        for (int a = 0; a < n && !par; a++) {
            for (int b = a + 1; b < n && !par; b++) {
                par = !us.get(a).equals(us.get(b)) && concurrent(a, b);
            }
        }
        parallel = par;
        shardGroups = Collections.unmodifiableList(shardGroups(plan));
    }

    private List<ShardGroup> shardGroups(Plan plan) {
        List<ShardGroup> out = new ArrayList<>();
        for (Plan.Split s : plan.splits) {
            List<String> parts = new ArrayList<>();
            for (Plan.Shard sh : s.shards) {
                if (!parts.contains(sh.partition)) {
                    parts.add(sh.partition);
                }
            }
            List<String> us = new ArrayList<>();
            List<Integer> ks = new ArrayList<>();
            for (String id : parts) {
                int k = plan.position(id);
                ks.add(k);
                us.add(units.get(k));
            }
            boolean together = parallel && new TreeSet<>(us).size() == us.size()
                    && parts.size() > 1;
            for (int i = 0; i < ks.size() && together; i++) {
                for (int j = i + 1; j < ks.size() && together; j++) {
                    together = concurrent(ks.get(i), ks.get(j));
                }
            }
            List<String> names = new ArrayList<>();
            for (String n : s.opNames) {
                if (!names.contains(n)) {
                    names.add(n);
                }
            }
            StringBuilder ops = new StringBuilder();
            for (int op : s.ops) {
                ops.append(ops.length() == 0 ? "" : ",").append(op);
            }
            Plan.Collective c = plan.collective(s.collective);
            out.add(new ShardGroup(s.id, String.join("+", names) + " op " + ops, s.mode, parts,
                    us, together, c.kind.replace('_', '-') + " in " + c.to.get(0)));
        }
        return out;
    }

    private static String outputName(Plan.Partition p, int tensor) {
        for (Plan.TensorRef o : p.outputs) {
            if (o.tensor == tensor) {
                return o.name;
            }
        }
        throw new IllegalStateException("partition " + p.id + " does not write " + tensor);
    }

    /** True if partition {@code a} always finishes before {@code b} starts, or {@code a == b}. */
    public boolean beforeOrSame(int a, int b) {
        return a == b || ancestors.get(b).get(a);
    }

    /** True if partitions {@code a} and {@code b} may run at the same time. */
    public boolean concurrent(int a, int b) {
        return !beforeOrSame(a, b) && !beforeOrSame(b, a);
    }

    /** Tensors handed from one party to another (ascending): read by a partition and either a
     * model input or written by another partition. */
    public List<Integer> staged() {
        List<Integer> out = new ArrayList<>();
        for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(consumers).entrySet()) {
            Integer p = producer.get(e.getKey());
            boolean handed = p == null;
            for (int c : e.getValue()) {
                handed |= p != null && c != p;
            }
            if (handed) {
                out.add(e.getKey());
            }
        }
        return out;
    }

    /** The routing as plain JSON values, in the shape the fixture exporter writes for the
     * Python runtime's routing (so the two can be compared value by value). */
    public Map<String, Object> toJson(Plan plan) {
        Map<String, Object> m = new TreeMap<>();
        List<Object> ids = new ArrayList<>();
        for (Plan.Partition p : plan.partitions) {
            ids.add(p.id);
        }
        m.put("order", ids);
        m.put("units", new ArrayList<Object>(units));
        m.put("deps", nested(deps));
        List<Object> pl = new ArrayList<>();
        for (int[][] row : pulls) {
            pl.add(nested(row));
        }
        m.put("pulls", pl);
        List<Object> tg = new ArrayList<>();
        for (Map.Entry<Integer, int[][]> e : inputTargets.entrySet()) {
            tg.add(list((long) e.getKey(), nested(e.getValue())));
        }
        m.put("input_targets", tg);
        List<Object> hm = new ArrayList<>();
        for (Map.Entry<Integer, int[]> e : homes.entrySet()) {
            hm.add(list((long) e.getKey(), (long) e.getValue()[0], (long) e.getValue()[1]));
        }
        m.put("homes", hm);
        m.put("waits", nested(waits));
        m.put("unit_lists", nested(unitLists));
        m.put("parallel", parallel);
        List<Object> st = new ArrayList<>();
        for (int t : staged()) {
            st.add((long) t);
        }
        m.put("staged", st);
        List<Object> bn = new ArrayList<>();
        for (List<Route> row : byName) {
            List<Object> r = new ArrayList<>();
            for (Route x : row) {
                Map<String, Object> e = new TreeMap<>();
                e.put("input", x.input);
                e.put("tensor", (long) x.tensor);
                e.put("from", x.fromId);
                e.put("from_name", x.fromName);
                r.add(e);
            }
            bn.add(r);
        }
        m.put("by_name", bn);
        List<Object> sg = new ArrayList<>();
        for (ShardGroup g : shardGroups) {
            Map<String, Object> e = new TreeMap<>();
            e.put("split", g.split);
            e.put("layer", g.layer);
            e.put("mode", g.mode);
            e.put("partitions", new ArrayList<Object>(g.partitions));
            e.put("units", new ArrayList<Object>(g.units));
            e.put("concurrent", g.concurrent);
            e.put("collective", g.collective);
            sg.add(e);
        }
        m.put("splits", sg);
        return m;
    }

    private static List<Object> list(Object... xs) {
        List<Object> out = new ArrayList<>();
        Collections.addAll(out, xs);
        return out;
    }

    private static List<Object> nested(int[][] rows) {
        List<Object> out = new ArrayList<>();
        for (int[] row : rows) {
            List<Object> r = new ArrayList<>();
            for (int x : row) {
                r.add((long) x);
            }
            out.add(r);
        }
        return out;
    }

    private static int[] toArray(java.util.Collection<Integer> xs) {
        int[] out = new int[xs.size()];
        int i = 0;
        for (int x : xs) {
            out[i++] = x;
        }
        return out;
    }
}
