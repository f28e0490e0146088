// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package org.tensorflow.lite.nnapi;
import org.tensorflow.lite.Delegate;
public class NnApiDelegate implements Delegate, AutoCloseable {
    public static final class Options {
        public Options setUseNnapiCpu(boolean enable) { return this; }
    }
    public NnApiDelegate(Options options) {}
    @Override public long getNativeHandle() { return 0; }
    @Override public void close() {}
}
