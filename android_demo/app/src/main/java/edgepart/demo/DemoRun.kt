package edgepart.demo

import android.os.Build
import edgepart.bundlecore.Bundle
import edgepart.bundlecore.BundleSource
import edgepart.bundlecore.DelegateChoice
import edgepart.bundlecore.Plan
import edgepart.bundlecore.PlanRunner
import edgepart.bundlecore.Report
import edgepart.bundlecore.Routes
import edgepart.bundlecore.SourceModel
import edgepart.bundlecore.Tensors
import org.tensorflow.lite.Interpreter
import java.io.File
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.util.Locale

/**
 * One demo run of a bundle: verify it, open every partition on its delegate (or the CPU, said
 * so), run the partitions in plan order [runs] times, report per-partition medians next to the
 * plan's predictions, and compare the outputs with the original model's when it is present
 * ([original], else next to the bundle's files) and is the model the bundle was cut from.
 */
class DemoRun(
    private val source: BundleSource,
    private val runs: Int,
    private val threads: Int,
    private val original: File?,
    private val log: (String) -> Unit,
) {
    fun execute() {
        val bundle = Bundle.load(source) // checks every file's size and sha256, then the plan
        val plan = bundle.plan
        log("${bundle.verified.size} files verified (size and sha256 as in manifest.json)")
        log("${plan.sourceName}: ${plan.partitions.size} partitions, device profile " +
            (plan.deviceProfile ?: "none"))
        val routes = Routes(plan)
        logRouting(plan, routes)
        if (plan.splits.isNotEmpty()) {
            // tensor parallelism (plan.json version 2): shards are ordinary partitions here
            log(Report.splitLines(plan, routes).trimEnd())
            log("this demo runs the partitions one at a time, in plan order; the plan's " +
                "shards run concurrently in edgepart's runtime")
        }
        val parts = ArrayList<LiteRtPartition>()
        try {
            for (p in plan.partitions) {
                val wanted = DelegateChoice.choose(p, Build.VERSION.SDK_INT)
                val bytes = bundle.partitionBytes.getValue(p.id)
                parts += LiteRtPartition.open(p, bytes, wanted, p.threads ?: threads)
                log("${p.id}: ${p.unitName()} ${p.delegate} -> ${parts.last().choice.executedOn()}")
            }
            val runner = PlanRunner(plan, routes)
            for ((i, t) in plan.inputs.withIndex()) {
                runner.input(i).put(Tensors.random(t.dtype, t.shape, SEED + i)).rewind()
            }
            repeat(WARMUP) { runner.run(parts) }
            val times = Array(parts.size) { LongArray(runs) }
            repeat(runs) { r -> runner.run(parts).forEachIndexed { k, ns -> times[k][r] = ns } }
            val medians = DoubleArray(parts.size) { PlanRunner.median(times[it]) }
            log(Report.latencyTable(plan, parts.map { it.choice }, medians, runs))
            compareWithOriginal(bundle, runner)
        } finally {
            parts.forEach { it.close() }
        }
    }

    private fun logRouting(plan: Plan, routes: Routes) {
        for ((k, p) in plan.partitions.withIndex()) {
            for (r in routes.byName[k]) {
                val from = if (r.fromId == null) "model input" else r.fromId
                val src = "$from.${short(r.fromName)}"
                log("  ${p.id}.${short(r.input)} <- $src (tensor ${r.tensor})")
            }
        }
    }

    /** Run the original model on the CPU with the same inputs; max abs difference per output. */
    private fun compareWithOriginal(bundle: Bundle, runner: PlanRunner) {
        val plan = bundle.plan
        val found = if (original != null) {
            SourceModel.check(original.readBytes(), original.path, bundle.manifest)
        } else {
            SourceModel.find(source, bundle.manifest)
        }
        log("original model: ${found.note}")
        val bytes = found.bytes ?: return
        val model = ByteBuffer.allocateDirect(bytes.size).order(ByteOrder.nativeOrder())
        model.put(bytes).rewind()
        Interpreter(model, Interpreter.Options().setNumThreads(threads)).use { original ->
            val inputs = plan.inputs.indices.map {
                runner.input(it).duplicate().order(ByteOrder.nativeOrder()) // the same values
            }
            val outputs = plan.outputs.map { Tensors.allocate(it.nbytes()) }
            val key = plan.signatureKey?.takeIf { it in original.signatureKeys }
            fun runOnce(): Long {
                inputs.forEach { it.rewind() }
                outputs.forEach { it.rewind() }
                val t0 = System.nanoTime()
                if (key != null) {
                    original.runSignature(
                        plan.inputs.indices.associate { plan.inputs[it].name to inputs[it] },
                        plan.outputs.indices.associate { plan.outputs[it].name to outputs[it] },
                        key,
                    )
                } else { // no signature: the plan lists inputs/outputs in the subgraph's order
                    original.runForMultipleInputsOutputs(
                        inputs.toTypedArray(),
                        outputs.indices.associateWith { outputs[it] as Any },
                    )
                }
                return System.nanoTime() - t0
            }
            repeat(WARMUP) { runOnce() }
            val median = PlanRunner.median(LongArray(runs) { runOnce() })
            for ((i, t) in plan.outputs.withIndex()) {
                val d = Tensors.maxAbsDiff(t.dtype, runner.output(i), outputs[i])
                log(String.format(Locale.ROOT, "output %s: max |partitioned - original| = %.3g",
                    t.name, d))
            }
            val baseline = (plan.predicted?.get("baseline_latency_s") as? Number)?.toDouble()
            log(String.format(Locale.ROOT, "original model on CPU (XNNPACK, %d threads): median " +
                "%.3f ms; plan predicts %s for TFLite's default placement", threads, median / 1e6,
                if (baseline == null) "nothing" else String.format(Locale.ROOT, "%.3f ms",
                    baseline * 1e3)))
        }
    }

    private fun short(name: String) = if (name.length <= 40) name else name.take(37) + "..."

    companion object {
        const val WARMUP = 3
        const val SEED = 1234L
    }
}
