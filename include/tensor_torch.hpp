// libtensor <-> libtorch (at::Tensor), zero-copy both ways through DLPack (header-only;
// include it only where libtorch is used, after or instead of tensor.hpp). The header is
// C++17 and needs C++ exceptions (libtorch throws); libtorch's own headers set the standard:
// torch 2.15's ATen.h refuses anything before C++20 (#error). With the torch wheel, whose
// headers and libraries are libtorch's C++ distribution, and TORCH its directory
// (python -c 'import os, torch; print(os.path.dirname(torch.__file__))'), ABI the value of
// python -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))':
//
//   c++ -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=$ABI -isystem $TORCH/include
//       -isystem $TORCH/include/torch/csrc/api/include -I<libtensor>/include app.cpp
//       -ltensor -L$TORCH/lib -Wl,-rpath,$TORCH/lib -ltorch -ltorch_cpu -lc10
//
// It needs only ATen's headers: it includes <ATen/DLConvertor.h> and the DLPack structs of
// the wheel's <ATen/dlpack.h>, not <dlpack/dlpack.h> (which the wheel does not ship).
// tensor.h only forward-declares the DLPack structs, so both headers go in one file in
// either order.
//
//   tensor::Tensor img = tensor::from_mat(cv::imread("frame.png"));   // tensor_opencv.hpp
//   at::Tensor x = tensor::to_torch(img).permute({2, 0, 1});          // same pixels
//   tensor::Tensor y = tensor::from_torch(model.forward({x}).toTensor()); // same memory
//
// to_torch(t): an at::Tensor over t's elements (no copy): the same data pointer, sizes,
// strides (of a dim of size 1, PyTorch's DLPack normalizes the stride to 1), dtype (every
// libtensor dtype has a c10::ScalarType with the same code) and device. Its storage starts
// at t's first element (the view's storage_offset folds into the data pointer, as with
// torch.from_dlpack), and holds a reference that keeps t's memory alive until libtorch frees
// it, on whichever thread that is; t itself may die first. Until then storage_resize of
// t's storage fails (NOT_RESIZABLE): the bytes libtorch points at never move.
//
// Read-only tensors (every .safetensors tensor, load_npy's default read-only mapping, a
// storage marked read-only): libtorch has no read-only tensor and ignores DLPack's
// read-only flag, so an in-place op (x.add_(1), an out= call, an optimizer step) would
// write to the memory: a crash on read-only pages. to_torch therefore takes a
// tensor::TorchReadOnly, by name:
//   to_torch(t)                                  Refuse (the default): a read-only t is
//                                                refused with TENSOR_ERR_READ_ONLY;
//   to_torch(t, tensor::TorchReadOnly::Copy)     a read-only t is copied (t.clone(), a
//                                                writable tensor libtorch then shares);
//                                                a writable t is still shared, no copy;
//   to_torch(t, tensor::TorchReadOnly::Share)    shared, read-only or not: the caller
//   to_torch(t, tensor::read_only)               promises that nothing writes through the
//                                                at::Tensor or any view of it (inference
//                                                on mapped weights). tensor::read_only is
//                                                the tag to_mat takes for the same opt-in.
//
// from_torch(x): a tensor over x's elements (no copy): the same data pointer, sizes,
// strides, dtype and device; writable. Its storage holds a reference on x's storage (an
// at::Tensor kept by the DLPack export) that it drops when its last reference dies, on
// whichever thread that is; x itself may die first. Autograd does not see libtensor's
// writes (as with any DLPack consumer), so do not write to a tensor autograd saved.
// Refused (tensor::Error, nothing made):
//  - an undefined at::Tensor (TENSOR_ERR_NULL_POINTER);
//  - a sparse, mkldnn or other non-strided tensor, a tensor with the conjugate or negative
//    bit set (its memory is not its values: x.resolve_conj() / x.resolve_neg() first):
//    TENSOR_ERR_INVALID_ARGUMENT;
//  - a dtype DLPack or libtensor has no code for (quantized types, complex32, bit types):
//    TENSOR_ERR_DTYPE, naming torch's dtype;
//  - a device libtorch does not export (meta): TENSOR_ERR_DEVICE.
// to_torch refuses a device libtorch has no type for with TENSOR_ERR_DEVICE.
//
// Either way the memory is shared: a write on one side (an in-place torch op, copy_, a
// libtensor set or fill_) is seen by the other. An error libtorch raises (c10::Error)
// reaches the caller as tensor::Error, with torch's message, as every failure here (or the
// error handler of tensor.hpp, when tensor::Error is turned off by LIBTENSOR_NO_EXCEPTIONS).
//
// libtorch 2.9 and newer exchange DLPack 1.x managed tensors (at::toDLPackVersioned,
// at::fromDLPackVersioned); with an older libtorch (or LIBTENSOR_TORCH_DLPACK_VERSIONED
// defined to 0) the legacy DLManagedTensor is used, with the same behaviour (read-only
// tensors are handled above, before DLPack). Both routes are tested against torch 2.15.
#ifndef LIBTENSOR_TENSOR_TORCH_HPP
#define LIBTENSOR_TENSOR_TORCH_HPP

