package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The typed content of {@code plan.json} (format {@code edgepart-bundle-plan}, version 1): the
 * partitions in dependency order, the model inputs and outputs and the partitioner's predictions.
 * See {@code docs/bundle.md} for every field.
 */
public final class Plan {
    public static final String FORMAT = "edgepart-bundle-plan";
    static final String SCHEMA = "bundle_plan.schema.json";
    static final List<String> DTYPES = Collections.unmodifiableList(Arrays.asList(
            "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
            "uint16", "uint32", "uint64", "bool", "complex64", "complex128"));
    static final List<String> EXECUTOR_KINDS = Collections.unmodifiableList(
            Arrays.asList("xnnpack", "builtin", "reference", "delegate"));
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

    public final String sourceName;
    public final int subgraph;
    public final int numOps;
    public final String deviceProfile;
    public final String signatureKey;
    public final List<TensorRef> inputs;
    public final List<TensorRef> outputs;
    /** In dependency order: every partition comes after those it depends on. */
    public final List<Partition> partitions;
    public final Map<String, Object> predicted;

    private Plan(Doc d) {
        d.require("format", "version", "source", "device_profile", "signature_key", "inputs",
                "outputs", "partitions");
        Doc src = d.obj("source");
        sourceName = src.str("name");
        subgraph = (int) src.integer("subgraph", 0);
        numOps = (int) src.integer("num_ops", 1);
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
        checkFormat(json, FORMAT, where);
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

    /** Refuse another format or an unknown version, as edgepart's loader does. */
    static void checkFormat(Object json, String format, String where) {
        Doc d = Doc.root(json, where, "");
        Object fmt = d.raw("format");
        if (!format.equals(fmt)) {
            throw new BundleException(where + ": format is " + Json.repr(fmt) + ", expected "
                    + Json.repr(format));
        }
        Object version = d.raw("version");
        if (!(version instanceof Long && (Long) version == Bundle.VERSION)) {
            throw new BundleException(where + ": " + format + " version " + Json.repr(version)
                    + " is not supported (this edgepart reads version " + Bundle.VERSION
                    + "); re-create the bundle with this edgepart or upgrade it");
        }
    }
}
