/* A TFLite external delegate that claims no ops: LiteRT loads it through load_delegate()
 * exactly like a GPU/NNAPI/Hexagon/Edge TPU delegate library, calls its Prepare, and then
 * runs every op on its own CPU kernels. Lets the tests exercise the real delegate-loading
 * path on a machine without accelerator libraries.
 *
 * Options: "fail" = "1" makes creation fail with a message (the refused-delegate path);
 * "count" = any value is ignored (options are passed through unchanged).
 *
 * The struct below mirrors TfLiteDelegate from LiteRT's C API (tflite/core/c/common.h):
 * a data pointer, four callbacks, flags, and the opaque-delegate builder pointer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct TfLiteDelegate {
  void* data_;
  int (*Prepare)(void* context, struct TfLiteDelegate* delegate);
  int (*CopyFromBufferHandle)(void* context, struct TfLiteDelegate* delegate, int handle,
                              void* tensor);
  int (*CopyToBufferHandle)(void* context, struct TfLiteDelegate* delegate, int handle,
                            void* tensor);
  void (*FreeBufferHandle)(void* context, struct TfLiteDelegate* delegate, int* handle);
  int64_t flags;
  void* opaque_delegate_builder;
} TfLiteDelegate;

static int prepare_nothing(void* context, TfLiteDelegate* delegate) {
  (void)context;
  (void)delegate;
  return 0; /* kTfLiteOk, no node replaced */
}

TfLiteDelegate* tflite_plugin_create_delegate(char** keys, char** values, size_t n,
                                              void (*report_error)(const char*)) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(keys[i], "fail") == 0 && strcmp(values[i], "1") == 0) {
      if (report_error) report_error("null delegate: asked to fail by option fail=1");
      return NULL;
    }
  }
  TfLiteDelegate* d = (TfLiteDelegate*)calloc(1, sizeof(TfLiteDelegate));
  d->Prepare = prepare_nothing;
  return d;
}

void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) { free(delegate); }
