package edgepart.bundlecore;

import java.util.List;
import java.util.Locale;

/** The demo's result table: per partition where it ran, measured median and predicted time. */
public final class Report {
    private Report() {}

    /**
     * @param medianNanos measured median per partition (plan order)
     * @param choices where each partition really ran (plan order)
     * @param runs how many timed runs the medians are over
     */
    public static String latencyTable(Plan plan, List<DelegateChoice> choices,
            double[] medianNanos, int runs) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%-8s %-8s %-12s %10s %10s  %s%n", "id", "unit",
                "delegate", "median ms", "pred. ms", "ran on"));
        double total = 0;
        for (int k = 0; k < plan.partitions.size(); k++) {
            Plan.Partition p = plan.partitions.get(k);
            Double pred = p.predictedSeconds();
            total += medianNanos[k];
            sb.append(String.format(Locale.ROOT, "%-8s %-8s %-12s %10.3f %10s  %s%n", p.id,
                    p.unitName(), p.delegate, medianNanos[k] / 1e6,
                    pred == null ? "-" : String.format(Locale.ROOT, "%.3f", pred * 1e3),
                    choices.get(k).executedOn()));
        }
        Double latency = plan.predictedLatency();
        sb.append(String.format(Locale.ROOT, "sum of medians %.3f ms over %d runs; plan predicts "
                + "%s (for %s)%n", total / 1e6, runs,
                latency == null ? "no latency" : String.format(Locale.ROOT, "%.3f ms",
                        latency * 1e3),
                plan.deviceProfile == null ? "no device profile" : plan.deviceProfile));
        return sb.toString();
    }
}
