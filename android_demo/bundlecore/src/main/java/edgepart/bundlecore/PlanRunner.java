package edgepart.bundlecore;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a plan's partitions in plan (dependency) order, routing boundary tensors by source tensor
 * index and handing them to each partition by signature name.
 *
 * <p>Every boundary tensor has exactly one direct buffer, allocated once: the producer writes its
 * output into it and each consumer reads that same buffer as its input, so the Java side copies
 * nothing; LiteRT copies into and out of its own tensors. How a partition runs is the caller's
 * {@link PartitionExecutor} (LiteRT's {@code Interpreter.runSignature} on Android).
 */
public final class PlanRunner {
    /** Runs one partition: fill every buffer of {@code outputs} from {@code inputs}. */
    public interface PartitionExecutor {
        void run(Map<String, ByteBuffer> inputs, Map<String, ByteBuffer> outputs)
                throws Exception;
    }

    /** A partition failed; the message names it, its unit and the cause. */
    public static final class PartitionFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        PartitionFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final Plan plan;
    private final Map<Integer, ByteBuffer> buffers = new HashMap<>();
    private final List<Map<String, ByteBuffer>> inputsByName = new ArrayList<>();
    private final List<Map<String, ByteBuffer>> outputsByName = new ArrayList<>();

    public PlanRunner(Plan plan, Routes routes) {
        this.plan = plan;
        for (Plan.TensorRef t : plan.inputs) {
            buffers.put(t.tensor, Tensors.allocate(t.nbytes()));
        }
        for (Plan.Partition p : plan.partitions) {
            Map<String, ByteBuffer> outs = new LinkedHashMap<>();
            for (Plan.TensorRef t : p.outputs) {
                ByteBuffer b = Tensors.allocate(t.nbytes());
                buffers.put(t.tensor, b);
                outs.put(t.name, b);
            }
            outputsByName.add(Collections.unmodifiableMap(outs));
        }
        for (int k = 0; k < plan.partitions.size(); k++) {
            Map<String, ByteBuffer> ins = new LinkedHashMap<>();
            for (Routes.Route r : routes.byName.get(k)) {
                ins.put(r.input, buffers.get(r.tensor));
            }
            inputsByName.add(Collections.unmodifiableMap(ins));
        }
    }

    /** The buffer of model input {@code i} (plan order) to fill before {@link #run}. */
    public ByteBuffer input(int i) {
        return buffers.get(plan.inputs.get(i).tensor);
    }

    /** The buffer of model output {@code i} (plan order), valid after {@link #run}. */
    public ByteBuffer output(int i) {
        ByteBuffer b = buffers.get(plan.outputs.get(i).tensor);
        b.rewind();
        return b;
    }

    /** The buffer of any model input or boundary tensor, by source tensor index. */
    public ByteBuffer tensor(int sourceIndex) {
        return buffers.get(sourceIndex);
    }

    /** Partition {@code k}'s inputs by signature name (the buffers it will be given). */
    public Map<String, ByteBuffer> inputsOf(int k) {
        return inputsByName.get(k);
    }

    /** Partition {@code k}'s outputs by signature name. */
    public Map<String, ByteBuffer> outputsOf(int k) {
        return outputsByName.get(k);
    }

    /**
     * One inference: every partition in plan order.
     *
     * @return nanoseconds each partition took (copies in and out included)
     */
    public long[] run(List<? extends PartitionExecutor> executors) {
        int n = plan.partitions.size();
        if (executors.size() != n) {
            throw new IllegalArgumentException(executors.size() + " executors for " + n
                    + " partitions");
        }
        long[] nanos = new long[n];
        for (int k = 0; k < n; k++) {
            Map<String, ByteBuffer> ins = inputsByName.get(k);
            Map<String, ByteBuffer> outs = outputsByName.get(k);
            for (ByteBuffer b : ins.values()) {
                b.rewind();
            }
            for (ByteBuffer b : outs.values()) {
                b.rewind();
            }
            long t0 = System.nanoTime();
            try {
                executors.get(k).run(ins, outs);
            } catch (Exception e) {
                Plan.Partition p = plan.partitions.get(k);
                String msg = e.getMessage() == null ? e.toString() : e.getMessage();
                throw new PartitionFailure("partition " + p.id + " (" + p.unitName()
                        + ") failed: " + msg.replaceAll("\\s+", " ").trim(), e);
            }
            nanos[k] = System.nanoTime() - t0;
        }
        return nanos;
    }

    /** Median of {@code xs} (mean of the middle two for an even count). */
    public static double median(long[] xs) {
        if (xs.length == 0) {
            throw new IllegalArgumentException("median of nothing");
        }
        long[] s = xs.clone();
        java.util.Arrays.sort(s);
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + (double) s[m]) / 2.0;
    }
}
