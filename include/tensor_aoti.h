/*
 * libtensor_aoti: runs CPU models compiled by PyTorch's AOTInductor
 * (torch._inductor.aoti_compile_and_package) on libtensor, with no libtorch.
 *
 * Link with -ltensor_aoti -ltensor. Conventions as tensor.h: fallible calls return
 * tensor_status_t and leave out-parameters untouched on failure; tensor_aoti_last_error()
 * then describes the failure (thread-local; libtensor's own tensor_last_error() is not
 * written by these calls). Handles returned through out-parameters are owned.
 * Threads: one call at a time on a model (tensor_aoti_run uses it exclusively); the
 * first tensor_aoti_load sets an environment variable, so no other thread may read or
 * change the environment during it.
 *
 * Hand-written (a test, aoti/tests/host.rs, checks it against the library's exports).
 */

#ifndef LIBTENSOR_TENSOR_AOTI_H
#define LIBTENSOR_TENSOR_AOTI_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque handle: one loaded model (its code, weights and runtime container). */
typedef struct tensor_aoti_model_t tensor_aoti_model_t;

/**
 * Loads a `.pt2` package (its CPU model: the `.wrapper.so` under `<name>/data/aotinductor/<model>/`)
 * or a model `.so` in `*out` (owned; release with tensor_aoti_release). The model's code
 * is dlopen'ed with RTLD_NOW: every aoti_torch_* and Sleef_* symbol it uses must resolve.
 * The first load sets AOTI_RUNTIME_CHECK_INPUTS=1 unless the environment sets it (the
 * model's own input checks; see tensor_aoti_run).
 * Errors: NULL_POINTER, IO (unreadable file, not a zip, dlopen failed), INVALID_ARGUMENT
 * (no CPU model in the package, not an AOTInductor model, its container failed).
 */
tensor_status_t tensor_aoti_load(const char *path, tensor_aoti_model_t **out);

/** Number of (flattened) inputs the model takes; 0 for NULL. */
size_t tensor_aoti_num_inputs(const tensor_aoti_model_t *m);

/** Number of (flattened) outputs the model returns; 0 for NULL. */
size_t tensor_aoti_num_outputs(const tensor_aoti_model_t *m);

/**
 * Runs the model on `inputs[0..n_inputs]` (borrowed: the model reads them through aliases
 * of its own) and writes `n_outputs` owned tensors to `outputs` (release each). Inputs are
 * checked first against what the model was compiled for: the count, CPU memory, and, for
 * a .pt2 (from the wrapper source it ships), the dtype, the rank, every static size, the
 * bounds of every dynamic size and every stride; the model's own checks run too. A
 * mismatch is a status, never a wrong result or an out-of-bounds read.
 * Errors: NULL_POINTER, INVALID_ARGUMENT (n_inputs / n_outputs differ from the model's;
 * the model failed: the message carries its text and the failing shim call's reason),
 * DEVICE, DTYPE, SHAPE (sizes, rank or strides the model was not compiled for).
 */
tensor_status_t tensor_aoti_run(tensor_aoti_model_t *m,
                                tensor_t *const *inputs,
                                size_t n_inputs,
                                tensor_t **outputs,
                                size_t n_outputs);

/** Releases a model (container, weights, workspace). NULL is a no-op. */
void tensor_aoti_release(tensor_aoti_model_t *m);

/**
 * This thread's message for its last failed tensor_aoti_* call (or aoti_torch_* shim
 * call), e.g. "tensor_aoti_run: input 0 has sizes [7, 16]: size 7 at dim 0 does not fit
 * the compiled shape [4, 16] ..."; "" if none yet. Borrowed: valid until this thread's
 * next failure.
 */
const char *tensor_aoti_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif /* LIBTENSOR_TENSOR_AOTI_H */
