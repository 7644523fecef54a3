// libtensor <-> OpenCV, zero-copy both ways (header-only; include it only where OpenCV is
// used, after or instead of tensor.hpp; link -lopencv_core).
//
//   cv::Mat img = cv::imread("frame.png");                  // CV_8UC3, HWC
//   tensor::Tensor t = tensor::from_mat(img);               // [H, W, 3] uint8, same pixels
//   cv::Mat back = tensor::to_mat(t.slice(0, 10, 20));      // rows 10..19, same pixels
//
// from_mat(m): sizes {rows, cols} for one channel, {rows, cols, channels} otherwise (an
// n-dim Mat gives its n sizes, then channels); strides from m.step (so ROIs with row
// padding work); dtype from m.depth(). The tensor holds a reference on the Mat's buffer
// (OpenCV's refcount, through a heap copy of the Mat header) and drops it when its last
// reference dies, on whichever thread that is. A Mat over user memory (no refcount,
// m.u == nullptr) cannot be kept alive: the tensor then borrows it, as the Mat does.
//
// to_mat(t): zero-copy for a 2-D tensor with contiguous rows, or a 3-D tensor [H, W, C]
// with C in 1..4 channels last and contiguous pixels (any row stride: a row slice or ROI is
// fine). The Mat holds a reference on the tensor through OpenCV's UMatData/MatAllocator
// hook, so the tensor's memory lives as long as any Mat sharing it (a Mat over a temporary
// `t.contiguous()` never dangles). Refused (tensor::Error, nothing made):
//  - a read-only tensor (every .safetensors tensor, a read-only mapping such as load_npy's
//    default): OpenCV has no read-only Mat, and an in-place call (cv::GaussianBlur(m, m,
//    ...)) would write to it and crash on the read-only pages. TENSOR_ERR_READ_ONLY. Opt in
//    with to_mat(t, tensor::read_only), which returns a ReadOnlyMat (not a cv::Mat: see
//    below), or take a writable copy with to_mat(t.clone());
//  - rows or cols past INT_MAX (OpenCV's sizes are int): TENSOR_ERR_OVERFLOW, naming the
//    sizes. Steps are size_t in OpenCV and are kept exactly;
//  - a 3-D tensor whose last dim is not 1..4: it is far more likely CHW planes ([3, H, W])
//    than 5+ channels, so it is refused rather than read as a Mat of W channels.
//    TENSOR_ERR_INVALID_ARGUMENT. For CHW use to_mats_chw(t) (one Mat per plane); for
//    genuinely many channels, to_mat(t.view({H, W * C})).reshape(C) (still no copy);
//  - other layouts, with a message that says to call contiguous(); dtypes with no OpenCV
//    depth (int64, bool, complex, bfloat16, uint32, uint64) with TENSOR_ERR_DTYPE.
// Such Mats are for CPU use: getUMat() on them is not supported. Do not storage_resize()
// a storage while a Mat refers to it (the Mat keeps the old data pointer, as every view
// of it would).
//
// to_mat(t, tensor::read_only) accepts any tensor to_mat accepts, read-only or not, and
// returns a ReadOnlyMat: `const cv::Mat` would not protect anything, since OpenCV's
// OutputArray converts from a const Mat (cv::GaussianBlur(m, m, ...) compiles with a
// const m). A ReadOnlyMat passes as the source (cv::InputArray) of any OpenCV call, and
// does not convert to a destination (OutputArray, InputOutputArray) or to a cv::Mat, so an
// in-place call on it does not compile. mat() gives the const Mat for reading (rows,
// at<T>() const, ...); a copy of it is writable in type only: writing through one is the
// crash this guards against. clone() the Mat for a writable copy. from_mat(ro) gives a
// read-only tensor back.
//
// Errors are reported as everywhere in tensor.hpp (tensor::Error, or the error handler
// with -fno-exceptions).
#ifndef LIBTENSOR_TENSOR_OPENCV_HPP
#define LIBTENSOR_TENSOR_OPENCV_HPP

