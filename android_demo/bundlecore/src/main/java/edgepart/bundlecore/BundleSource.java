package edgepart.bundlecore;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Where a bundle's files come from: a directory (pushed with {@code adb push}) or, on Android,
 * the APK's assets. Paths are relative, with {@code /} separators ({@code partitions/p0.tflite}).
 */
public interface BundleSource {
    /** How the bundle root is named in messages (a directory path, {@code assets/...}). */
    String root();

    /** The whole file, or {@code null} if it does not exist. */
    byte[] read(String relPath) throws IOException;

    /** Read a stream to its end. */
    static byte[] readAll(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        for (int n; (n = in.read(buf)) > 0; ) {
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }

    /** A bundle directory on the file system. */
    final class Directory implements BundleSource {
        private final File dir;

        public Directory(File dir) {
            this.dir = dir;
        }

        public File dir() {
            return dir;
        }

        @Override
        public String root() {
            return dir.getPath();
        }

        @Override
        public byte[] read(String relPath) throws IOException {
            File f = new File(dir, relPath);
            if (f.isDirectory()) {
                throw new BundleException(root() + "/" + relPath
                        + ": is a directory, expected a file");
            }
            if (!f.isFile()) {
                return null;
            }
            try (InputStream in = new FileInputStream(f)) {
                return readAll(in);
            }
        }
    }
}
