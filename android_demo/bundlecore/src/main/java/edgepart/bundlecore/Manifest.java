package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.regex.Pattern;

/** The typed content of {@code manifest.json} (format {@code edgepart-bundle}, version 1). */
public final class Manifest {
    public static final String FORMAT = "edgepart-bundle";
    static final String SCHEMA = "bundle_manifest.schema.json";
    private static final Pattern SHA256 = Pattern.compile("^[0-9a-f]{64}$");
    private static final Pattern PATH = Pattern.compile(
            "^(plan\\.json|arena\\.json|report\\.txt|partition_report\\.txt|partitions/[A-Za-z0-9_.-]+\\.tflite)$");
    private static final List<String> ROLES = Arrays.asList("plan", "arena", "report", "partition");

    /** One listed file: its path relative to the bundle, role, size and SHA-256 (hex). */
    public static final class FileEntry {
        public final String path;
        public final String role;
        public final long bytes;
        public final String sha256;

        FileEntry(Doc d) {
            d.require("path", "role", "bytes", "sha256");
            path = d.str("path", PATH);
            role = d.oneOf("role", ROLES);
            bytes = d.integer("bytes", 0);
            sha256 = d.str("sha256", SHA256);
            d.onlyKeys("path", "role", "bytes", "sha256");
        }
    }

    public final String creatorTool;
    public final String creatorVersion;
    public final String sourceName;
    public final String sourceSha256;
    public final long sourceBytes;
    /** Absolute path of the source model when the bundle was written, or {@code null}. */
    public final String sourcePath;
    public final String deviceProfile;
    /** Every file except {@code manifest.json}, sorted by path. */
    public final List<FileEntry> files;

    private Manifest(Doc d) {
        d.require("format", "version", "creator", "source_model", "device_profile", "files");
        Doc creator = d.obj("creator");
        creator.require("tool", "version");
        creatorTool = creator.str("tool");
        creatorVersion = creator.str("version");
        creator.onlyKeys("tool", "version");
        Doc src = d.obj("source_model");
        src.require("name", "sha256", "bytes", "path");
        sourceName = src.str("name");
        sourceSha256 = src.str("sha256", SHA256);
        sourceBytes = src.integer("bytes", 0);
        sourcePath = src.strOrNull("path");
        src.onlyKeys("name", "sha256", "bytes", "path");
        deviceProfile = d.strOrNull("device_profile");
        List<FileEntry> fs = new ArrayList<>();
        for (Doc f : d.objects("files", 2)) {
            fs.add(new FileEntry(f));
        }
        files = Collections.unmodifiableList(fs);
        d.onlyKeys("format", "version", "creator", "source_model", "device_profile", "files");
    }

    /** Parse and check a manifest document (format, version, then schema). */
    public static Manifest fromJson(Object json, String where) {
        Plan.checkFormat(json, FORMAT, where);
        return new Manifest(Doc.root(json, where, SCHEMA));
    }
}