#include <opencv2/core.hpp>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "tensor.hpp"

namespace tensor {

/// The dtype of an OpenCV depth (CV_8U ... CV_16F); fails with TENSOR_ERR_DTYPE for a depth
/// with no dtype.
inline Dtype dtype_from_cv_depth(int depth) {
  switch (depth) {
    case CV_8U: return kUInt8;
    case CV_8S: return kInt8;
    case CV_16U: return kUInt16;
    case CV_16S: return kInt16;
    case CV_32S: return kInt32;
    case CV_32F: return kFloat32;
    case CV_64F: return kFloat64;
    case CV_16F: return kFloat16;
    default:
      detail::fail(TENSOR_ERR_DTYPE, "from_mat: OpenCV depth " + std::to_string(depth) + " has no libtensor dtype");
  }
}

/// The OpenCV depth of a dtype, or -1 when there is none.
inline int cv_depth_from_dtype(Dtype d) noexcept {
  switch (d) {
    case Dtype::UInt8: return CV_8U;
    case Dtype::Int8: return CV_8S;
    case Dtype::UInt16: return CV_16U;
    case Dtype::Int16: return CV_16S;
    case Dtype::Int32: return CV_32S;
    case Dtype::Float32: return CV_32F;
    case Dtype::Float64: return CV_64F;
    case Dtype::Float16: return CV_16F;
    default: return -1;
  }
}

namespace detail {
// The deleter of from_mat: drops the tensor's reference on the Mat's buffer.
inline void release_cv_mat(void*, void* ctx) noexcept { delete static_cast<cv::Mat*>(ctx); }

// The allocator of to_mat's UMatData: its deallocate() (called by OpenCV when the last Mat
// sharing the data is released) drops the Mat's reference on the tensor. It never
// allocates itself: a Mat that reallocates (create()) uses OpenCV's own allocator.
class TensorMatAllocator : public cv::MatAllocator {
 public:
  cv::UMatData* allocate(int dims, const int* sizes, int type, void* data, size_t* step, cv::AccessFlag flags,
                         cv::UMatUsageFlags usage) const override {
    return cv::Mat::getStdAllocator()->allocate(dims, sizes, type, data, step, flags, usage);
  }
  bool allocate(cv::UMatData* u, cv::AccessFlag flags, cv::UMatUsageFlags usage) const override {
    return cv::Mat::getStdAllocator()->allocate(u, flags, usage);
  }
  void deallocate(cv::UMatData* u) const override {
    if (!u) return;
    tensor_release(static_cast<tensor_t*>(u->handle));
    delete u;
  }
};

inline const cv::MatAllocator* tensor_mat_allocator() {
  static const TensorMatAllocator a;
  return &a;
}
}  // namespace detail

/// A tensor over `m`'s pixels (no copy); see the top of this file.
inline Tensor from_mat(const cv::Mat& m) {
  if (m.empty() || m.data == nullptr) detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "from_mat: the Mat is empty");
  Dtype dtype = dtype_from_cv_depth(m.depth());
  std::vector<int64_t> sizes, steps;
  for (int i = 0; i < m.dims; i++) {
    sizes.push_back(m.size[i]);
    steps.push_back(static_cast<int64_t>(m.step[i]));
  }
  if (m.channels() > 1) {
    sizes.push_back(m.channels());
    steps.push_back(static_cast<int64_t>(m.elemSize1()));
  }
  cv::Mat* keep = m.u ? new cv::Mat(m) : nullptr;  // +1 on OpenCV's refcount
  tensor_t* out = nullptr;
  tensor_status_t s = tensor_from_blob_bytes(m.data, sizes.data(), steps.data(), static_cast<int64_t>(sizes.size()),
                                             to_c(dtype), Device().to_c(),
                                             keep ? &detail::release_cv_mat : nullptr, keep, &out);
  if (s != TENSOR_OK) {
    delete keep;  // not taken: the library did not wrap the memory
    detail::check(s);
  }
  return Tensor::adopt(out);
}

