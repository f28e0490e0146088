package edgepart.bundlecore;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * A loaded and verified edgepart bundle: manifest, plan and the bytes of every partition.
 *
 * <p>{@link #load} follows edgepart's Python {@code load_bundle}: every file the manifest lists
 * is read once, its size and SHA-256 checked, and exactly the checked bytes are used; the plan
 * is checked against the schema and cross-checked; the plan must use every listed partition file
 * and only those. {@code arena.json} is checksum-verified and its format and version checked,
 * but its layout is not cross-checked here: the demo does not use it.
 */
public final class Bundle {
    /** The one version of the manifest, plan and arena formats this code reads. */
    public static final long VERSION = 1;
    static final String ARENA_FORMAT = "edgepart-bundle-arena";

    public final String root;
    public final Manifest manifest;
    public final Plan plan;
    /** The files whose size and SHA-256 matched the manifest, in manifest order. */
    public final List<Manifest.FileEntry> verified;
    /** Partition id to the verified bytes of its {@code .tflite} file. */
    public final Map<String, byte[]> partitionBytes;
    public final boolean hasArena;
    public final String report;

    private Bundle(String root, Manifest manifest, Plan plan, List<Manifest.FileEntry> verified,
            Map<String, byte[]> partitionBytes, boolean hasArena, String report) {
        this.root = root;
        this.manifest = manifest;
        this.plan = plan;
        this.verified = Collections.unmodifiableList(verified);
        this.partitionBytes = Collections.unmodifiableMap(partitionBytes);
        this.hasArena = hasArena;
        this.report = report;
    }

    /** Load a bundle directory (or its {@code manifest.json}). */
    public static Bundle load(File path) throws IOException {
        File root = path;
        if (root.getName().equals("manifest.json") && root.isFile()) {
            root = root.getAbsoluteFile().getParentFile();
        }
        if (!root.exists()) {
            throw new BundleException(root.getPath() + ": no such bundle directory");
        }
        if (!root.isDirectory()) {
            String hint = root.getName().endsWith(".tflite")
                    ? " (a model, not a bundle: partition it first)" : "";
            throw new BundleException(root.getPath() + ": not a bundle directory" + hint);
        }
        return load(new BundleSource.Directory(root));
    }

    /** Load and verify a bundle from any source (a directory, Android assets, ...). */
    public static Bundle load(BundleSource src) throws IOException {
        String root = src.root();
        String where = root + "/manifest.json";
        byte[] raw = src.read("manifest.json");
        if (raw == null) {
            throw new BundleException(where + ": missing; " + root
                    + " is not an edgepart bundle (or was not completely written)");
        }
        Manifest manifest = Manifest.fromJson(Json.parse(raw, where), where);
        Map<String, byte[]> files = readListedFiles(src, manifest);
        Map<String, String> roles = new LinkedHashMap<>();
        for (Manifest.FileEntry e : manifest.files) {
            roles.put(e.path, e.role);
        }
        List<String> planFiles = new ArrayList<>();
        for (Map.Entry<String, String> e : roles.entrySet()) {
            if (e.getValue().equals("plan")) {
                planFiles.add(e.getKey());
            }
        }
        if (!planFiles.equals(Collections.singletonList("plan.json"))) {
            throw new BundleException(where + ": must list plan.json with role 'plan' (lists "
                    + Json.repr(planFiles) + ")");
        }
        String planWhere = root + "/plan.json";
        Plan plan = Plan.fromJson(Json.parse(files.get("plan.json"), planWhere), planWhere);
        if (!equal(plan.deviceProfile, manifest.deviceProfile)) {
            throw new BundleException(planWhere + ": device_profile "
                    + Json.repr(plan.deviceProfile) + " differs from the manifest's "
                    + Json.repr(manifest.deviceProfile)
                    + "; the bundle was assembled inconsistently");
        }
        TreeSet<String> listed = new TreeSet<>();
        for (Map.Entry<String, String> e : roles.entrySet()) {
            if (e.getValue().equals("partition")) {
                listed.add(e.getKey());
            }
        }
        TreeSet<String> used = new TreeSet<>();
        for (Plan.Partition p : plan.partitions) {
            used.add(p.file);
        }
        for (String f : used) {
            if (!listed.contains(f)) {
                throw new BundleException(where + ": plan.json uses " + f
                        + ", which the manifest does not list");
            }
        }
        for (String f : listed) {
            if (!used.contains(f)) {
                throw new BundleException(where + ": lists " + f
                        + ", which no partition of plan.json uses");
            }
        }
        boolean hasArena = files.containsKey("arena.json");
        if (hasArena) {
            String arenaWhere = root + "/arena.json";
            Plan.checkFormat(Json.parse(files.get("arena.json"), arenaWhere), ARENA_FORMAT,
                    arenaWhere);
        }
        byte[] report = files.get("report.txt");
        Map<String, byte[]> parts = new LinkedHashMap<>();
        for (Plan.Partition p : plan.partitions) {
            parts.put(p.id, files.get(p.file));
        }
        return new Bundle(root, manifest, plan, new ArrayList<>(manifest.files), parts, hasArena,
                report == null ? "" : new String(report, StandardCharsets.UTF_8));
    }

    private static Map<String, byte[]> readListedFiles(BundleSource src, Manifest manifest)
            throws IOException {
        String root = src.root();
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (Manifest.FileEntry e : manifest.files) {
            if (out.containsKey(e.path)) {
                throw new BundleException(root + "/manifest.json: lists " + e.path + " twice");
            }
            byte[] data = src.read(e.path);
            if (data == null) {
                throw new BundleException(root + "/" + e.path + ": missing (listed in "
                        + "manifest.json); the bundle is incomplete, re-create it");
            }
            if (data.length != e.bytes) {
                String what = data.length < e.bytes ? "truncated" : "larger than recorded";
                throw new BundleException(root + "/" + e.path + ": " + what + ": " + data.length
                        + " bytes, manifest.json records " + e.bytes + "; re-create the bundle");
            }
            String digest = sha256(data);
            if (!digest.equals(e.sha256)) {
                throw new BundleException(root + "/" + e.path + ": checksum mismatch: sha256 "
                        + digest.substring(0, 16) + "..., manifest.json records "
                        + e.sha256.substring(0, 16)
                        + "...; the file is corrupted, re-create the bundle");
            }
            out.put(e.path, data);
        }
        return out;
    }

    /** Lower-case hex SHA-256 of {@code data}. */
    public static String sha256(byte[] data) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("no SHA-256 in this Java runtime", e);
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : md.digest(data)) {
            sb.append(Character.forDigit((b >> 4) & 0xF, 16));
            sb.append(Character.forDigit(b & 0xF, 16));
        }
        return sb.toString();
    }

    private static boolean equal(Object a, Object b) {
        return a == null ? b == null : a.equals(b);
    }
}
