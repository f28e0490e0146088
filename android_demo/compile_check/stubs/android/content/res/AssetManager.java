// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.content.res;
import java.io.IOException;
import java.io.InputStream;
public final class AssetManager {
    public InputStream open(String fileName) throws IOException { throw new IOException(); }
    public String[] list(String path) throws IOException { return null; }
}
