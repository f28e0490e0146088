// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package org.tensorflow.lite;
import java.nio.ByteBuffer;
import java.util.Map;
public final class Interpreter implements AutoCloseable {
    public static class Options {
        public Options setNumThreads(int numThreads) { return this; }
        public Options setUseXNNPACK(boolean useXNNPACK) { return this; }
        public Options addDelegate(Delegate delegate) { return this; }
    }
    public Interpreter(ByteBuffer byteBuffer, Options options) {}
    public String[] getSignatureKeys() { return null; }
    public String[] getSignatureInputs(String signatureKey) { return null; }
    public String[] getSignatureOutputs(String signatureKey) { return null; }
    public Tensor getInputTensorFromSignature(String inputName, String signatureKey) { return null; }
    public Tensor getOutputTensorFromSignature(String outputName, String signatureKey) { return null; }
    public void runSignature(Map<String, Object> inputs, Map<String, Object> outputs, String signatureKey) {}
    public void runForMultipleInputsOutputs(Object[] inputs, Map<Integer, Object> outputs) {}
    @Override
    public void close() {}
}
