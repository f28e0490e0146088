package edgepart.bundlecore;

import java.io.IOException;

/**
 * The original (unpartitioned) model, for the comparison run: found next to the bundle's files
 * and accepted only if its size and SHA-256 equal the manifest's {@code source_model}, so the
 * demo never compares against a different model.
 */
public final class SourceModel {
    /** The verified bytes, or {@code null}; {@link #note} says what was found or why not. */
    public final byte[] bytes;
    public final String note;

    private SourceModel(byte[] bytes, String note) {
        this.bytes = bytes;
        this.note = note;
    }

    /** Look in the bundle for the source model's file name, then {@code source.tflite}. */
    public static SourceModel find(BundleSource src, Manifest m) throws IOException {
        String[] names = {m.sourceName, "source.tflite"};
        for (String name : names) {
            if (name.contains("/") || name.equals("manifest.json")) {
                continue;
            }
            byte[] data = src.read(name);
            if (data != null) {
                return check(data, src.root() + "/" + name, m);
            }
        }
        return new SourceModel(null, "no original model in " + src.root() + " (push "
                + m.sourceName + " next to manifest.json to compare outputs)");
    }

    /** Accept {@code data} (read from {@code where}) if it is the manifest's source model. */
    public static SourceModel check(byte[] data, String where, Manifest m) {
        if (data.length != m.sourceBytes || !Bundle.sha256(data).equals(m.sourceSha256)) {
            return new SourceModel(null, where + " is not the model this bundle was cut from ("
                    + data.length + " bytes, sha256 " + Bundle.sha256(data).substring(0, 16)
                    + "...; manifest.json records " + m.sourceBytes + " bytes, sha256 "
                    + m.sourceSha256.substring(0, 16) + "...); not comparing");
        }
        return new SourceModel(data, where + " (sha256 matches manifest.json)");
    }
}