/// A Mat over read-only memory, made by to_mat(t, tensor::read_only): passes as the source
/// of OpenCV calls, cannot be their destination; see the top of this file.
class ReadOnlyMat {
 public:
  /// An empty one.
  ReadOnlyMat() = default;
  /// The Mat, for reading: do not write through it or through a copy of it.
  const cv::Mat& mat() const noexcept { return m_; }
  /// As the source of an OpenCV call: cv::mean(ro), cv::cvtColor(ro, out, ...).
  operator cv::_InputArray() const { return cv::_InputArray(m_); }
  int rows() const noexcept { return m_.rows; }
  int cols() const noexcept { return m_.cols; }
  int type() const noexcept { return m_.type(); }
  int channels() const noexcept { return m_.channels(); }
  bool empty() const noexcept { return m_.empty(); }
  const uchar* data() const noexcept { return m_.data; }
  /// A writable deep copy (cv::Mat::clone()).
  cv::Mat clone() const { return m_.clone(); }

 private:
  explicit ReadOnlyMat(cv::Mat m) noexcept : m_(std::move(m)) {}
  friend ReadOnlyMat to_mat(const Tensor& t, read_only_t);
  cv::Mat m_;
};

namespace detail {
// to_mat without the read-only refusal: the checks and the Mat, named `fn` in messages.
inline cv::Mat mat_over(const Tensor& t, const char* fn) {
  const std::string f(fn);
  const char* fix = "; call contiguous() first (to_mat(t.contiguous()) is safe: the Mat keeps the copy alive)";
  const int64_t nd = t.dim();
  if (nd != 2 && nd != 3)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 f + ": a Mat is made from a 2-D tensor or a 3-D one with the channels last, not " +
                     std::to_string(nd) + "-D" + fix);
  int depth = cv_depth_from_dtype(t.dtype());
  if (depth < 0)
    detail::fail(TENSOR_ERR_DTYPE,
                 f + ": dtype " + name(t.dtype()) + " has no OpenCV depth; convert it first with to(...)");
  if (!t.device().is_cpu()) detail::fail(TENSOR_ERR_DEVICE, f + ": the tensor's memory is not on the CPU");
  const int64_t rows = t.size(0), cols = t.size(1), ch = nd == 3 ? t.size(2) : 1;
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(cols) +
                            (nd == 3 ? ", " + std::to_string(ch) : std::string()) + "]";
  if (rows <= 0 || cols <= 0 || ch <= 0)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, f + ": the tensor " + shape + " has no elements");
  if (rows > INT_MAX || cols > INT_MAX)
    detail::fail(TENSOR_ERR_OVERFLOW, f + ": sizes " + shape + " do not fit a Mat (rows and cols at most " +
                                          std::to_string(INT_MAX) + ")");
  if (ch > 4)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 f + ": a 3-D tensor " + shape + " is read as [H, W, C] with 1..4 channels, not " +
                     std::to_string(ch) + "; for CHW planes use to_mats_chw(t) or to_mat(t.select(0, c)), for " +
                     std::to_string(ch) + " channels to_mat(t.view({H, W * C})).reshape(C)");
  // The library keeps every element's byte offset within the storage (at most PTRDIFF_MAX
  // bytes), so these products of sizes and strides do not overflow.
  const int64_t isz = static_cast<int64_t>(t.itemsize());
  bool pixels_ok = (ch == 1 || t.stride(nd - 1) == 1) && (cols == 1 || t.stride(1) == ch);
  int64_t row_bytes = rows == 1 ? cols * ch * isz : t.stride(0) * isz;
  if (!pixels_ok || row_bytes < cols * ch * isz)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 f + ": OpenCV needs contiguous pixels (channels last) and rows at least a row apart; strides are " +
                     std::to_string(t.stride(0)) + ", " + std::to_string(t.stride(1)) +
                     (nd == 3 ? ", " + std::to_string(t.stride(2)) : std::string()) + fix);
  uchar* data = static_cast<uchar*>(t.data_ptr());
  cv::Mat m(static_cast<int>(rows), static_cast<int>(cols), CV_MAKETYPE(depth, static_cast<int>(ch)), data,
            static_cast<size_t>(row_bytes));
  cv::UMatData* u = new cv::UMatData(detail::tensor_mat_allocator());
  u->data = u->origdata = data;
  u->size = static_cast<size_t>((rows - 1) * row_bytes + cols * ch * isz);
  u->flags = cv::UMatData::USER_ALLOCATED;
  u->handle = tensor_retain(t.get());  // the Mat's reference on the tensor
  u->refcount = 1;
  m.u = u;
  return m;
}

