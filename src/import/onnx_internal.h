/* Private to the ONNX importer (src/import/onnx_*.c). */
#ifndef PPCC_ONNX_INTERNAL_H
#define PPCC_ONNX_INTERNAL_H
#include <stdbool.h>
#include "onnx.pb-c.h"
#include "ppcc/import_onnx.h"

/* Folded constants are capped so a hostile model cannot make the importer
 * allocate without bound. */
#define OX_MAX_CONST_ELEMENTS (INT64_C(1) << 28)
/* Ops on constants evaluated at import by the runtime's kernels: at most
 * this many result elements per node (larger ones run at run time). */
#define OX_MAX_FOLD_ELEMENTS (INT64_C(1) << 24)
#define OX_MAX_FOLD_FLOPS 1e8 /* so a hostile model's fold takes no minutes nor GBs */
/* A constant folded from values or by broadcasting (ConstantOfShape,
 * Range, Expand, Where...): at most this many elements, or as many as its
 * operands hold (a 4096 x 4096 causal mask fits; a Range to 2^40 does not,
 * nor one of 2^26 whose fill and Cast took over 10 s under ASan). */
#define OX_MAX_GROWN_ELEMENTS (INT64_C(1) << 24)

/* A protobuf message is at most 2 GB (larger models keep their weights in
 * external-data files, read tensor by tensor). */
#define OX_MAX_FILE_BYTES ((size_t)2048 << 20)

/* A constant tensor: an initializer, a Constant node, or a folded result. */
typedef struct ox_tensor {
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  int64_t n;  /* elements */
  void *data; /* n elements of dtype, malloc'd (may be NULL when n == 0) */
} ox_tensor;

bool ox_tensor_alloc(ox_tensor *t, ppcc_dtype dtype, int rank, const int64_t *shape);
void ox_tensor_free(ox_tensor *t);
bool ox_tensor_copy(ox_tensor *dst, const ox_tensor *src);
double ox_get(const ox_tensor *t, int64_t i);
/* Element i as an integer, clamped to int64's range (NaN is 0). */
int64_t ox_get_int(const ox_tensor *t, int64_t i);
void ox_set(ox_tensor *t, int64_t i, double v);
/* ONNX elem_type -> ppcc dtype; false for types ppcc has no counterpart of. */
bool ox_dtype_from_onnx(int32_t onnx_type, ppcc_dtype *out);
/* Decodes an initializer / attribute tensor; external data is read from
 * dir (bounds-checked, never outside dir). what names it in messages. */
ppcc_status ox_tensor_from_proto(const Onnx__TensorProto *t, const char *dir, const char *what,
                                 ox_tensor *out, ppcc_diag *d);

/* Evaluates node on constant operands (in[k] NULL for an absent optional
 * operand). *handled false: this op cannot be folded (no error). */
ppcc_status ox_fold(const Onnx__NodeProto *node, const char *who, ox_tensor *const *in, int n_in,
                    ox_tensor *out, bool *handled, ppcc_diag *d);
/* True when op_type is one ox_fold evaluates. */
bool ox_foldable(const char *op_type);

/* Attribute lookup on a node. */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
float ox_attr_float(const Onnx__NodeProto *n, const char *name, float dflt);

/* model.json and safetensors text of a finished graph (onnx_write.c):
 * only ops reaching an output (live[op]) and the params they read. */
ppcc_status ox_write_model(const ppcc_graph *g, const bool *live_op, const bool *live_value, bool placed,
                           ppcc_onnx_result *out, ppcc_diag *d);
ppcc_status ox_write_weights(const ppcc_graph *g, const bool *live_value, ox_tensor *const *param_data,
                             ppcc_onnx_result *out, ppcc_diag *d);

#endif
