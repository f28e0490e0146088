// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.content;
public class Intent {
    public int getIntExtra(String name, int defaultValue) { return defaultValue; }
    public String getStringExtra(String name) { return null; }
}
