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
// to_mat(t): zero-copy for a 2-D tensor with contiguous rows, or a 3-D tensor with the
// channels last and contiguous pixels (any row stride: a row slice or ROI is fine). The
// Mat holds a reference on the tensor through OpenCV's UMatData/MatAllocator hook, so the
// tensor's memory lives as long as any Mat sharing it (a Mat over a temporary
// `t.contiguous()` never dangles). Other layouts are refused with a message that says to
// call contiguous(); dtypes with no OpenCV depth (int64, bool, complex, bfloat16, uint32,
// uint64) are refused with TENSOR_ERR_DTYPE. Such Mats are for CPU use: getUMat() on them
// is not supported. OpenCV has no read-only Mats: a Mat over a read-only storage can still
// be written through; treat it as const. Do not storage_resize() a storage while a Mat
// refers to it (the Mat keeps the old data pointer, as every view of it would).
//
// Errors are reported as everywhere in tensor.hpp (tensor::Error, or the error handler
// with -fno-exceptions).
#ifndef LIBTENSOR_TENSOR_OPENCV_HPP
#define LIBTENSOR_TENSOR_OPENCV_HPP

#include <opencv2/core.hpp>
#include <string>

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
                                             to_c(dtype), tensor_device_t{1, 0},
                                             keep ? &detail::release_cv_mat : nullptr, keep, &out);
  if (s != TENSOR_OK) {
    delete keep;  // not taken: the library did not wrap the memory
    detail::check(s);
  }
  return Tensor::adopt(out);
}

/// A Mat over `t`'s elements (no copy) that keeps `t`'s memory alive; see the top of this
/// file.
inline cv::Mat to_mat(const Tensor& t) {
  const char* fix = "; call contiguous() first (to_mat(t.contiguous()) is safe: the Mat keeps the copy alive)";
  if (!t.defined()) detail::fail(TENSOR_ERR_NULL_POINTER, "to_mat: undefined tensor");
  const int64_t nd = t.dim();
  if (nd != 2 && nd != 3)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 "to_mat: a Mat is made from a 2-D tensor or a 3-D one with the channels last, not " +
                     std::to_string(nd) + "-D" + fix);
  int depth = cv_depth_from_dtype(t.dtype());
  if (depth < 0)
    detail::fail(TENSOR_ERR_DTYPE, std::string("to_mat: dtype ") + name(t.dtype()) +
                                       " has no OpenCV depth; convert it first with to(...)");
  if (t.device().device_type != 1)
    detail::fail(TENSOR_ERR_DEVICE, "to_mat: the tensor's memory is not on the CPU");
  const int64_t rows = t.size(0), cols = t.size(1), ch = nd == 3 ? t.size(2) : 1;
  if (rows <= 0 || cols <= 0 || ch <= 0)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "to_mat: the tensor has no elements");
  if (ch > CV_CN_MAX)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "to_mat: " + std::to_string(ch) + " channels; OpenCV allows at most " +
                                                  std::to_string(CV_CN_MAX));
  const int64_t isz = static_cast<int64_t>(t.itemsize());
  bool pixels_ok = (ch == 1 || t.stride(nd - 1) == 1) && (cols == 1 || t.stride(1) == ch);
  int64_t row_bytes = rows == 1 ? cols * ch * isz : t.stride(0) * isz;
  if (!pixels_ok || row_bytes < cols * ch * isz)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT,
                 "to_mat: OpenCV needs contiguous pixels (channels last) and rows at least a row apart; strides are " +
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

}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_OPENCV_HPP