// The planes of a [C, H, W] tensor, each through `each(plane)`.
template <class M, class F>
std::vector<M> planes(const Tensor& t, const char* fn, F&& each) {
  if (!t.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, std::string(fn) + ": undefined tensor");
  if (t.dim() != 3)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 std::string(fn) + ": a [C, H, W] tensor is 3-D, not " + std::to_string(t.dim()) + "-D");
  if (t.size(0) <= 0)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, std::string(fn) + ": the tensor has no planes (C = 0)");
  std::vector<M> out;
  out.reserve(static_cast<size_t>(t.size(0)));
  for (int64_t c = 0; c < t.size(0); c++) out.push_back(each(t.select(0, c)));
  return out;
}
}  // namespace detail

namespace detail {
inline void refuse_read_only(const Tensor& t, const char* fn) {
  if (!t.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, std::string(fn) + ": undefined tensor");
  if (t.is_read_only())
    detail::fail(TENSOR_ERR_READ_ONLY,
                 std::string(fn) + ": the tensor is read-only (a .safetensors tensor, a read-only mapping) and "
                 "OpenCV would write to it (an in-place call crashes on read-only pages); pass tensor::read_only "
                 "for read-only Mats (" + fn + "(t, tensor::read_only)), or clone() the tensor for writable ones");
}
}  // namespace detail

/// A Mat over `t`'s elements (no copy) that keeps `t`'s memory alive; refuses a read-only
/// tensor (TENSOR_ERR_READ_ONLY); see the top of this file.
inline cv::Mat to_mat(const Tensor& t) {
  detail::refuse_read_only(t, "to_mat");
  return detail::mat_over(t, "to_mat");
}

/// A read-only Mat over `t`'s elements (no copy, `t` read-only or not) that keeps `t`'s
/// memory alive: the source of OpenCV calls, never their destination; see the top of
/// this file.
inline ReadOnlyMat to_mat(const Tensor& t, read_only_t) {
  if (!t.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, "to_mat: undefined tensor");
  return ReadOnlyMat(detail::mat_over(t, "to_mat"));
}

/// One single-channel Mat per plane of a [C, H, W] tensor (a network's CHW output), each
/// over the tensor's memory (no copy) and keeping it alive, as to_mat(t.select(0, c)).
/// Each plane needs contiguous rows (a contiguous CHW tensor has them; a permuted HWC view
/// does not: call contiguous()). Refuses a read-only tensor, as to_mat.
inline std::vector<cv::Mat> to_mats_chw(const Tensor& t) {
  detail::refuse_read_only(t, "to_mats_chw");
  return detail::planes<cv::Mat>(t, "to_mats_chw", [](const Tensor& p) { return to_mat(p); });
}

/// to_mats_chw for a read-only tensor (or to read one only): one ReadOnlyMat per plane.
inline std::vector<ReadOnlyMat> to_mats_chw(const Tensor& t, read_only_t) {
  return detail::planes<ReadOnlyMat>(t, "to_mats_chw", [](const Tensor& p) { return to_mat(p, read_only); });
}

/// A read-only tensor over a ReadOnlyMat's pixels (no copy): from_mat(ro.mat()) with its
/// storage marked read-only, so that writes through it fail with TENSOR_ERR_READ_ONLY.
inline Tensor from_mat(const ReadOnlyMat& m) {
  Tensor t = from_mat(m.mat());
  t.storage().mark_read_only();
  return t;
}

}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_OPENCV_HPP
