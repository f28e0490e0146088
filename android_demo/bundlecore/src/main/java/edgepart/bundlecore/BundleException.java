package edgepart.bundlecore;

/**
 * A bundle that is missing, incomplete, corrupted, of an unknown version or inconsistent.
 *
 * <p>The message is one line naming the file (and JSON path or partition) and how to fix it, in
 * the same words as edgepart's Python {@code BundleError} where both check the same thing.
 */
public final class BundleException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BundleException(String message) {
        super(message);
    }
}
