// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.app;
import android.content.Context;
import android.content.Intent;
import android.content.res.AssetManager;
import android.os.Bundle;
import android.view.View;
import java.io.File;
public class Activity extends Context {
    protected void onCreate(Bundle savedInstanceState) {}
    protected void onDestroy() {}
    public Intent getIntent() { return null; }
    public void setContentView(View view) {}
    public final void runOnUiThread(Runnable action) {}
    @Override public AssetManager getAssets() { return null; }
    @Override public File getExternalFilesDir(String type) { return null; }
}