#include <ATen/DLConvertor.h>
#include <ATen/dlpack.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tensor.hpp"

#if !defined(__cpp_exceptions)
#error "tensor_torch.hpp needs C++ exceptions: libtorch reports its errors by throwing c10::Error"
#endif

#ifndef LIBTENSOR_TORCH_DLPACK_VERSIONED
#if defined(__has_include)
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#elif __has_include(<torch/version.h>)
#include <torch/version.h>
#endif
#endif
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9))
#define LIBTENSOR_TORCH_DLPACK_VERSIONED 1
#else
#define LIBTENSOR_TORCH_DLPACK_VERSIONED 0
#endif
#endif

namespace tensor {

/// What to_torch does with a read-only tensor, which libtorch cannot represent (it has no
/// read-only tensors and ignores DLPack's read-only flag); see the top of this file.
enum class TorchReadOnly : int32_t {
  Refuse = 0,  ///< throw tensor::Error (TENSOR_ERR_READ_ONLY): the default
  Copy = 1,    ///< give libtorch a writable copy of a read-only tensor (writable ones are shared)
  Share = 2,   ///< share it anyway: nothing may write through the at::Tensor or its views
};

namespace detail {
// Runs f() (a libtorch call); a c10::Error it throws is reported as `status`, its message
// after `what`.
template <class F>
auto torch_call(tensor_status_t status, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    fail(status, what + ": " + e.what_without_backtrace());
  }
}

// The at::Tensor over a DLPack export of `t`: libtorch's deleter (a copy of `keep`, which
// ends with the last copy) releases the export, exactly once, whether libtorch took it or
// threw.
inline at::Tensor torch_over(const Tensor& t) {
  DLManagedTensorVersioned* m = nullptr;
  check(tensor_to_dlpack(t.get(), &m));
  std::shared_ptr<DLManagedTensorVersioned> keep(m, [](DLManagedTensorVersioned* p) {
    if (p->deleter) p->deleter(p);
  });
  DLTensor& dl = m->dl_tensor;
  // libtorch's fromDLPack reads `data` as the first element and ignores byte_offset.
  if (dl.byte_offset != 0) {
    dl.data = static_cast<char*>(dl.data) + dl.byte_offset;
    dl.byte_offset = 0;
  }
  torch_call(TENSOR_ERR_DTYPE, std::string("to_torch: libtorch has no dtype for ") + name(t.dtype()),
             [&] { return at::toScalarType(dl.dtype); });
  std::function<void(void*)> release = [keep](void*) mutable { keep.reset(); };
  const tensor_status_t refused = dl.device.device_type == kDLCPU ? TENSOR_ERR_INVALID_ARGUMENT : TENSOR_ERR_DEVICE;
  return torch_call(refused, "to_torch: libtorch refused the tensor", [&] {
#if LIBTENSOR_TORCH_DLPACK_VERSIONED
    return at::fromDLPackVersioned(m, std::move(release));
#else
    DLManagedTensor legacy{};  // read for the call only: `release` is the deleter
    legacy.dl_tensor = dl;
    return at::fromDLPack(&legacy, std::move(release));
#endif
  });
}
}  // namespace detail

