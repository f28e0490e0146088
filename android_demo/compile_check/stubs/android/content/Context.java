// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.content;
import android.content.res.AssetManager;
import java.io.File;
public abstract class Context {
    public abstract AssetManager getAssets();
    public abstract File getExternalFilesDir(String type);
}
