package edgepart.bundlecore;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Plain-Java tests of the bundle core (no JUnit: this machine cannot download it), run by
 * {@code run_tests.sh} against real bundles and reference data from {@code make_fixtures.py}.
 *
 * <p>Usage: {@code java edgepart.bundlecore.BundleCoreTest FIXTURES_DIR}. Prints one line per
 * failure and {@code N passed, M failed}; exits 1 if anything failed.
 */
public final class BundleCoreTest {
    private static int passed;
    private static final List<String> failures = new ArrayList<>();

    interface Body {
        void run() throws Exception;
    }

    private static void test(String name, Body body) {
        try {
            body.run();
            passed++;
        } catch (Throwable e) {
            String msg = e.getMessage() == null ? e.toString() : e.getMessage();
            failures.add(name + ": " + (e instanceof AssertionError ? "" : e.getClass()
                    .getSimpleName() + ": ") + msg);
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void eq(Object want, Object got, String what) {
        if (want == null ? got != null : !want.equals(got)) {
            throw new AssertionError(what + ": expected <" + want + "> but got <" + got + ">");
        }
    }

    private static String error(Body body) throws Exception {
        try {
            body.run();
        } catch (BundleException e) {
            return e.getMessage();
        }
        throw new AssertionError("no BundleException");
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: BundleCoreTest FIXTURES_DIR");
            System.exit(2);
        }
        File fx = new File(args[0]);
        jsonTests();
        tensorTests();
        @SuppressWarnings("unchecked")
        Map<String, Object> index = (Map<String, Object>) Json.parse(
                Files.readAllBytes(new File(fx, "index.json").toPath()), "index.json");
        @SuppressWarnings("unchecked")
        List<Object> fixtures = (List<Object>) index.get("fixtures");
        test("fixtures exist", () -> check(fixtures.size() >= 3, "fewer than 3 fixtures"));
        StringBuilder tested = new StringBuilder("fixtures tested:");
        for (Object name : fixtures) {
            fixtureTests(fx, (String) name);
            tested.append(' ').append((String) name);
        }
        System.out.println(tested);
        @SuppressWarnings("unchecked")
        Map<String, Object> corrupt = (Map<String, Object>) index.get("corrupt");
        test("damaged cases exist", () -> check(corrupt.size() >= 15, "too few damaged cases"));
        for (Map.Entry<String, Object> e : corrupt.entrySet()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> c = (Map<String, Object>) e.getValue();
            test("same error as Python: " + e.getKey(), () -> eq(c.get("message"),
                    error(() -> Bundle.load(new File((String) c.get("path")))), "message"));
        }
        javaOnlyErrors(fx);
        for (String f : failures) {
            System.out.println("FAIL " + f);
        }
        System.out.println(passed + " passed, " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    // ------------------------------------------------------------------ JSON

    private static void jsonTests() {
        test("json values", () -> {
            Object v = Json.parse("{\"a\": [1, -2, 1.5, 1e3, -0, 12345678901234567890],"
                    + " \"b\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\", \"c\": [true, false,"
                    + " null], \"d\": {}}", "t");
            @SuppressWarnings("unchecked")
            Map<String, Object> m = (Map<String, Object>) v;
            eq(Arrays.asList(1L, -2L, 1.5, 1000.0, 0L, 1.2345678901234567e19), m.get("a"), "a");
            eq("q\"\\/\b\f\n\r\t\u00e9\u20ac", m.get("b"), "b");
            eq(Arrays.asList(true, false, null), m.get("c"), "c");
            eq(new TreeMap<String, Object>(), m.get("d"), "d");
            eq(Arrays.asList("a", "b", "c", "d"), new ArrayList<>(m.keySet()), "key order");
        });
        test("json utf-8 bytes", () -> eq("\u00e9",
                Json.parse("\"\u00e9\"".getBytes(StandardCharsets.UTF_8), "t"), "decoded"));
        test("json round trip sorted", () -> eq("{\"a\":[1,2.5,null,true],\"b\":\"x\\\"\"}",
                Json.write(Json.parse("{\"b\": \"x\\\"\", \"a\": [1, 2.5, null, true]}", "t")),
                "written"));
        String[][] bad = {
            {"{", "t: invalid JSON at line 1 column 2 (expecting a property name in double"
                    + " quotes); the file is corrupted or truncated"},
            {"[1,]", "t: invalid JSON at line 1 column 4 (expecting a value); the file is"
                    + " corrupted or truncated"},
            {"{\n \"a\": 1,\n}", "t: invalid JSON at line 3 column 1 (expecting a property name"
                    + " in double quotes); the file is corrupted or truncated"},
            {"[1] 2", "t: invalid JSON at line 1 column 5 (extra data after the JSON value); the"
                    + " file is corrupted or truncated"},
            {"01", "t: invalid JSON at line 1 column 2 (extra data after the JSON value); the file"
                    + " is corrupted or truncated"},
            {"\"a", "t: invalid JSON at line 1 column 3 (unterminated string); the file is"
                    + " corrupted or truncated"},
            {"nul", "t: invalid JSON at line 1 column 1 (expecting a value); the file is"
                    + " corrupted or truncated"},
        };
        for (String[] c : bad) {
            test("json error " + c[0].replace("\n", "\\n"),
                    () -> eq(c[1], error(() -> Json.parse(c[0], "t")), "message"));
        }
        test("json not utf-8", () -> eq("t: not UTF-8 text (byte 1); the file is corrupted",
                error(() -> Json.parse(new byte[] {'"', (byte) 0xFF, '"'}, "t")), "message"));
        test("python repr", () -> {
            eq("['p0', 'p1']", Json.repr(Arrays.asList("p0", "p1")), "list");
            eq("[]", Json.repr(new ArrayList<>()), "empty");
            eq("None", Json.repr(null), "null");
            eq("[1, 12]", Json.repr(Arrays.asList(1, 12)), "ints");
        });
    }

    // ------------------------------------------------------------------ tensors

    private static void tensorTests() {
        test("half floats", () -> {
            eq(1.0f, Tensors.halfToFloat((short) 0x3C00), "1");
            eq(-2.0f, Tensors.halfToFloat((short) 0xC000), "-2");
            eq(65504.0f, Tensors.halfToFloat((short) 0x7BFF), "max");
            eq((float) Math.pow(2, -24), Tensors.halfToFloat((short) 0x0001), "subnormal");
            eq(Float.POSITIVE_INFINITY, Tensors.halfToFloat((short) 0x7C00), "inf");
            for (int h = 0; h < 0x10000; h++) { // every non-NaN half survives the round trip
                float f = Tensors.halfToFloat((short) h);
                if (!Float.isNaN(f)) {
                    eq(h, Tensors.floatToHalf(f) & 0xFFFF, "round trip of " + f);
                }
            }
            eq(0x3C00, Tensors.floatToHalf(1.0004f) & 0xFFFF, "rounds to nearest");
        });
        test("nbytes", () -> {
            eq(110592L, Tensors.nbytes("float32", new int[] {1, 96, 96, 3}), "f32");
            eq(27648L, Tensors.nbytes("int8", new int[] {1, 96, 96, 3}), "i8");
            eq(8L, Tensors.nbytes("int64", new int[] {}), "scalar");
        });
        test("seeded random inputs", () -> {
            ByteBuffer a = Tensors.random("float32", new int[] {4, 64}, 7);
            ByteBuffer b = Tensors.random("float32", new int[] {4, 64}, 7);
            ByteBuffer c = Tensors.random("float32", new int[] {4, 64}, 8);
            check(Tensors.sameBytes(a, b), "same seed, different bytes");
            check(!Tensors.sameBytes(a, c), "different seeds, same bytes");
            for (int i = 0; i < 256; i++) {
                double v = Tensors.get("float32", a, i);
                check(v >= -1 && v < 1, "float input out of [-1, 1): " + v);
            }
            ByteBuffer q = Tensors.random("int8", new int[] {4096}, 1);
            Set<Integer> seen = new HashSet<>();
            for (int i = 0; i < 4096; i++) {
                seen.add((int) Tensors.get("int8", q, i));
            }
            check(seen.contains(-128) && seen.contains(127) && seen.size() > 250,
                    "int8 inputs do not cover the range: " + seen.size() + " values");
        });
        test("max abs diff", () -> {
            eq(1.0, Tensors.maxAbsDiff("float32", floats(1, 2, 3), floats(1, 2.5f, 2)), "f32");
            eq(255.0, Tensors.maxAbsDiff("int8", bytes(-128, 0), bytes(127, 0)), "int8");
            eq(255.0, Tensors.maxAbsDiff("uint8", bytes(0), bytes(-1)), "uint8");
            check(Double.isNaN(Tensors.maxAbsDiff("float32", floats(Float.NaN), floats(0))),
                    "NaN is hidden");
        });
        test("median", () -> {
            eq(2.0, PlanRunner.median(new long[] {3, 1, 2}), "odd");
            eq(2.5, PlanRunner.median(new long[] {4, 1, 3, 2}), "even");
        });
    }

    private static ByteBuffer floats(float... xs) {
        ByteBuffer b = Tensors.allocate(4L * xs.length);
        for (float x : xs) {
            b.putFloat(x);
        }
        b.rewind();
        return b;
    }

    private static ByteBuffer bytes(int... xs) {
        ByteBuffer b = Tensors.allocate(xs.length);
        for (int x : xs) {
            b.put((byte) x);
        }
        b.rewind();
        return b;
    }

    // ------------------------------------------------------------------ real bundles

    @SuppressWarnings("unchecked")
    private static void fixtureTests(File fx, String name) throws IOException {
        File dir = new File(fx, "bundles/" + name);
        Map<String, Object> exp = (Map<String, Object>) Json.parse(
                Files.readAllBytes(new File(fx, "expected/" + name + ".json").toPath()), name);
        Bundle[] loaded = new Bundle[1];
        test(name + ": loads", () -> loaded[0] = Bundle.load(dir));
        Bundle b = loaded[0];
        if (b == null) {
            return;
        }
        test(name + ": every listed file verified", () -> {
            eq(exp.get("files"), (long) b.manifest.files.size(), "listed files");
            eq(b.manifest.files.size(), b.verified.size(), "verified files");
            for (Manifest.FileEntry e : b.verified) { // and the digest is of the file on disk
                byte[] data = Files.readAllBytes(new File(dir, e.path).toPath());
                eq(e.sha256, Bundle.sha256(data), e.path);
            }
            eq(b.plan.partitions.size(), b.partitionBytes.size(), "partition files");
        });
        test(name + ": manifest and plan fields", () -> {
            eq(exp.get("device_profile"), b.manifest.deviceProfile, "device_profile");
            eq(exp.get("source_name"), b.manifest.sourceName, "source name");
            eq(exp.get("signature_key"), b.plan.signatureKey, "signature_key");
            eq("edgepart", b.manifest.creatorTool, "creator");
            check(!b.report.isEmpty(), "report.txt not read");
        });
        Routes routes = new Routes(b.plan);
        test(name + ": order and routing equal the Python runtime's", () -> {
            Map<String, Object> mine = routes.toJson(b.plan);
            for (String key : mine.keySet()) {
                eq(Json.write(exp.get(key)), Json.write(mine.get(key)), key);
            }
        });
        test(name + ": by-name routes name real signature names", () -> {
            for (int k = 0; k < b.plan.partitions.size(); k++) {
                Plan.Partition p = b.plan.partitions.get(k);
                eq(p.inputs.size(), routes.byName.get(k).size(), p.id + " inputs");
                for (Routes.Route r : routes.byName.get(k)) {
                    if (r.from >= 0) {
                        check(r.from < k, p.id + " reads from a later partition");
                        eq(b.plan.partitions.get(r.from).id, r.fromId, "producer id");
                    }
                }
            }
        });
        replayTests(fx, name, b, routes, exp);
        if (name.equals("split_convs")) {
            test(name + ": a version-2 plan with its splits and collectives", () -> {
                eq(2, b.plan.version, "version");
                eq(2, b.plan.splits.size(), "splits");
                int added = 0;
                for (Plan.Split s : b.plan.splits) {
                    added += s.addedOps();
                    eq("output_channels", s.mode, s.id + " mode");
                    check(s.exact, s.id + " not exact");
                    eq(2, s.shards.size(), s.id + " shards");
                    Plan.Collective c = b.plan.collective(s.collective);
                    eq("all_gather", c.kind, s.id + " collective");
                    check(s.predictedGain() != null && s.predictedGain() >= 0.1,
                            s.id + " predicted gain below the threshold");
                }
                eq(b.plan.sourceNumOps + added, b.plan.numOps, "ops after the splits");
                eq(2, b.plan.sourceNumOps, "source ops");
                Set<String> kinds = new HashSet<>();
                for (Plan.Collective c : b.plan.collectives) {
                    kinds.add(c.kind);
                    check(c.links.isEmpty(), "one memory domain, no links: " + c.links);
                }
                eq(new HashSet<>(Arrays.asList("broadcast", "send_recv", "all_gather")), kinds,
                        "collective kinds");
            });
            test(name + ": the shards of each split run concurrently", () -> {
                eq(2, routes.shardGroups.size(), "groups");
                for (Routes.ShardGroup g : routes.shardGroups) {
                    check(g.concurrent, g.split + " shards not concurrent");
                    eq(Arrays.asList("cpu:0", "cpu:1"), g.units, g.split + " units");
                }
                String t = Report.splitLines(b.plan, routes);
                check(t.contains("run concurrently; all-gather in p"), "split line:\n" + t);
                check(t.contains("predicted gain "), "no predicted gain:\n" + t);
            });
        }
        if (name.equals("mnv2_pixel8")) {
            test(name + ": delegates chosen from the plan", () -> {
                List<String> got = new ArrayList<>();
                for (Plan.Partition p : b.plan.partitions) {
                    DelegateChoice c = DelegateChoice.choose(p, 34);
                    got.add(c.kind + (c.fallback ? "!" : ""));
                }
                eq(Arrays.asList("XNNPACK", "GPU", "NNAPI", "CPU_BUILTIN"), got, "API 34");
                DelegateChoice old = DelegateChoice.choose(b.plan.partitions.get(2), 26);
                eq(DelegateChoice.Kind.XNNPACK, old.kind, "NNAPI on API 26");
                check(old.fallback && old.executedOn().contains("fallback for nnapi"),
                        "API 26 fallback not reported: " + old.executedOn());
                DelegateChoice gpu = DelegateChoice.choose(b.plan.partitions.get(1), 34);
                DelegateChoice fb = gpu.fallBack("GpuDelegate: not supported on this device");
                eq("CPU (XNNPACK) (fallback for gpu: GpuDelegate: not supported on this device)",
                        fb.executedOn(), "runtime fallback");
            });
            test(name + ": latency table", () -> {
                List<DelegateChoice> cs = new ArrayList<>();
                for (Plan.Partition p : b.plan.partitions) {
                    cs.add(DelegateChoice.choose(p, 34));
                }
                String t = Report.latencyTable(b.plan, cs, new double[] {1e6, 2e6, 3e6, 4e6}, 5);
                check(t.contains("p1       gpu:0    gpu               2.000      1.000  GPU "
                        + "delegate"), "partition row missing:\n" + t);
                check(t.contains("sum of medians 10.000 ms over 5 runs; plan predicts 4.000 ms "
                        + "(for pixel8)"), "summary missing:\n" + t);
            });
        }
    }

    /**
     * Run the plan with {@link PlanRunner}, each partition "executed" by replaying the tensors
     * the Python runtime really computed: a partition must receive exactly the bytes LiteRT
     * produced upstream, under its own signature names, or the test fails.
     */
    @SuppressWarnings("unchecked")
    private static void replayTests(File fx, String name, Bundle b, Routes routes,
            Map<String, Object> exp) {
        File tdir = new File(fx, "trace/" + name);
        Map<String, Object> trace = (Map<String, Object>) exp.get("trace");
        test(name + ": replay of the real run routes the right bytes", () -> {
            Map<Integer, ByteBuffer> real = new TreeMap<>();
            for (Object t : (List<Object>) trace.get("tensors")) {
                int ti = ((Long) t).intValue();
                byte[] data = Files.readAllBytes(new File(tdir, "t" + ti + ".bin").toPath());
                ByteBuffer buf = Tensors.allocate(data.length);
                buf.put(data).rewind();
                real.put(ti, buf);
            }
            PlanRunner runner = new PlanRunner(b.plan, routes);
            for (int i = 0; i < b.plan.inputs.size(); i++) {
                runner.input(i).put(real.get(b.plan.inputs.get(i).tensor).duplicate());
            }
            List<String> calls = new ArrayList<>();
            List<PlanRunner.PartitionExecutor> execs = new ArrayList<>();
            for (Plan.Partition p : b.plan.partitions) {
                execs.add((ins, outs) -> {
                    calls.add(p.id);
                    Set<String> want = new HashSet<>();
                    for (Plan.TensorRef t : p.inputs) {
                        want.add(t.name);
                        ByteBuffer got = ins.get(t.name);
                        check(got != null, p.id + ": input " + t.name + " not given");
                        check(got.position() == 0 && got.remaining() == t.nbytes(),
                                p.id + ": input " + t.name + " not rewound to its full size");
                        check(Tensors.sameBytes(real.get(t.tensor), got),
                                p.id + ": input " + t.name + " has other bytes than LiteRT made");
                    }
                    eq(want, new HashSet<>(ins.keySet()), p.id + " input names");
                    Set<String> wantOut = new HashSet<>();
                    for (Plan.TensorRef t : p.outputs) {
                        wantOut.add(t.name);
                        ByteBuffer o = outs.get(t.name);
                        check(o.position() == 0, p.id + ": output not rewound");
                        o.put(real.get(t.tensor).duplicate()); // as LiteRT's copyTo does
                    }
                    eq(wantOut, new HashSet<>(outs.keySet()), p.id + " output names");
                });
            }
            for (int rep = 0; rep < 2; rep++) { // twice: buffers are reused across runs
                calls.clear();
                long[] nanos = runner.run(execs);
                eq(((List<Object>) exp.get("order")).toString(), calls.toString(), "call order");
                eq(b.plan.partitions.size(), nanos.length, "timings");
            }
            for (int i = 0; i < b.plan.outputs.size(); i++) {
                check(Tensors.sameBytes(real.get(b.plan.outputs.get(i).tensor), runner.output(i)),
                        "model output " + i + " differs");
            }
            Map<String, Object> orig = (Map<String, Object>) trace.get("original");
            SourceModel src = SourceModel.find(new BundleSource.Directory(new File(fx,
                    "bundles/" + name)), b.manifest);
            eq(exp.get("source_in_bundle"), src.bytes != null, "source model found: " + src.note);
            if (orig != null) {
                List<Object> diffs = (List<Object>) orig.get("max_abs_diff");
                for (int i = 0; i < b.plan.outputs.size(); i++) {
                    byte[] ref = Files.readAllBytes(new File(tdir, "original_out" + i + ".bin")
                            .toPath());
                    ByteBuffer rb = Tensors.allocate(ref.length);
                    rb.put(ref).rewind();
                    double d = Tensors.maxAbsDiff(b.plan.outputs.get(i).dtype, runner.output(i),
                            rb);
                    eq(diffs.get(i), d, "max abs diff of output " + i + " (numpy's)");
                }
            }
        });
        test(name + ": a failing partition is named", () -> {
            PlanRunner runner = new PlanRunner(b.plan, routes);
            List<PlanRunner.PartitionExecutor> execs = new ArrayList<>();
            for (int k = 0; k < b.plan.partitions.size(); k++) {
                boolean last = k == b.plan.partitions.size() - 1;
                execs.add((ins, outs) -> {
                    if (last) {
                        throw new IllegalArgumentException("Internal error:\n  boom");
                    }
                });
            }
            Plan.Partition p = b.plan.partitions.get(b.plan.partitions.size() - 1);
            try {
                runner.run(execs);
                throw new AssertionError("no failure");
            } catch (PlanRunner.PartitionFailure e) {
                eq("partition " + p.id + " (" + p.unitName() + ") failed: Internal error: boom",
                        e.getMessage(), "message");
            }
        });
    }

    // ------------------------------------------------------------------ errors only Java checks

    private static void javaOnlyErrors(File fx) throws IOException {
        File src = new File(fx, "bundles/mnv2_pixel8");
        Path tmp = Files.createTempDirectory("bundlecore");
        try {
            test("invalid plan JSON with a matching checksum", () -> {
                File b = copy(src, tmp.resolve("badjson"));
                rewrite(b, "plan.json", "{\"format\": \"edgepart-bundle-plan\",\n \"version\": 1,"
                        .getBytes(StandardCharsets.UTF_8));
                eq(b + "/plan.json: invalid JSON at line 2 column 15 (expecting a property name"
                        + " in double quotes); the file is corrupted or truncated",
                        error(() -> Bundle.load(b)), "message");
            });
            test("plan uses an unlisted partition file", () -> {
                File b = copy(src, tmp.resolve("unlisted"));
                String man = new String(Files.readAllBytes(new File(b, "manifest.json").toPath()),
                        StandardCharsets.UTF_8);
                // drop p3's entry from the manifest (the file stays on disk, unlisted)
                String entry = man.substring(man.lastIndexOf("{", man.indexOf(
                        "partitions/p3.tflite")), man.indexOf("}", man.indexOf(
                        "partitions/p3.tflite")) + 1);
                Files.write(new File(b, "manifest.json").toPath(), man.replace(entry + ",", "")
                        .getBytes(StandardCharsets.UTF_8));
                eq(b + "/manifest.json: plan.json uses partitions/p3.tflite, which the manifest "
                        + "does not list", error(() -> Bundle.load(b)), "message");
            });
            test("a different original model is refused", () -> {
                File b = copy(src, tmp.resolve("othermodel"));
                Bundle bundle = Bundle.load(b);
                Files.copy(new File(b, "partitions/p0.tflite").toPath(),
                        new File(b, bundle.manifest.sourceName).toPath(),
                        StandardCopyOption.REPLACE_EXISTING);
                SourceModel s = SourceModel.find(new BundleSource.Directory(b), bundle.manifest);
                check(s.bytes == null, "accepted another model");
                check(s.note.contains("is not the model this bundle was cut from"), s.note);
            });
            test("load through manifest.json", () -> eq(4, Bundle.load(new File(src,
                    "manifest.json")).plan.partitions.size(), "partitions"));
        } finally {
            delete(tmp);
        }
    }

    /** Replace a bundle file and record its new size and digest in the manifest. */
    private static void rewrite(File bundle, String rel, byte[] data) throws IOException {
        File f = new File(bundle, rel);
        String man = new String(Files.readAllBytes(new File(bundle, "manifest.json").toPath()),
                StandardCharsets.UTF_8);
        String old = Bundle.sha256(Files.readAllBytes(f.toPath()));
        long oldLen = f.length();
        Files.write(f.toPath(), data);
        String entry = ",\n   \"path\": \"" + rel; // manifest.json: sorted keys, indent 1
        man = man.replace(old, Bundle.sha256(data))
                .replace("\"bytes\": " + oldLen + entry, "\"bytes\": " + data.length + entry);
        Files.write(new File(bundle, "manifest.json").toPath(),
                man.getBytes(StandardCharsets.UTF_8));
    }

    private static File copy(File from, Path to) throws IOException {
        Path src = from.toPath();
        Files.walkFileTree(src, new SimpleFileVisitor<Path>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a)
                    throws IOException {
                Files.createDirectories(to.resolve(src.relativize(d).toString()));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                Files.copy(f, to.resolve(src.relativize(f).toString()));
                return FileVisitResult.CONTINUE;
            }
        });
        return to.toFile();
    }

    private static void delete(Path root) throws IOException {
        Files.walkFileTree(root, new SimpleFileVisitor<Path>() {
            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                Files.delete(f);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
