/*
 * libtensor_aoti: runs CPU models compiled by PyTorch's AOTInductor
 * (torch._inductor.aoti_compile_and_package) on libtensor, with no libtorch.
 *
 * Link with -ltensor_aoti -ltensor. Conventions as tensor.h: fallible calls return
 * tensor_status_t and leave out-parameters untouched on failure; tensor_aoti_last_error()
 * then describes the failure (thread-local; libtensor's own tensor_last_error() is not
 * written by these calls). Handles returned through out-parameters are owned.
 *
 * Loading a package runs its code, as loading any shared library does: load only packages
 * you would run. What the loader checks protects against broken packages and careless
 * callers, not against a package written to do harm.
 *
 * Threads: any thread may call any function. A model holds a lock: a tensor_aoti_run on a
 * model another thread is running waits for that run to return, and tensor_aoti_release
 * waits for a running call to return (no call may start on a model once its release has
 * begun). Loads may run concurrently; nothing here reads or changes the environment
 * except TMPDIR and TENSOR_AOTI_QUIET, read by tensor_aoti_load.
 *
 * The shim the models call is exported under a private prefix (ltai_*, not aoti_*): the
 * loader renames a model's aoti_* imports to it, so libtorch and its models in the same
 * process neither bind to this shim nor lend theirs to our models.
 *
 * Hand-written (a test, aoti/tests/host.rs, checks it against the library's exports).
 */

#ifndef LIBTENSOR_TENSOR_AOTI_H
#define LIBTENSOR_TENSOR_AOTI_H

#include <stdbool.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque handle: one loaded model (its code, weights and runtime container). */
typedef struct tensor_aoti_model_t tensor_aoti_model_t;

/**
 * Loads a `.pt2` package (its CPU model: the `.wrapper.so` under `<name>/data/aotinductor/<model>/`)
 * or a model `.so` (with its wrapper `.cpp`, `_metadata.json` and extern-kernel `.json`
 * beside it, as a package holds them) in `*out` (owned; release with tensor_aoti_release).
 * Before any of the model's code runs: the package is checked as a whole (every entry name
 * inside the package, no symbolic link, no name twice, the metadata parses; the model .so
 * stored, its wrapper source stored or deflated, no entry read past what the archive
 * holds), the model .so's dynamic symbols are read and the load is refused, in one message,
 * if it imports anything this build cannot provide (each aoti_torch_* function it lacks
 * with its op, e.g. "aoti_torch_cpu_topk (aten.topk)"; a freezing=True package's oneDNN
 * functions and layout; ops that need libtorch's proxy executor, named from the package's
 * extern-kernel JSON, e.g. torchvision::nms; libraries it needs that do not load;
 * Sleef_*, GOMP_* and other symbols nothing in the process defines), and its constants
 * table (from the wrapper source) is checked against the weights the .so carries. The
 * code is then written to an anonymous file of this process (memfd_create; no file in
 * TMPDIR another user could read or pre-create, nothing left behind, a noexec /tmp does
 * not matter) and dlopen'ed with RTLD_NOW. A package compiled without vectorization
 * (AOTI_CPU_ISA INVALID_VEC_ISA) gets a one-line note on stderr, and so does one whose
 * inputs cannot be checked (see tensor_aoti_checks_inputs), unless TENSOR_AOTI_QUIET=1.
 * Errors: NULL_POINTER, IO (unreadable or truncated file, not a zip, dlopen failed),
 * INVALID_ARGUMENT (no CPU model, a malformed package naming the entry, an import this
 * build cannot provide, constants that do not fit the weights, not an AOTInductor model,
 * its container failed).
 */
tensor_status_t tensor_aoti_load(const char *path, tensor_aoti_model_t **out);

/** Number of (flattened) inputs the model takes; 0 for NULL. */
size_t tensor_aoti_num_inputs(const tensor_aoti_model_t *m);

/** Number of (flattened) outputs the model returns; 0 for NULL. */
size_t tensor_aoti_num_outputs(const tensor_aoti_model_t *m);

/**
 * The package metadata's AOTI_CPU_ISA: the vector ISA Inductor compiled the model's
 * kernels for, e.g. "AVX2", "AVX512", or "INVALID_VEC_ISA" (scalar kernels: Inductor's ISA
 * probe failed where the package was compiled); "" when the package does not say, and for
 * NULL. Borrowed: valid while the model is.
 */
const char *tensor_aoti_cpu_isa(const tensor_aoti_model_t *m);

/**
 * Whether tensor_aoti_run can check this model's inputs, i.e. whether it runs at all: the
 * checks come from the wrapper source (HASH.wrapper.cpp) the package ships beside the
 * model .so. False when it has none, or one whose checks do not parse: then every run is
 * refused (INVALID_ARGUMENT). False for NULL.
 */
bool tensor_aoti_checks_inputs(const tensor_aoti_model_t *m);

/**
 * Runs the model on `inputs[0..n_inputs]` (borrowed: the model reads them through aliases
 * of its own) and writes `n_outputs` owned tensors to `outputs` (release each). Inputs are
 * checked first against what the model was compiled for (its wrapper source): the count,
 * no NULL entry, CPU memory, the dtype, the rank, every static size, the bounds of every
 * dynamic size, the sizes shared between inputs (two inputs compiled with one dynamic
 * batch dim must have equal batches) and every stride. An input the model writes (an
 * in-place op on it) must be writable and share no memory with another input; after the
 * run its version (tensor_version) is one higher. The same tensor may be passed as two
 * inputs the model does not write. A mismatch is a status, never a wrong result or an
 * out-of-bounds access, whatever AOTI_RUNTIME_CHECK_INPUTS (the model's own checks) says.
 * A second call on the same model from another thread waits for this one.
 * Errors: NULL_POINTER (m, inputs, outputs, an input), INVALID_ARGUMENT (n_inputs /
 * n_outputs differ from the model's; inputs that cannot be checked; the model failed: the
 * message carries its text and the failing shim call's reason), DEVICE, DTYPE, SHAPE
 * (sizes, rank, shared sizes or strides the model was not compiled for), READ_ONLY (an
 * input the model writes is read-only: a read-only mapping or DLPack import), OVERLAP (an
 * input the model writes shares memory with another input).
 */
tensor_status_t tensor_aoti_run(tensor_aoti_model_t *m,
                                tensor_t *const *inputs,
                                size_t n_inputs,
                                tensor_t **outputs,
                                size_t n_outputs);

/**
 * Releases a model (container, weights, workspace, code), after waiting for a run another
 * thread has going on it. NULL is a no-op.
 */
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