/// An at::Tensor over `t`'s elements (no copy) that keeps `t`'s memory alive; a read-only
/// `t` is handled as `ro` says (by default refused with TENSOR_ERR_READ_ONLY); see the top
/// of this file.
inline at::Tensor to_torch(const Tensor& t, TorchReadOnly ro = TorchReadOnly::Refuse) {
  if (!t.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, "to_torch: undefined tensor");
  if (t.is_read_only()) {
    if (ro == TorchReadOnly::Copy) return detail::torch_over(t.clone());
    if (ro != TorchReadOnly::Share)
      detail::fail(TENSOR_ERR_READ_ONLY,
                   "to_torch: the tensor is read-only (a .safetensors tensor, a read-only mapping) and libtorch "
                   "ignores DLPack's read-only flag: an in-place op on the at::Tensor would write to it (a crash "
                   "on read-only pages); pass tensor::TorchReadOnly::Copy for a writable copy, or "
                   "tensor::TorchReadOnly::Share (tensor::read_only) if nothing writes through the at::Tensor");
  }
  return detail::torch_over(t);
}

/// to_torch(t, TorchReadOnly::Share): the read-only opt-in by the tag to_mat takes.
inline at::Tensor to_torch(const Tensor& t, read_only_t) { return to_torch(t, TorchReadOnly::Share); }

/// A tensor over `x`'s elements (no copy) that keeps `x`'s memory alive; see the top of
/// this file.
inline Tensor from_torch(const at::Tensor& x) {
  if (!x.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, "from_torch: undefined at::Tensor");
  if (x.layout() != at::kStrided)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "from_torch: the at::Tensor's layout is " + c10::str(x.layout()) +
                                                  ", not strided; convert it first (to_dense())");
  if (x.is_conj() || x.is_neg())
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 std::string("from_torch: the at::Tensor has its ") + (x.is_conj() ? "conjugate" : "negative") +
                     " bit set, so its memory does not hold its values; call " +
                     (x.is_conj() ? "resolve_conj()" : "resolve_neg()") + " first (a copy)");
  const std::string torch_dtype = c10::toString(x.scalar_type());
  detail::torch_call(TENSOR_ERR_DTYPE, "from_torch: torch's dtype " + torch_dtype + " has no DLPack type",
                     [&] { return at::getDLDataType(x); });
  // A detached alias: the same storage, without recording the export in autograd's graph.
  const at::Tensor d = x.detach();
  const tensor_status_t refused = x.is_cpu() ? TENSOR_ERR_INVALID_ARGUMENT : TENSOR_ERR_DEVICE;
  tensor_t* out = nullptr;
#if LIBTENSOR_TORCH_DLPACK_VERSIONED
  DLManagedTensorVersioned* m = detail::torch_call(refused, "from_torch: libtorch cannot export the tensor",
                                                   [&] { return at::toDLPackVersioned(d); });
  tensor_status_t s = tensor_from_dlpack(m, &out);
#else
  DLManagedTensor* m =
      detail::torch_call(refused, "from_torch: libtorch cannot export the tensor", [&] { return at::toDLPack(d); });
  tensor_status_t s = tensor_from_dlpack_unversioned(m, &out);
#endif
  if (s != TENSOR_OK) {
    std::string why = tensor_last_error();
    if (m->deleter) m->deleter(m);  // not taken: the export is still ours
    detail::fail(s, "from_torch (torch dtype " + torch_dtype + "): " + why);
  }
  return Tensor::adopt(out);
}

}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_TORCH_HPP
