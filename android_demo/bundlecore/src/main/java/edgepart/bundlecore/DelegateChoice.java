package edgepart.bundlecore;

/**
 * Which LiteRT path a partition runs on in the Android demo: a pure decision from the plan entry
 * (and the Android API level), made before anything is loaded. Creating the delegate may still
 * fail on the phone; then {@link #fallBack} records why the partition runs on the CPU instead.
 *
 * <p>The mapping follows edgepart's runtime ({@code docs/bundle.md}, {@code executor} / {@code
 * delegate}): {@code xnnpack} is LiteRT's default CPU path, {@code cpu_builtin} the builtin
 * kernels without XNNPACK, {@code gpu} the GPU delegate, {@code nnapi} the NNAPI delegate. Every
 * other delegate ({@code gpu_mldrift}, {@code hexagon}, {@code edgetpu}, {@code npu}, ...) has
 * no counterpart in LiteRT's Interpreter API as this demo ships it, so those partitions run on
 * the CPU and say so: the demo never reports a processor it did not use.
 */
public final class DelegateChoice {
    /** What the demo can create. */
    public enum Kind {
        XNNPACK("CPU (XNNPACK)"),
        CPU_BUILTIN("CPU (builtin kernels, no XNNPACK)"),
        GPU("GPU delegate"),
        NNAPI("NNAPI delegate");

        public final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    /** NNAPI delegates need Android 8.1. */
    public static final int NNAPI_MIN_SDK = 27;

    public final String partition;
    /** The delegate the plan asks for (its {@code executor.delegate} or {@code delegate}). */
    public final String requested;
    public final Kind kind;
    /** True if {@link #kind} is not what the plan asked for. */
    public final boolean fallback;
    /** Why (empty if nothing was substituted). */
    public final String note;

    private DelegateChoice(String partition, String requested, Kind kind, boolean fallback,
            String note) {
        this.partition = partition;
        this.requested = requested;
        this.kind = kind;
        this.fallback = fallback;
        this.note = note;
    }

    /** Decide the path of one partition on a device with this Android API level. */
    public static DelegateChoice choose(Plan.Partition p, int sdkInt) {
        Plan.Executor ex = p.executor;
        String name = ex != null && ex.delegate != null ? ex.delegate : p.delegate;
        if (ex != null && !ex.kind.equals("delegate")) {
            return kernels(p.id, name, ex.kind);
        }
        switch (name) {
            case "xnnpack":
                return kernels(p.id, name, "xnnpack");
            case "cpu_builtin":
                return kernels(p.id, name, "builtin");
            case "reference":
                return kernels(p.id, name, "reference");
            case "gpu":
                return new DelegateChoice(p.id, name, Kind.GPU, false, libraryNote(ex));
            case "nnapi":
                if (sdkInt < NNAPI_MIN_SDK) {
                    return new DelegateChoice(p.id, name, Kind.XNNPACK, true, "NNAPI needs "
                            + "Android API " + NNAPI_MIN_SDK + ", this device has API " + sdkInt);
                }
                return new DelegateChoice(p.id, name, Kind.NNAPI, false, libraryNote(ex));
            default:
                return new DelegateChoice(p.id, name, Kind.XNNPACK, true, "the demo has no "
                        + name + " delegate (it ships LiteRT's GPU and NNAPI delegates only)");
        }
    }

    private static DelegateChoice kernels(String id, String name, String kind) {
        switch (kind) {
            case "xnnpack":
                return new DelegateChoice(id, name, Kind.XNNPACK, false, "");
            case "builtin":
                return new DelegateChoice(id, name, Kind.CPU_BUILTIN, false, "");
            default: // "reference": LiteRT's Java API cannot select the reference kernels
                return new DelegateChoice(id, name, Kind.CPU_BUILTIN, true, "LiteRT's Java API "
                        + "has no reference kernels; builtin kernels instead");
        }
    }

    private static String libraryNote(Plan.Executor ex) {
        return ex != null && ex.library != null
                ? "the plan's library " + ex.library + " is not used on Android" : "";
    }

    /** The same partition on the CPU (XNNPACK) because its delegate could not be created. */
    public DelegateChoice fallBack(String reason) {
        return new DelegateChoice(partition, requested, Kind.XNNPACK, true, reason);
    }

    /** Where the partition really runs, with the reason when it is not what the plan asked. */
    public String executedOn() {
        return fallback ? kind.label + " (fallback for " + requested + ": " + note + ")"
                : kind.label;
    }
}
