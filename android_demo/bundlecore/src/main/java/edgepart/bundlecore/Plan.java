package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The typed content of {@code plan.json} (format {@code edgepart-bundle-plan}, versions 1 and 2):
 * the partitions in dependency order, the model inputs and outputs and the partitioner's
 * predictions. Version 2 adds tensor parallelism: {@link #splits} (layers cut into shards; the
 * partitions then place the split graph, whose op count is {@link #numOps}) and
 * {@link #collectives} (broadcast, send/recv, all-gather, all-reduce). The shards are ordinary
 * partitions, so running a version-2 plan needs nothing new. See {@code docs/bundle.md}.
 */
public final class Plan {
    public static final String FORMAT = "edgepart-bundle-plan";
    static final String SCHEMA = "bundle_plan.schema.json";
    static final List<String> DTYPES = Collections.unmodifiableList(Arrays.asList(
            "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
            "uint16", "uint32", "uint64", "bool", "complex64", "complex128"));
    static final List<String> EXECUTOR_KINDS = Collections.unmodifiableList(
            Arrays.asList("xnnpack", "builtin", "reference", "delegate"));
    static final List<String> SPLIT_MODES = Collections.unmodifiableList(Arrays.asList(
            "output_channels", "columns", "batch", "rows", "mlp", "heads"));
    static final List<String> SPLIT_REASONS = Collections.unmodifiableList(
            Arrays.asList("latency", "memory", "forced"));
    static final List<String> COLLECTIVE_KINDS = Collections.unmodifiableList(
            Arrays.asList("broadcast", "send_recv", "all_gather", "all_reduce"));
    /** The {@code plan.json} versions this reader takes. */
    static final long[] VERSIONS = {1, 2};
    private static final Pattern ID = Pattern.compile("^[A-Za-z0-9_.-]{1,64}$");
    private static final Pattern FILE = Pattern.compile("^partitions/[A-Za-z0-9_.-]+\\.tflite$");

    /** A tensor crossing a partition boundary, or a model input/output ({@code index == -1}). */
    public static final class TensorRef {
        /** Tensor index in the source subgraph: the routing key. */
        public final int tensor;
        /** Tensor index inside the partition file ({@code -1} for a model tensor). */
        public final int index;
        /** Signature name (in the partition's signature; the source's for model tensors). */
        public final String name;
        public final String tensorName;
        public final String dtype;
        public final int[] shape;
        public final int[] shapeSignature;
        /** Model tensors only: {@code scales}, {@code zero_points}, ... or {@code null}. */
        public final Map<String, Object> quantization;

        TensorRef(Doc d, boolean inPartition) {
            String[] keys = inPartition
                    ? new String[] {"tensor", "index", "name", "tensor_name", "dtype", "shape",
                        "shape_signature"}
                    : new String[] {"tensor", "name", "tensor_name", "dtype", "shape",
                        "shape_signature", "quantization"};
            d.require(keys);
            tensor = (int) d.integer("tensor", 0);
            index = inPartition ? (int) d.integer("index", 0) : -1;
            name = d.str("name");
            tensorName = d.str("tensor_name");
            dtype = d.oneOf("dtype", DTYPES);
            shape = d.ints("shape", 0);
            shapeSignature = d.intsOrNull("shape_signature", -1);
            quantization = inPartition ? null : quantization(d);
            d.onlyKeys(keys);
        }

        private static Map<String, Object> quantization(Doc d) {
            Doc q = d.objOrNull("quantization");
            if (q == null) {
                return null;
            }
            q.list("scales");
            q.ints("zero_points", Long.MIN_VALUE);
            q.integer("quantized_dimension", 0);
            q.onlyKeys("scales", "zero_points", "quantized_dimension");
            return q.map();
        }

        /** Bytes of the dense tensor. */
        public long nbytes() {
            return Tensors.nbytes(dtype, shape);
        }

        /** {@code float32[1, 96, 96, 3]}, as edgepart's messages write a type. */
        public String typeString() {
            return dtype + Json.repr(Tensors.boxed(shape));
        }
    }

    /** An explicit executor ({@code null} in the plan means: derive it from the delegate). */
    public static final class Executor {
        public final String kind;
        public final String delegate;
        public final String library;
        public final Map<String, Object> options;

        Executor(Doc d) {
            kind = d.oneOf("kind", EXECUTOR_KINDS);
            delegate = d.has("delegate") ? d.str("delegate") : null;
            library = d.has("library") ? d.strOrNull("library") : null;
            Doc opts = d.objOrNull("options");
            options = opts == null ? Collections.<String, Object>emptyMap() : opts.map();
            d.onlyKeys("kind", "delegate", "library", "options");
            if (kind.equals("delegate")) {
                d.require("delegate");
            }
        }
    }

    /** One partition: its ops, unit, delegate, file and boundary tensors. */
    public static final class Partition {
        public final String id;
        public final int[] ops;
        public final int[] fileOps;
        public final String processor;
        public final int unit;
        public final String delegate;
        public final Executor executor;
        public final Integer threads;
        public final String file;
        public final String signatureKey;
        /** Boundary inputs, ascending by source tensor index. */
        public final List<TensorRef> inputs;
        /** Boundary outputs, ascending by source tensor index. */
        public final List<TensorRef> outputs;
        public final List<String> dependsOn;
        public final Map<String, Object> predicted;

        Partition(Doc d) {
            d.require("id", "ops", "file_ops", "processor", "unit", "delegate", "executor",
                    "threads", "file", "signature_key", "inputs", "outputs", "depends_on");
            id = d.str("id", ID);
            ops = d.ints("ops", 0);
            fileOps = d.ints("file_ops", 0);
            processor = d.str("processor");
            unit = (int) d.integer("unit", 0);
            delegate = d.str("delegate");
            Doc ex = d.objOrNull("executor");
            executor = ex == null ? null : new Executor(ex);
            Long t = d.integerOrNull("threads", 1);
            threads = t == null ? null : t.intValue();
            file = d.str("file", FILE);
            signatureKey = d.str("signature_key");
            inputs = refs(d, "inputs");
            outputs = refs(d, "outputs");
            dependsOn = Collections.unmodifiableList(d.strings("depends_on"));
            Doc pred = d.objOrNull("predicted");
            predicted = pred == null ? null : pred.map();
            d.objOrNull("extra");
            d.onlyKeys("id", "ops", "file_ops", "processor", "unit", "delegate", "executor",
                    "threads", "file", "signature_key", "inputs", "outputs", "depends_on",
                    "predicted", "extra");
        }

        private static List<TensorRef> refs(Doc d, String key) {
            List<TensorRef> out = new ArrayList<>();
            for (Doc t : d.objects(key, 0)) {
                out.add(new TensorRef(t, true));
            }
            return Collections.unmodifiableList(out);
        }

        /** {@code processor:unit}: partitions on one unit never run at the same time. */
        public String unitName() {
            return processor + ":" + unit;
        }

        /** The predicted duration in seconds ({@code duration_s}, else {@code end_s - start_s}),
         * or {@code null} if the plan has none. */
        public Double predictedSeconds() {
            if (predicted == null) {
                return null;
            }
            Object d = predicted.get("duration_s");
            if (d instanceof Number) {
                return ((Number) d).doubleValue();
            }
            Object s = predicted.get("start_s");
            Object e = predicted.get("end_s");
            if (s instanceof Number && e instanceof Number) {
                return ((Number) e).doubleValue() - ((Number) s).doubleValue();
            }
            return null;
        }
    }

    /** One shard of a split: its ops (split-graph indices), the tensor it hands to the
     * collective and the partition running its layer op. */
    public static final class Shard {
        public final int[] ops;
        public final int output;
        public final String partition;

        Shard(Doc d) {
            d.require("ops", "output", "partition");
            ops = d.ints("ops", 0);
            if (ops.length < 1) {
                throw d.fail(d.at("ops"), "[] should be non-empty");
            }
            output = (int) d.integer("output", 0);
            partition = d.str("partition");
            d.onlyKeys("ops", "output", "partition");
        }
    }

    /** A layer (or Megatron block) split into shards (version 2). */
    public static final class Split {
        public final String id;
        public final String mode;
        /** Anchor ops in the source subgraph (the rewrite's arguments). */
        public final int[] ops;
        public final int[] sizes;
        /** Source ops the split replaced. */
        public final int[] sourceOps;
        public final List<String> opNames;
        public final List<Shard> shards;
        /** Id of the split's all-gather or all-reduce. */
        public final String collective;
        public final int[] collectiveOps;
        public final int output;
        /** True when the split model computes bit-identical values. */
        public final boolean exact;
        public final String reason;
        /** {@code unsplit_s}, {@code split_s}, {@code gain}, or {@code null}. */
        public final Map<String, Object> predicted;

        Split(Doc d) {
            d.require("id", "mode", "ops", "sizes", "source_ops", "op_names", "shards",
                    "collective", "collective_ops", "output", "exact", "reason", "predicted");
            id = d.str("id", ID);
            mode = d.oneOf("mode", SPLIT_MODES);
            ops = d.ints("ops", 0);
            sizes = d.ints("sizes", 1);
            sourceOps = d.ints("source_ops", 0);
            opNames = Collections.unmodifiableList(d.strings("op_names"));
            List<Shard> sh = new ArrayList<>();
            for (Doc x : d.objects("shards", 2)) {
                sh.add(new Shard(x));
            }
            shards = Collections.unmodifiableList(sh);
            collective = d.str("collective");
            collectiveOps = d.ints("collective_ops", 0);
            output = (int) d.integer("output", 0);
            exact = d.bool("exact");
            reason = d.oneOf("reason", SPLIT_REASONS);
            Doc pred = d.objOrNull("predicted");
            if (pred != null) {
                pred.require("unsplit_s", "split_s", "gain");
                pred.numberOrNull("unsplit_s", 0);
                pred.numberOrNull("split_s", 0);
                pred.numberOrNull("gain", Double.NEGATIVE_INFINITY);
                pred.onlyKeys("unsplit_s", "split_s", "gain");
            }
            predicted = pred == null ? null : pred.map();
            d.onlyKeys("id", "mode", "ops", "sizes", "source_ops", "op_names", "shards",
                    "collective", "collective_ops", "output", "exact", "reason", "predicted");
        }

        /** Ops the split adds to the graph (its new ops minus the source ops it replaced). */
        public int addedOps() {
            int n = collectiveOps.length - sourceOps.length;
            for (Shard s : shards) {
                n += s.ops.length;
            }
            return n;
        }

        /** The predicted gain ({@code 1 - split / unsplit}) or {@code null}. */
        public Double predictedGain() {
            Object g = predicted == null ? null : predicted.get("gain");
            return g instanceof Number ? ((Number) g).doubleValue() : null;
        }
    }

    /** How data moves for a split (version 2): a broadcast, a send/recv, an all-gather or an
     * all-reduce, with its bytes, the memory-domain links it crosses and its predicted cost. */
    public static final class Collective {
        public final String id;
        public final String kind;
        public final String split;
        public final int tensor;
        public final int[] ops;
        /** Sending partition ({@code null}: a model input), or the shards' partitions. */
        public final List<String> from;
        /** Receiving partitions, or the partitions running the all-gather/all-reduce. */
        public final List<String> to;
        public final long bytes;
        public final List<String> links;
        public final Double costSeconds;

        Collective(Doc d) {
            d.require("id", "kind", "split", "tensor", "ops", "from", "to", "bytes", "links",
                    "cost_s");
            id = d.str("id", ID);
            kind = d.oneOf("kind", COLLECTIVE_KINDS);
            split = d.str("split");
            tensor = (int) d.integer("tensor", 0);
            ops = d.ints("ops", 0);
            from = Collections.unmodifiableList(d.stringsOrNulls("from"));
            to = Collections.unmodifiableList(d.strings("to"));
            if (to.isEmpty()) {
                throw d.fail(d.at("to"), "[] should be non-empty");
            }
            bytes = d.integer("bytes", 0);
            links = Collections.unmodifiableList(d.strings("links"));
            costSeconds = d.numberOrNull("cost_s", 0);
            d.onlyKeys("id", "kind", "split", "tensor", "ops", "from", "to", "bytes", "links",
                    "cost_s");
        }
    }

    public final String sourceName;
    public final int subgraph;
    /** The plan's version: 1, or 2 with tensor-parallel splits. */
    public final int version;
    /** Ops of the source subgraph (before the splits). */
    public final int sourceNumOps;
    /** Ops the partitions cover: the source's plus what the splits add. */
    public final int numOps;
    public final String deviceProfile;
    public final String signatureKey;
    public final List<TensorRef> inputs;
    public final List<TensorRef> outputs;
    /** In dependency order: every partition comes after those it depends on. */
    public final List<Partition> partitions;
    public final Map<String, Object> predicted;
    /** Version 2: the layers split into shards, in the order the rewrite applies them. */
    public final List<Split> splits;
    public final List<Collective> collectives;

    private Plan(Doc d) {
        d.require("format", "version", "source", "device_profile", "signature_key", "inputs",
                "outputs", "partitions");
        version = (int) d.integer("version", 1);
        Doc src = d.obj("source");
        sourceName = src.str("name");
        subgraph = (int) src.integer("subgraph", 0);
        sourceNumOps = (int) src.integer("num_ops", 1);
        src.onlyKeys("name", "subgraph", "num_ops");
        deviceProfile = d.strOrNull("device_profile");
        signatureKey = d.strOrNull("signature_key");
        inputs = modelTensors(d, "inputs", 0);
        outputs = modelTensors(d, "outputs", 1);
        List<Partition> parts = new ArrayList<>();
        for (Doc p : d.objects("partitions", 1)) {
            parts.add(new Partition(p));
        }
        partitions = Collections.unmodifiableList(parts);
        Doc pred = d.objOrNull("predicted");
        predicted = pred == null ? null : pred.map();
        List<Split> sp = new ArrayList<>();
        List<Collective> co = new ArrayList<>();
        if (version == 2) { // the schema's if/then: a version-2 plan has both lists
            d.require("splits", "collectives");
            for (Doc x : d.objects("splits", 1)) {
                sp.add(new Split(x));
            }
            for (Doc x : d.objects("collectives", 0)) {
                co.add(new Collective(x));
            }
        } else if (d.has("splits") || d.has("collectives")) {
            throw d.error("a version-1 plan has no 'splits' or 'collectives'; a plan with "
                    + "tensor-parallel splits is version 2");
        }
        splits = Collections.unmodifiableList(sp);
        collectives = Collections.unmodifiableList(co);
        int n = sourceNumOps;
        for (Split x : splits) {
            n += x.addedOps();
        }
        numOps = n;
    }

    private static List<TensorRef> modelTensors(Doc d, String key, int minItems) {
        List<TensorRef> out = new ArrayList<>();
        for (Doc t : d.objects(key, minItems)) {
            out.add(new TensorRef(t, false));
        }
        return Collections.unmodifiableList(out);
    }

    /** Parse and check a plan document: format and version, schema, then cross-references. */
    public static Plan fromJson(Object json, String where) {
        checkFormat(json, FORMAT, where, VERSIONS);
        Plan plan = new Plan(Doc.root(json, where, SCHEMA));
        PlanChecks.check(plan, where);
        return plan;
    }

    /** The partition with this id. */
    public Partition partition(String id) {
        for (Partition p : partitions) {
            if (p.id.equals(id)) {
                return p;
            }
        }
        throw new IllegalArgumentException("no partition " + Json.repr(id));
    }

    /** Position of partition {@code id} in plan order, or -1. */
    public int position(String id) {
        for (int k = 0; k < partitions.size(); k++) {
            if (partitions.get(k).id.equals(id)) {
                return k;
            }
        }
        return -1;
    }

    /** The plan's predicted end-to-end latency in seconds, or {@code null}. */
    public Double predictedLatency() {
        Object v = predicted == null ? null : predicted.get("latency_s");
        return v instanceof Number ? ((Number) v).doubleValue() : null;
    }

    /** Refuse another format or a version other than the bundle version (1), as edgepart's
     * loader does. */
    static void checkFormat(Object json, String format, String where) {
        checkFormat(json, format, where, new long[] {Bundle.VERSION});
    }

    /** Refuse another format or a version outside {@code versions}. */
    static void checkFormat(Object json, String format, String where, long[] versions) {
        Doc d = Doc.root(json, where, "");
        Object fmt = d.raw("format");
        if (!format.equals(fmt)) {
            throw new BundleException(where + ": format is " + Json.repr(fmt) + ", expected "
                    + Json.repr(format));
        }
        Object version = d.raw("version");
        boolean known = false;
        StringBuilder names = new StringBuilder();
        for (int i = 0; i < versions.length; i++) {
            known |= version instanceof Long && (Long) version == versions[i];
            names.append(i == 0 ? "" : " and ").append(versions[i]);
        }
        if (!known) {
            throw new BundleException(where + ": " + format + " version " + Json.repr(version)
                    + " is not supported (this edgepart reads version " + names
                    + "); re-create the bundle with this edgepart or upgrade it");
        }
    }

    /** The split with this id, or {@code null}. */
    public Split split(String id) {
        for (Split s : splits) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        return null;
    }

    /** The collective with this id, or {@code null}. */
    public Collective collective(String id) {
        for (Collective c : collectives) {
            if (c.id.equals(id)) {
                return c;
            }
        }
        return null;
    }
}
