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

    /** One line per split of a version-2 plan: the layer, where its shards run and whether at
     * the same time, its collective and predicted gain (empty for a plan without splits). */
    public static String splitLines(Plan plan, Routes routes) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < routes.shardGroups.size(); i++) {
            Routes.ShardGroup g = routes.shardGroups.get(i);
            Plan.Split s = plan.splits.get(i);
            StringBuilder shards = new StringBuilder();
            for (int k = 0; k < g.partitions.size(); k++) {
                shards.append(k == 0 ? "" : ", ").append(g.partitions.get(k)).append(" (")
                        .append(g.units.get(k)).append(')');
            }
            Double gain = s.predictedGain();
            sb.append(String.format(Locale.ROOT, "split %s %s by %s: shards %s %s; %s%s%n",
                    g.split, g.layer, g.mode, shards,
                    g.concurrent ? "run concurrently" : "run one after another", g.collective,
                    gain == null ? "" : String.format(Locale.ROOT, "; predicted gain %.1f %%",
                            gain * 100)));
        }
        return sb.toString();
    }
}
