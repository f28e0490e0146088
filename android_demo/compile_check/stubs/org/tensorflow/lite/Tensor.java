// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package org.tensorflow.lite;
public interface Tensor {
    int numBytes();
    int[] shape();
}
