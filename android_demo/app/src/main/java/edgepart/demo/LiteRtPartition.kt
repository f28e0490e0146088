package edgepart.demo

import edgepart.bundlecore.BundleException
import edgepart.bundlecore.DelegateChoice
import edgepart.bundlecore.Plan
import edgepart.bundlecore.PlanRunner
import org.tensorflow.lite.Delegate
import org.tensorflow.lite.Interpreter
import org.tensorflow.lite.gpu.CompatibilityList
import org.tensorflow.lite.gpu.GpuDelegate
import org.tensorflow.lite.nnapi.NnApiDelegate
import java.nio.ByteBuffer
import java.nio.ByteOrder

/**
 * One partition in its own LiteRT [Interpreter], run through its signature by name.
 *
 * [choice] is where it really runs: if the delegate the plan asks for cannot be created (not
 * supported, or it refuses the partition), the partition runs on the CPU (XNNPACK) and the
 * choice says why. Ops a delegate declines inside a partition still run on LiteRT's CPU
 * kernels, as in LiteRT itself; the Interpreter API does not tell which ops those are.
 */
class LiteRtPartition private constructor(
    val entry: Plan.Partition,
    val choice: DelegateChoice,
    private val interpreter: Interpreter,
    private val delegate: Delegate?,
) : PlanRunner.PartitionExecutor, AutoCloseable {

    override fun run(inputs: Map<String, ByteBuffer>, outputs: Map<String, ByteBuffer>) {
        if (inputs.isEmpty()) { // LiteRT's runSignature refuses an empty input map
            throw UnsupportedOperationException("partition ${entry.id} has no inputs, which " +
                "LiteRT's Java runSignature cannot run; merge it into a neighbour")
        }
        interpreter.runSignature(inputs, outputs, entry.signatureKey)
    }

    override fun close() {
        interpreter.close()
        delegate?.close()
    }

    /** The file's signature must have exactly the plan's boundary tensors (names and sizes). */
    private fun checkSignature() {
        val key = entry.signatureKey
        if (key !in interpreter.signatureKeys) {
            throw BundleException("${entry.file}: has no signature '$key' (plan.json); the " +
                "partition file and the plan are from different bundles")
        }
        fun mismatch(side: String, have: Any, want: Any): Nothing =
            throw BundleException("${entry.file}: its signature $side $have do not match " +
                "plan.json $want; the partition file and the plan are from different bundles")
        val inNames = interpreter.getSignatureInputs(key).toSet()
        val outNames = interpreter.getSignatureOutputs(key).toSet()
        if (inNames != entry.inputs.map { it.name }.toSet()) {
            mismatch("inputs", inNames, entry.inputs.map { it.name })
        }
        if (outNames != entry.outputs.map { it.name }.toSet()) {
            mismatch("outputs", outNames, entry.outputs.map { it.name })
        }
        for (t in entry.inputs) {
            val n = interpreter.getInputTensorFromSignature(t.name, key).numBytes().toLong()
            if (n != t.nbytes()) mismatch("input ${t.name}", "$n bytes", "${t.nbytes()} bytes")
        }
        for (t in entry.outputs) {
            val n = interpreter.getOutputTensorFromSignature(t.name, key).numBytes().toLong()
            if (n != t.nbytes()) mismatch("output ${t.name}", "$n bytes", "${t.nbytes()} bytes")
        }
    }

    companion object {
        /** Create the partition's interpreter with the delegate [wanted] names, or the CPU. */
        fun open(
            entry: Plan.Partition,
            bytes: ByteArray,
            wanted: DelegateChoice,
            threads: Int,
        ): LiteRtPartition {
            val model = ByteBuffer.allocateDirect(bytes.size).order(ByteOrder.nativeOrder())
            model.put(bytes).rewind()
            var choice = wanted
            var opened: LiteRtPartition? = null
            val kind = wanted.kind
            if (kind == DelegateChoice.Kind.GPU || kind == DelegateChoice.Kind.NNAPI) {
                try {
                    opened = withDelegate(entry, model, wanted, threads)
                } catch (e: DelegateUnavailable) {
                    choice = wanted.fallBack(e.reason)
                }
            }
            if (opened == null) {
                val options = Interpreter.Options().setNumThreads(threads)
                    .setUseXNNPACK(choice.kind != DelegateChoice.Kind.CPU_BUILTIN)
                opened = LiteRtPartition(entry, choice, Interpreter(model, options), null)
            }
            try {
                opened.checkSignature()
            } catch (e: BundleException) {
                opened.close()
                throw e
            }
            return opened
        }

        /** The partition on its delegate, or [DelegateUnavailable] saying why not. */
        private fun withDelegate(
            entry: Plan.Partition,
            model: ByteBuffer,
            wanted: DelegateChoice,
            threads: Int,
        ): LiteRtPartition {
            val label = wanted.kind.label
            val created = try {
                createDelegate(wanted.kind)
            } catch (e: Exception) {
                throw DelegateUnavailable("$label could not be created: ${oneLine(e)}")
            } catch (e: UnsatisfiedLinkError) {
                throw DelegateUnavailable("$label native library missing: ${oneLine(e)}")
            }
            val delegate = created ?: throw DelegateUnavailable(
                "the GPU delegate does not support this device (CompatibilityList)",
            )
            try {
                val options = Interpreter.Options().setNumThreads(threads).addDelegate(delegate)
                return LiteRtPartition(entry, wanted, Interpreter(model, options), delegate)
            } catch (e: RuntimeException) { // LiteRT: "Internal error: Failed to apply delegate"
                delegate.close()
                throw DelegateUnavailable("$label refused the partition: ${oneLine(e)}")
            }
        }

        private fun createDelegate(kind: DelegateChoice.Kind): Delegate? =
            when (kind) {
                DelegateChoice.Kind.GPU -> CompatibilityList().use { compat ->
                    if (compat.isDelegateSupportedOnThisDevice) {
                        GpuDelegate(compat.bestOptionsForThisDevice)
                    } else {
                        null
                    }
                }
                // NNAPI's own CPU implementation is disabled: a partition NNAPI cannot place on
                // an accelerator is then refused (and runs on XNNPACK, reported) instead of
                // silently running on NNAPI's reference CPU code
                DelegateChoice.Kind.NNAPI ->
                    NnApiDelegate(NnApiDelegate.Options().setUseNnapiCpu(false))
                else -> null
            }

        fun oneLine(e: Throwable): String =
            (e.message ?: e.toString()).replace(Regex("\\s+"), " ").trim()
    }

    private class DelegateUnavailable(val reason: String) : Exception(reason)
}
