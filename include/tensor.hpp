// libtensor C++ layer: a header-only RAII wrapper over the C API of tensor.h, shaped like
// at::Tensor. It adds no state: a tensor::Tensor is exactly one tensor_t* (one strong
// reference), copying retains, destruction releases.
//
//   tensor::Tensor img = tensor::Tensor::from_blob(buf, {480, 640, 3}, tensor::kUInt8,
//                                                  [](void* p) { free(p); });
//   tensor::Tensor chw = img.permute({2, 0, 1});          // a view: no copy
//   auto a = img.accessor<uint8_t, 3>();                  // typed, strided element access
//   uint8_t green = a[10][20][1];
//
// Dtypes are the scoped enum tensor::Dtype (tensor::kFloat32, ...): an int does not
// convert to it, so `from_blob(m.data, {r, c}, m.depth())` does not compile (an OpenCV
// depth is not a dtype; see tensor_opencv.hpp). tensor::dtype_of<T>() maps a C++ type to
// its Dtype. Memory formats (tensor::MemoryFormat), map modes (tensor::MapMode) and devices
// (tensor::Device, tensor::DeviceType) are typed the same way; the overloads that still
// take the C API's integers or tensor_device_t are deprecated, so `t.contiguous(2)` warns.
//
// Ownership crosses to the C API explicitly: Tensor::adopt(owned) takes a +1 handle and
// t.into_raw() hands one out ([[nodiscard]]: discarding it leaks). release(), the
// std::unique_ptr name, is a deprecated alias: it releases nothing.
//
// The header needs C++11 (C++17 gives the attributes their standard spelling).
//
// Errors: with C++ exceptions enabled, every failed call throws tensor::Error, whose
// what() is the library's message and status() its status code. Compiled with
// -fno-exceptions (or with LIBTENSOR_NO_EXCEPTIONS defined), a failed call instead calls
// the handler installed with tensor::set_error_handler(status, message) (default: print
// the message to stderr), then std::abort() if the handler returns: a handler that wants
// to recover must not return (longjmp, exit, or a fiber switch). Code that must recover
// from errors without exceptions calls the C API (tensor.h, status codes) on t.get().
#ifndef LIBTENSOR_TENSOR_HPP
#define LIBTENSOR_TENSOR_HPP

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor.h"

#if defined(__cpp_exceptions) && !defined(LIBTENSOR_NO_EXCEPTIONS)
#define LIBTENSOR_EXCEPTIONS 1
#else
#define LIBTENSOR_EXCEPTIONS 0
#endif

// The header needs C++11; these attributes are spelled in the newest form the compiler
// takes: [[nodiscard]] (C++17) or GCC/Clang's warn_unused_result (which, unlike
// [[nodiscard]], a (void) cast does not silence), [[deprecated]] (C++14) or GCC/Clang's.
#if __cplusplus >= 201703L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#define LIBTENSOR_NODISCARD [[nodiscard]]
#elif defined(__GNUC__)
#define LIBTENSOR_NODISCARD __attribute__((warn_unused_result))
#else
#define LIBTENSOR_NODISCARD
#endif
#if __cplusplus >= 201402L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201402L)
#define LIBTENSOR_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__)
#define LIBTENSOR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define LIBTENSOR_DEPRECATED(msg)
#endif

namespace tensor {

/// Element type: a scoped enum (no implicit conversion from or to int) whose values are
/// the C API's dtype codes (c10::ScalarType's).
enum class Dtype : int32_t {
  UInt8 = TENSOR_UINT8,
  Int8 = TENSOR_INT8,
  Int16 = TENSOR_INT16,
  Int32 = TENSOR_INT32,
  Int64 = TENSOR_INT64,
  Float16 = TENSOR_FLOAT16,
  Float32 = TENSOR_FLOAT32,
  Float64 = TENSOR_FLOAT64,
  ComplexFloat = TENSOR_COMPLEX64,
  ComplexDouble = TENSOR_COMPLEX128,
  Bool = TENSOR_BOOL,
  BFloat16 = TENSOR_BFLOAT16,
  UInt16 = TENSOR_UINT16,
  UInt32 = TENSOR_UINT32,
  UInt64 = TENSOR_UINT64,
  Float8_e5m2 = TENSOR_FLOAT8_E5M2,
  Float8_e4m3fn = TENSOR_FLOAT8_E4M3FN,
  Float8_e5m2fnuz = TENSOR_FLOAT8_E5M2FNUZ,
  Float8_e4m3fnuz = TENSOR_FLOAT8_E4M3FNUZ,
  Float8_e8m0fnu = TENSOR_FLOAT8_E8M0FNU,
  Float4_e2m1fn_x2 = TENSOR_FLOAT4_E2M1FN_X2,  ///< bit copies only (as in PyTorch)
};
constexpr Dtype kUInt8 = Dtype::UInt8, kByte = Dtype::UInt8;
constexpr Dtype kInt8 = Dtype::Int8, kChar = Dtype::Int8;
constexpr Dtype kInt16 = Dtype::Int16, kShort = Dtype::Int16;
constexpr Dtype kInt32 = Dtype::Int32, kInt = Dtype::Int32;
constexpr Dtype kInt64 = Dtype::Int64, kLong = Dtype::Int64;
constexpr Dtype kFloat16 = Dtype::Float16, kHalf = Dtype::Float16;
constexpr Dtype kFloat32 = Dtype::Float32, kFloat = Dtype::Float32;
constexpr Dtype kFloat64 = Dtype::Float64, kDouble = Dtype::Float64;
constexpr Dtype kComplexFloat = Dtype::ComplexFloat, kComplexDouble = Dtype::ComplexDouble;
constexpr Dtype kBool = Dtype::Bool, kBFloat16 = Dtype::BFloat16;
constexpr Dtype kUInt16 = Dtype::UInt16, kUInt32 = Dtype::UInt32, kUInt64 = Dtype::UInt64;
constexpr Dtype kFloat8_e5m2 = Dtype::Float8_e5m2, kFloat8_e4m3fn = Dtype::Float8_e4m3fn;
constexpr Dtype kFloat8_e5m2fnuz = Dtype::Float8_e5m2fnuz, kFloat8_e4m3fnuz = Dtype::Float8_e4m3fnuz;
constexpr Dtype kFloat8_e8m0fnu = Dtype::Float8_e8m0fnu, kFloat4_e2m1fn_x2 = Dtype::Float4_e2m1fn_x2;

/// The C API's code of a Dtype, and back (explicit on purpose).
constexpr tensor_dtype_t to_c(Dtype d) noexcept { return static_cast<tensor_dtype_t>(d); }
constexpr Dtype dtype_from_c(tensor_dtype_t d) noexcept { return static_cast<Dtype>(d); }
/// "float32", "uint8", ... (tensor_dtype_name).
inline const char* name(Dtype d) noexcept { return tensor_dtype_name(to_c(d)); }
inline size_t itemsize(Dtype d) noexcept { return tensor_dtype_itemsize(to_c(d)); }
inline std::ostream& operator<<(std::ostream& os, Dtype d) { return os << name(d); }

/// Memory format (c10::MemoryFormat): a scoped enum, so `t.contiguous(2)` does not pick
/// one by accident. Values are the C API's TENSOR_*_FORMAT codes.
enum class MemoryFormat : int32_t {
  Contiguous = TENSOR_CONTIGUOUS_FORMAT,
  Preserve = TENSOR_PRESERVE_FORMAT,
  ChannelsLast = TENSOR_CHANNELS_LAST,
  ChannelsLast3d = TENSOR_CHANNELS_LAST_3D,
};
constexpr tensor_memory_format_t to_c(MemoryFormat f) noexcept { return static_cast<tensor_memory_format_t>(f); }
constexpr MemoryFormat memory_format_from_c(tensor_memory_format_t f) noexcept {
  return static_cast<MemoryFormat>(f);
}

/// How a file region is mapped (Storage::from_file, Tensor::load_npy); the C API's
/// TENSOR_MAP_* codes.
enum class MapMode : int32_t {
  ReadOnly = TENSOR_MAP_READ_ONLY,  ///< read-only pages and a read-only storage
  Shared = TENSOR_MAP_SHARED,       ///< read-write, writes reach the file
  Private = TENSOR_MAP_PRIVATE,     ///< read-write copy-on-write, writes stay in this process
};
constexpr tensor_map_mode_t to_c(MapMode m) noexcept { return static_cast<tensor_map_mode_t>(m); }

/// A device type: DLPack's DLDeviceType codes (tensor_device_t::device_type).
enum class DeviceType : int32_t {
  CPU = 1,
  CUDA = 2,
  CUDAHost = 3,  ///< pinned host memory
  OpenCL = 4,
  Vulkan = 7,
  Metal = 8,
  VPI = 9,
  ROCm = 10,
  ROCmHost = 11,
  ExtDev = 12,
  CUDAManaged = 13,
  OneAPI = 14,
  WebGPU = 15,
  Hexagon = 16,
  MAIA = 17,
};

/// A device type and ordinal, like c10::Device; tensor_device_t in the C API.
/// `tensor::Device(tensor::DeviceType::CUDA, 1)`; the default is the CPU.
class Device {
 public:
  constexpr Device(DeviceType type = DeviceType::CPU, int32_t index = 0) noexcept : type_(type), index_(index) {}
  constexpr DeviceType type() const noexcept { return type_; }
  constexpr int32_t index() const noexcept { return index_; }
  constexpr bool is_cpu() const noexcept { return type_ == DeviceType::CPU; }
  constexpr tensor_device_t to_c() const noexcept { return tensor_device_t{static_cast<int32_t>(type_), index_}; }
  static constexpr Device from_c(tensor_device_t d) noexcept {
    return Device(static_cast<DeviceType>(d.device_type), d.device_id);
  }
  constexpr bool operator==(const Device& o) const noexcept { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const noexcept { return !(*this == o); }

 private:
  DeviceType type_;
  int32_t index_;
};

/// The tag by which a caller opts in, by name, to a view of possibly read-only memory
/// through a type that cannot say so (tensor::to_mat(t, tensor::read_only) in
/// tensor_opencv.hpp), like std::in_place.
struct read_only_t {
  explicit constexpr read_only_t() = default;
};
/// See read_only_t.
constexpr read_only_t read_only{};

/// Thrown on any status != TENSOR_OK (when exceptions are on); what() is
/// tensor_last_error()'s text.
class Error : public std::runtime_error {
 public:
  Error(tensor_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  tensor_status_t status() const noexcept { return status_; }

 private:
  tensor_status_t status_;
};

/// Called on a failed call when exceptions are off; must not return (if it does, the
/// program aborts).
using ErrorHandler = void (*)(tensor_status_t status, const char* message);

namespace detail {
inline void default_error_handler(tensor_status_t status, const char* message) {
  std::fprintf(stderr, "libtensor error %d: %s\n", static_cast<int>(status), message);
}
inline ErrorHandler& error_handler_slot() noexcept {
  static ErrorHandler h = &default_error_handler;
  return h;
}
/// Reports a failure: throws tensor::Error, or (without exceptions) calls the handler
/// and aborts if it returns.
[[noreturn]] inline void fail(tensor_status_t s, const std::string& message) {
#if LIBTENSOR_EXCEPTIONS
  throw Error(s, message);
#else
  error_handler_slot()(s, message.c_str());
  std::abort();
#endif
}
inline void check(tensor_status_t s) {
  if (s != TENSOR_OK) fail(s, tensor_last_error());
}
}  // namespace detail

/// Installs the handler used when exceptions are off (not thread-safe against concurrent
/// failures: install it once at start-up). Returns the previous one; nullptr restores
/// the default (print to stderr).
inline ErrorHandler set_error_handler(ErrorHandler h) noexcept {
  ErrorHandler old = detail::error_handler_slot();
  detail::error_handler_slot() = h ? h : &detail::default_error_handler;
  return old;
}

/// A non-owning view of int64 values (sizes, strides), like c10::IntArrayRef.
class IntArrayRef {
 public:
  IntArrayRef() noexcept : data_(nullptr), size_(0) {}
  IntArrayRef(const int64_t* data, size_t size) noexcept : data_(data), size_(size) {}
  const int64_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  int64_t operator[](size_t i) const noexcept { return data_[i]; }
  const int64_t* begin() const noexcept { return data_; }
  const int64_t* end() const noexcept { return data_ + size_; }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  operator std::vector<int64_t>() const { return vec(); }
  bool operator==(const IntArrayRef& o) const noexcept {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != o.data_[i]) return false;
    return true;
  }
  bool operator!=(const IntArrayRef& o) const noexcept { return !(*this == o); }

 private:
  const int64_t* data_;
  size_t size_;
};

/// An argument list of int64 values: a braced list, a std::vector or an IntArrayRef. It
/// borrows its values for the duration of the call.
class IntList {
 public:
  IntList() noexcept : data_(nullptr), size_(0) {}
  // Keeps the list object itself: its array lives until the end of the caller's full
  // expression, i.e. for the whole call.
  IntList(std::initializer_list<int64_t> l) noexcept : data_(nullptr), size_(l.size()), list_(l) {}
  IntList(const std::vector<int64_t>& v) noexcept : data_(v.data()), size_(v.size()) {}
  IntList(IntArrayRef r) noexcept : data_(r.data()), size_(r.size()) {}
  const int64_t* data() const noexcept { return data_ ? data_ : list_.begin(); }
  int64_t size() const noexcept { return static_cast<int64_t>(size_); }

 private:
  const int64_t* data_;
  size_t size_;
  std::initializer_list<int64_t> list_;
};

/// Half-precision element types for data_ptr<T>() (raw bits; no arithmetic).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

namespace detail {
template <class T>
struct dtype_of;
#define LIBTENSOR_DTYPE_OF(T, D)           \
  template <>                              \
  struct dtype_of<T> {                     \
    static constexpr Dtype value = Dtype::D; \
  };
LIBTENSOR_DTYPE_OF(uint8_t, UInt8)
LIBTENSOR_DTYPE_OF(int8_t, Int8)
LIBTENSOR_DTYPE_OF(int16_t, Int16)
LIBTENSOR_DTYPE_OF(int32_t, Int32)
LIBTENSOR_DTYPE_OF(int64_t, Int64)
LIBTENSOR_DTYPE_OF(Half, Float16)
LIBTENSOR_DTYPE_OF(float, Float32)
LIBTENSOR_DTYPE_OF(double, Float64)
LIBTENSOR_DTYPE_OF(std::complex<float>, ComplexFloat)
LIBTENSOR_DTYPE_OF(std::complex<double>, ComplexDouble)
LIBTENSOR_DTYPE_OF(bool, Bool)
LIBTENSOR_DTYPE_OF(BFloat16, BFloat16)
LIBTENSOR_DTYPE_OF(uint16_t, UInt16)
LIBTENSOR_DTYPE_OF(uint32_t, UInt32)
LIBTENSOR_DTYPE_OF(uint64_t, UInt64)
#undef LIBTENSOR_DTYPE_OF

using Deleter = std::function<void(void*)>;

// Called by the library exactly once when wrapped memory dies; runs and frees the
// std::function. An exception escaping the user's deleter terminates (it must not unwind
// into the library).
extern "C" inline void libtensor_hpp_run_deleter(void* data, void* ctx) noexcept {
  Deleter* d = static_cast<Deleter*>(ctx);
  (*d)(data);
  delete d;
}
}  // namespace detail

/// The Dtype of the C++ element type T (uint8_t -> kUInt8, float -> kFloat32, Half,
/// BFloat16, std::complex<float>, ...); a type with no dtype does not compile.
template <class T>
constexpr Dtype dtype_of() noexcept {
  return detail::dtype_of<typename std::remove_cv<T>::type>::value;
}

/// Strided typed access to the elements of an N-dim tensor, like at::TensorAccessor:
/// `a[i][j]` is the element at data + i*stride(0) + j*stride(1) (strides in elements).
/// Made by Tensor::accessor<T, N>(), which checks the dtype and the number of dims once;
/// operator[] is plain pointer arithmetic, bounds-checked only in debug builds (NDEBUG
/// not defined: an index outside [0, size) fails with TENSOR_ERR_INDEX). It borrows the
/// tensor's sizes and strides: the tensor must outlive it.
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides) noexcept
      : data_(data), sizes_(sizes), strides_(strides) {}
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    check_index(i);
    return TensorAccessor<T, N - 1>(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1);
  }
  int64_t size(size_t d) const noexcept { return sizes_[d]; }
  int64_t stride(size_t d) const noexcept { return strides_[d]; }
  T* data() const noexcept { return data_; }

 private:
  void check_index(int64_t i) const {
#ifndef NDEBUG
    if (i < 0 || i >= sizes_[0])
      detail::fail(TENSOR_ERR_INDEX, "accessor: index " + std::to_string(i) + " is out of bounds for size " +
                                         std::to_string(sizes_[0]));
#else
    (void)i;
#endif
  }
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <class T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides) noexcept
      : data_(data), sizes_(sizes), strides_(strides) {}
  T& operator[](int64_t i) const {
#ifndef NDEBUG
    if (i < 0 || i >= sizes_[0])
      detail::fail(TENSOR_ERR_INDEX, "accessor: index " + std::to_string(i) + " is out of bounds for size " +
                                         std::to_string(sizes_[0]));
#endif
    return data_[strides_[0] * i];
  }
  int64_t size(size_t d) const noexcept { return sizes_[d]; }
  int64_t stride(size_t d) const noexcept { return strides_[d]; }
  T* data() const noexcept { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

class Storage;

/// One strong reference to a TensorImpl, like at::Tensor. sizeof(Tensor) == sizeof(void*).
class Tensor {
 public:
  /// An undefined tensor (defined() == false).
  Tensor() noexcept : impl_(nullptr) {}
  /// Takes over an owned (+1) handle.
  static Tensor adopt(tensor_t* owned) noexcept { return Tensor(owned); }
  Tensor(const Tensor& o) noexcept : impl_(o.impl_ ? tensor_retain(o.impl_) : nullptr) {}
  Tensor(Tensor&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
  Tensor& operator=(const Tensor& o) noexcept {
    if (this != &o) {
      tensor_t* n = o.impl_ ? tensor_retain(o.impl_) : nullptr;
      tensor_release(impl_);
      impl_ = n;
    }
    return *this;
  }
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      tensor_release(impl_);
      impl_ = o.impl_;
      o.impl_ = nullptr;
    }
    return *this;
  }
  ~Tensor() { tensor_release(impl_); }

  /// The handle (borrowed).
  tensor_t* get() const noexcept { return impl_; }
  /// Hands the owned handle (+1) to the caller, who must pass it to tensor_release() (or
  /// Tensor::adopt()) later; *this becomes undefined. Nothing is released: discarding the
  /// result leaks the tensor, hence [[nodiscard]]. The inverse of adopt(), named like
  /// Rust's Box::into_raw. To drop this reference, assign `tensor::Tensor()` instead.
  LIBTENSOR_NODISCARD tensor_t* into_raw() noexcept {
    tensor_t* p = impl_;
    impl_ = nullptr;
    return p;
  }
  /// Deprecated name of into_raw() (std::unique_ptr's; easily misread as tensor_release).
  LIBTENSOR_DEPRECATED(
      "Tensor::release() releases nothing: it hands the handle to the caller; use into_raw(), "
      "or assign tensor::Tensor() to drop the reference")
  LIBTENSOR_NODISCARD tensor_t* release() noexcept { return into_raw(); }
  bool defined() const noexcept { return impl_ != nullptr; }
  uint64_t use_count() const noexcept { return tensor_use_count(impl_); }

  // ---- creation -----------------------------------------------------------------------
  static Tensor empty(IntList sizes, Dtype dtype = kFloat32) {
    return make([&](tensor_t** o) { return tensor_empty(sizes.data(), sizes.size(), to_c(dtype), o); });
  }
  /// `strides` in elements (not bytes).
  static Tensor empty_strided(IntList sizes, IntList strides, Dtype dtype = kFloat32) {
    check_same_length(sizes, strides, "empty_strided");
    return make([&](tensor_t** o) {
      return tensor_empty_strided(sizes.data(), strides.data(), sizes.size(), to_c(dtype), o);
    });
  }
  static Tensor zeros(IntList sizes, Dtype dtype = kFloat32) {
    return make([&](tensor_t** o) { return tensor_zeros(sizes.data(), sizes.size(), to_c(dtype), o); });
  }
  static Tensor ones(IntList sizes, Dtype dtype = kFloat32) {
    return make([&](tensor_t** o) { return tensor_ones(sizes.data(), sizes.size(), to_c(dtype), o); });
  }
  static Tensor full(IntList sizes, double value, Dtype dtype = kFloat32) {
    return make([&](tensor_t** o) { return tensor_full(sizes.data(), sizes.size(), to_c(dtype), value, o); });
  }
  static Tensor arange(int64_t n, Dtype dtype = kInt64) {
    return make([&](tensor_t** o) { return tensor_arange(n, to_c(dtype), o); });
  }
  /// Wraps memory owned elsewhere without copying. `deleter(data)` runs exactly once when
  /// the last reference dies; if this fails, it never runs and the caller keeps `data`.
  /// `strides` are in **elements** (not bytes); empty means contiguous. For byte strides
  /// (cv::Mat::step, AVFrame::linesize) use from_blob_bytes.
  static Tensor from_blob(void* data, IntList sizes, Dtype dtype, std::function<void(void*)> deleter = {},
                          IntList strides = {}, Device device = Device()) {
    if (strides.size() != 0) check_same_length(sizes, strides, "from_blob");
    return wrap(&tensor_from_blob, data, sizes, strides, dtype, std::move(deleter), device.to_c());
  }
  LIBTENSOR_DEPRECATED("pass a tensor::Device (tensor::Device(tensor::DeviceType::CUDA, 0)), not a tensor_device_t")
  static Tensor from_blob(void* data, IntList sizes, Dtype dtype, std::function<void(void*)> deleter, IntList strides,
                          tensor_device_t device) {
    return from_blob(data, sizes, dtype, std::move(deleter), strides, Device::from_c(device));
  }
  /// from_blob with strides in **bytes**: each a multiple of itemsize(dtype), and `data`
  /// aligned for the dtype (tensor_from_blob_bytes); empty means contiguous.
  static Tensor from_blob_bytes(void* data, IntList sizes, IntList byte_strides, Dtype dtype,
                                std::function<void(void*)> deleter = {}, Device device = Device()) {
    if (byte_strides.size() != 0) check_same_length(sizes, byte_strides, "from_blob_bytes");
    return wrap(&tensor_from_blob_bytes, data, sizes, byte_strides, dtype, std::move(deleter), device.to_c());
  }
  LIBTENSOR_DEPRECATED("pass a tensor::Device (tensor::Device(tensor::DeviceType::CUDA, 0)), not a tensor_device_t")
  static Tensor from_blob_bytes(void* data, IntList sizes, IntList byte_strides, Dtype dtype,
                                std::function<void(void*)> deleter, tensor_device_t device) {
    return from_blob_bytes(data, sizes, byte_strides, dtype, std::move(deleter), Device::from_c(device));
  }
  Tensor empty_like(MemoryFormat f = MemoryFormat::Preserve) const {
    return make([&](tensor_t** o) { return tensor_empty_like(impl_, tensor::to_c(f), o); });
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MemoryFormat (tensor::MemoryFormat::ChannelsLast), not an integer")
  Tensor empty_like(tensor_memory_format_t f) const { return empty_like(memory_format_from_c(f)); }
  /// Loads a .npy file as a view over a mapping of it (no copy), like
  /// numpy.load(path, mmap_mode="r") for the default mode.
  static Tensor load_npy(const std::string& path, MapMode mode = MapMode::ReadOnly) {
    return make([&](tensor_t** o) { return tensor_load_npy(path.c_str(), tensor::to_c(mode), o); });
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MapMode (tensor::MapMode::Shared), not an integer")
  static Tensor load_npy(const std::string& path, tensor_map_mode_t mode) {
    return load_npy(path, static_cast<MapMode>(mode));
  }
  /// Writes this tensor to a .npy file (C order) that numpy.load reads.
  void save_npy(const std::string& path) const { detail::check(tensor_save_npy(path.c_str(), impl_)); }

  // ---- metadata -----------------------------------------------------------------------
  int64_t dim() const { return tensor_ndim(impl_); }
  IntArrayRef sizes() const { return IntArrayRef(tensor_sizes(impl_), static_cast<size_t>(dim())); }
  /// Strides in elements (not bytes); stride(d) too.
  IntArrayRef strides() const {
    return IntArrayRef(tensor_strides(impl_), static_cast<size_t>(dim()));
  }
  int64_t size(int64_t d) const {
    int64_t v = 0;
    detail::check(tensor_size(impl_, d, &v));
    return v;
  }
  int64_t stride(int64_t d) const {
    int64_t v = 0;
    detail::check(tensor_stride(impl_, d, &v));
    return v;
  }
  int64_t numel() const { return tensor_numel(impl_); }
  Dtype dtype() const { return dtype_from_c(tensor_dtype(impl_)); }
  size_t itemsize() const { return tensor_itemsize(impl_); }
  size_t nbytes() const { return tensor_nbytes(impl_); }
  Device device() const { return Device::from_c(tensor_device(impl_)); }
  int64_t storage_offset() const { return tensor_storage_offset(impl_); }
  void* data_ptr() const { return tensor_data_ptr(impl_); }
  /// The data as T*; fails with TENSOR_ERR_DTYPE when dtype_of<T>() is not dtype().
  template <class T>
  T* data_ptr() const {
    check_dtype(dtype_of<T>(), "data_ptr");
    return static_cast<T*>(data_ptr());
  }
  /// Typed strided element access (see TensorAccessor): fails with TENSOR_ERR_DTYPE when
  /// dtype_of<T>() is not dtype(), TENSOR_ERR_INVALID_ARGUMENT when dim() != N. The
  /// accessor borrows this tensor's sizes and strides: keep the tensor alive while using it.
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    check_dtype(dtype_of<T>(), "accessor");
    if (dim() != static_cast<int64_t>(N))
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "accessor: TensorAccessor expected " + std::to_string(N) +
                                                    " dims but tensor has " + std::to_string(dim()));
    return TensorAccessor<T, N>(static_cast<T*>(data_ptr()), tensor_sizes(impl_), tensor_strides(impl_));
  }
  bool is_contiguous(MemoryFormat f = MemoryFormat::Contiguous) const {
    return tensor_is_contiguous(impl_, tensor::to_c(f));
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MemoryFormat (tensor::MemoryFormat::ChannelsLast), not an integer")
  bool is_contiguous(tensor_memory_format_t f) const { return is_contiguous(memory_format_from_c(f)); }
  bool is_non_overlapping_and_dense() const { return tensor_is_non_overlapping_and_dense(impl_); }
  MemoryFormat suggest_memory_format() const { return memory_format_from_c(tensor_suggest_memory_format(impl_)); }
  bool shares_storage(const Tensor& o) const { return tensor_shares_storage(impl_, o.impl_); }
  uint64_t version() const { return tensor_version(impl_); }
  /// Whether writes through this tensor are refused: its storage is read-only (a
  /// .safetensors tensor, a read-only mapping, DLPack's read-only flag). False if undefined.
  bool is_read_only() const noexcept { return storage_is_read_only(tensor_storage(impl_)); }
  inline Storage storage() const;

  // ---- views (no data is copied) --------------------------------------------------------
  Tensor view(IntList sizes) const {
    return make([&](tensor_t** o) { return tensor_view(impl_, sizes.data(), sizes.size(), o); });
  }
  Tensor view_dtype(Dtype d) const {
    return make([&](tensor_t** o) { return tensor_view_dtype(impl_, to_c(d), o); });
  }
  Tensor reshape(IntList sizes) const {
    return make([&](tensor_t** o) { return tensor_reshape(impl_, sizes.data(), sizes.size(), o); });
  }
  Tensor transpose(int64_t a, int64_t b) const {
    return make([&](tensor_t** o) { return tensor_transpose(impl_, a, b, o); });
  }
  Tensor t() const {
    return make([&](tensor_t** o) { return tensor_transpose_2d(impl_, o); });
  }
  Tensor permute(IntList dims) const {
    return make([&](tensor_t** o) { return tensor_permute(impl_, dims.data(), dims.size(), o); });
  }
  Tensor movedim(int64_t s, int64_t d) const {
    return make([&](tensor_t** o) { return tensor_movedim(impl_, s, d, o); });
  }
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const {
    return make([&](tensor_t** o) { return tensor_slice(impl_, dim, start, end, step, o); });
  }
  Tensor narrow(int64_t dim, int64_t start, int64_t len) const {
    return make([&](tensor_t** o) { return tensor_narrow(impl_, dim, start, len, o); });
  }
  Tensor select(int64_t dim, int64_t i) const {
    return make([&](tensor_t** o) { return tensor_select(impl_, dim, i, o); });
  }
  Tensor operator[](int64_t i) const { return select(0, i); }
  Tensor squeeze() const {
    return make([&](tensor_t** o) { return tensor_squeeze(impl_, o); });
  }
  Tensor squeeze(int64_t d) const {
    return make([&](tensor_t** o) { return tensor_squeeze_dim(impl_, d, o); });
  }
  Tensor unsqueeze(int64_t d) const {
    return make([&](tensor_t** o) { return tensor_unsqueeze(impl_, d, o); });
  }
  Tensor expand(IntList sizes) const {
    return make([&](tensor_t** o) { return tensor_expand(impl_, sizes.data(), sizes.size(), o); });
  }
  /// `strides` and `off` in elements (not bytes).
  Tensor as_strided(IntList sizes, IntList strides, int64_t off) const {
    check_same_length(sizes, strides, "as_strided");
    return make([&](tensor_t** o) {
      return tensor_as_strided(impl_, sizes.data(), strides.data(), sizes.size(), off, o);
    });
  }
  Tensor flatten(int64_t s = 0, int64_t e = -1) const {
    return make([&](tensor_t** o) { return tensor_flatten(impl_, s, e, o); });
  }
  Tensor unflatten(int64_t d, IntList sizes) const {
    return make([&](tensor_t** o) { return tensor_unflatten(impl_, d, sizes.data(), sizes.size(), o); });
  }
  Tensor diagonal(int64_t off = 0, int64_t d1 = 0, int64_t d2 = 1) const {
    return make([&](tensor_t** o) { return tensor_diagonal(impl_, off, d1, d2, o); });
  }
  Tensor unfold(int64_t d, int64_t size, int64_t step) const {
    return make([&](tensor_t** o) { return tensor_unfold(impl_, d, size, step, o); });
  }
  Tensor alias() const {
    return make([&](tensor_t** o) { return tensor_alias(impl_, o); });
  }
  Tensor detach() const {
    return make([&](tensor_t** o) { return tensor_detach(impl_, o); });
  }

  // ---- copies and in-place writes -------------------------------------------------------
  Tensor contiguous(MemoryFormat f = MemoryFormat::Contiguous) const {
    return make([&](tensor_t** o) { return tensor_contiguous(impl_, tensor::to_c(f), o); });
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MemoryFormat (tensor::MemoryFormat::ChannelsLast), not an integer")
  Tensor contiguous(tensor_memory_format_t f) const { return contiguous(memory_format_from_c(f)); }
  Tensor clone(MemoryFormat f = MemoryFormat::Preserve) const {
    return make([&](tensor_t** o) { return tensor_clone(impl_, tensor::to_c(f), o); });
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MemoryFormat (tensor::MemoryFormat::ChannelsLast), not an integer")
  Tensor clone(tensor_memory_format_t f) const { return clone(memory_format_from_c(f)); }
  Tensor to(Dtype d) const {
    return make([&](tensor_t** o) { return tensor_to_dtype(impl_, to_c(d), o); });
  }
  Tensor repeat(IntList reps) const {
    return make([&](tensor_t** o) { return tensor_repeat(impl_, reps.data(), reps.size(), o); });
  }
  Tensor& copy_(const Tensor& src) {
    detail::check(tensor_copy_(impl_, src.impl_));
    return *this;
  }
  /// One pass: `self[..., c, ...] = src[..., c, ...] * scale[c] + shift[c]` over the
  /// indices c of dim `dim`, src broadcast and converted as copy_ (tensor_copy_affine_).
  /// `scale` and `shift` hold size(dim) values each, or one value for every element.
  Tensor& copy_affine_(const Tensor& src, int64_t dim, const std::vector<double>& scale,
                       const std::vector<double>& shift) {
    if (scale.size() != shift.size())
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "copy_affine_: scale has " + std::to_string(scale.size()) +
                                                    " values but shift has " + std::to_string(shift.size()));
    detail::check(tensor_copy_affine_(impl_, src.impl_, dim, scale.data(), shift.data(),
                                      static_cast<int64_t>(scale.size())));
    return *this;
  }
  /// copy_affine_ with a channel map (tensor_copy_affine_ex): index c of dim `dim` reads
  /// index `src_index[c]` of src's dim, e.g. `{2, 1, 0}` for BGR -> RGB in the same pass.
  /// `src_index` holds size(dim) values; `scale` / `shift` size(dim) values or one each.
  Tensor& copy_affine_(const Tensor& src, int64_t dim, const std::vector<double>& scale,
                       const std::vector<double>& shift, const std::vector<int64_t>& src_index) {
    if (scale.size() != shift.size())
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "copy_affine_: scale has " + std::to_string(scale.size()) +
                                                    " values but shift has " + std::to_string(shift.size()));
    if (static_cast<int64_t>(src_index.size()) != (this->dim() == 0 ? 1 : size(dim)))
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "copy_affine_: src_index has " +
                                                    std::to_string(src_index.size()) +
                                                    " values, not one per index of dim " + std::to_string(dim));
    detail::check(tensor_copy_affine_ex(impl_, src.impl_, dim, scale.data(), shift.data(),
                                        static_cast<int64_t>(scale.size()), src_index.data()));
    return *this;
  }
  /// One pass from a YUV 4:2:0 frame (tensor_copy_yuv_affine_): `y` [H, W], `u` and `v`
  /// [ceil(H/2), ceil(W/2)] (I420), or `u` [ceil(H/2), ceil(W/2), 2] and `v` an undefined
  /// Tensor() (NV12); self is [3, H, W] / [H, W, 3] (channels at `channel_dim`) float32,
  /// float16, bfloat16 or uint8. `color`: TENSOR_YUV_BT601 / BT709 / BT2020 | TENSOR_YUV_LIMITED
  /// or TENSOR_YUV_FULL (| TENSOR_YUV_BGR). `scale` / `shift`: 3 values each, or one.
  Tensor& copy_yuv_affine_(const Tensor& y, const Tensor& u, const Tensor& v, int32_t color,
                           int64_t channel_dim, const std::vector<double>& scale,
                           const std::vector<double>& shift) {
    if (scale.size() != shift.size())
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "copy_yuv_affine_: scale has " + std::to_string(scale.size()) +
                                                    " values but shift has " + std::to_string(shift.size()));
    detail::check(tensor_copy_yuv_affine_(impl_, y.impl_, u.impl_, v.impl_, color, channel_dim, scale.data(),
                                          shift.data(), static_cast<int64_t>(scale.size())));
    return *this;
  }
  /// One scale and shift for every element: `self = src * scale + shift`.
  Tensor& copy_affine_(const Tensor& src, double scale, double shift) {
    detail::check(tensor_copy_affine_(impl_, src.impl_, 0, &scale, &shift, 1));
    return *this;
  }
  Tensor& fill_(double v) {
    detail::check(tensor_fill_f64_(impl_, v));
    return *this;
  }
  bool equal(const Tensor& o) const {
    bool r = false;
    detail::check(tensor_equal(impl_, o.impl_, &r));
    return r;
  }

  // ---- elements ---------------------------------------------------------------------------
  double get_f64(IntList index) const {
    double v = 0;
    detail::check(tensor_get_f64(impl_, index.data(), index.size(), &v));
    return v;
  }
  int64_t get_i64(IntList index) const {
    int64_t v = 0;
    detail::check(tensor_get_i64(impl_, index.data(), index.size(), &v));
    return v;
  }
  void set(IntList index, double v) { detail::check(tensor_set_f64(impl_, index.data(), index.size(), v)); }
  /// The value of a one-element tensor, converted like PyTorch's item() (float → integer
  /// truncates toward zero).
  template <class T>
  T item() const {
    if (numel() != 1)
      detail::fail(TENSOR_ERR_SHAPE,
                   "item: a Tensor with " + std::to_string(numel()) + " elements cannot be converted to Scalar");
    std::vector<int64_t> zero(static_cast<size_t>(dim()), 0);
    if (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
      int64_t v = 0;
      detail::check(tensor_get_i64(impl_, zero.data(), dim(), &v));
      return static_cast<T>(v);
    }
    double v = 0;
    detail::check(tensor_get_f64(impl_, zero.data(), dim(), &v));
    return static_cast<T>(v);
  }
  /// The PyTorch-like repr (tensor_format).
  std::string str() const {
    size_t n = tensor_format(impl_, nullptr, 0);
    std::string s(n + 1, '\0');
    tensor_format(impl_, &s[0], s.size());
    s.resize(n);
    return s;
  }

 private:
  explicit Tensor(tensor_t* owned) noexcept : impl_(owned) {}
  template <class F>
  static Tensor make(F&& f) {
    tensor_t* out = nullptr;
    detail::check(f(&out));
    return Tensor(out);
  }
  static void check_same_length(IntList a, IntList b, const char* fn) {
    if (a.size() != b.size())
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, std::string(fn) + ": sizes has " + std::to_string(a.size()) +
                                                    " entries but strides has " + std::to_string(b.size()));
  }
  void check_dtype(Dtype want, const char* fn) const {
    if (want != dtype())
      detail::fail(TENSOR_ERR_DTYPE,
                   std::string(fn) + ": tensor has dtype " + name(dtype()) + ", not " + name(want));
  }
  using BlobFn = tensor_status_t (*)(void*, const int64_t*, const int64_t*, int64_t, tensor_dtype_t,
                                     tensor_device_t, tensor_deleter_fn, void*, tensor_t**);
  static Tensor wrap(BlobFn fn, void* data, IntList sizes, IntList strides, Dtype dtype,
                     std::function<void(void*)> deleter, tensor_device_t device) {
    detail::Deleter* ctx = deleter ? new detail::Deleter(std::move(deleter)) : nullptr;
    tensor_t* out = nullptr;
    tensor_status_t s = fn(data, sizes.data(), strides.size() ? strides.data() : nullptr, sizes.size(),
                           to_c(dtype), device, ctx ? &detail::libtensor_hpp_run_deleter : nullptr, ctx, &out);
    if (s != TENSOR_OK) {
      delete ctx;  // the library did not take ownership
      detail::check(s);
    }
    return Tensor(out);
  }

  tensor_t* impl_;
};

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

class WeakStorage;

/// One strong reference to a StorageImpl (untyped bytes).
class Storage {
 public:
  Storage() noexcept : impl_(nullptr) {}
  static Storage adopt(storage_t* owned) noexcept { return Storage(owned); }
  /// A new resizable storage from the default allocator (or `allocator`).
  static Storage create(size_t nbytes, const tensor_allocator_t* allocator = nullptr) {
    storage_t* out = nullptr;
    detail::check(storage_new(nbytes, allocator, &out));
    return Storage(out);
  }
  Storage(const Storage& o) noexcept : impl_(o.impl_ ? storage_retain(o.impl_) : nullptr) {}
  Storage(Storage&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
  Storage& operator=(const Storage& o) noexcept {
    if (this != &o) {
      storage_t* n = o.impl_ ? storage_retain(o.impl_) : nullptr;
      storage_release(impl_);
      impl_ = n;
    }
    return *this;
  }
  Storage& operator=(Storage&& o) noexcept {
    if (this != &o) {
      storage_release(impl_);
      impl_ = o.impl_;
      o.impl_ = nullptr;
    }
    return *this;
  }
  ~Storage() { storage_release(impl_); }

  storage_t* get() const noexcept { return impl_; }
  /// Hands the owned handle (+1) to the caller, who must pass it to storage_release() (or
  /// Storage::adopt()) later; *this becomes undefined. As Tensor::into_raw().
  LIBTENSOR_NODISCARD storage_t* into_raw() noexcept {
    storage_t* p = impl_;
    impl_ = nullptr;
    return p;
  }
  /// Deprecated name of into_raw().
  LIBTENSOR_DEPRECATED(
      "Storage::release() releases nothing: it hands the handle to the caller; use into_raw(), "
      "or assign tensor::Storage() to drop the reference")
  LIBTENSOR_NODISCARD storage_t* release() noexcept { return into_raw(); }
  bool defined() const noexcept { return impl_ != nullptr; }
  uint64_t use_count() const noexcept { return storage_use_count(impl_); }
  uint64_t weak_count() const noexcept { return storage_weak_count(impl_); }
  void* data() const noexcept { return storage_data_ptr(impl_); }
  size_t nbytes() const noexcept { return storage_nbytes(impl_); }
  Device device() const noexcept { return Device::from_c(storage_device(impl_)); }
  bool is_resizable() const noexcept { return storage_is_resizable(impl_); }
  bool is_read_only() const noexcept { return storage_is_read_only(impl_); }
  void resize(size_t nbytes) { detail::check(storage_resize(impl_, nbytes)); }
  void mark_read_only() { detail::check(storage_mark_read_only(impl_)); }
  /// A tensor over this storage (bounds-checked); `offset` and `strides` in elements,
  /// empty `strides` means contiguous.
  Tensor tensor(IntList sizes, Dtype dtype, int64_t offset = 0, IntList strides = {}) const {
    tensor_t* out = nullptr;
    if (strides.size() != 0 && strides.size() != sizes.size())
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "Storage::tensor: sizes and strides differ in length");
    detail::check(tensor_from_storage(impl_, offset, sizes.data(), strides.size() ? strides.data() : nullptr,
                                      sizes.size(), to_c(dtype), &out));
    return Tensor::adopt(out);
  }
  inline WeakStorage weak() const;

  // ---- mapped files and shared memory ---------------------------------------------------
  /// `nbytes` bytes at `offset` of the file at `path` (default: all of it), mapped: no copy.
  static Storage from_file(const std::string& path, uint64_t offset = 0, uint64_t nbytes = TENSOR_MAP_TO_END,
                           MapMode mode = MapMode::ReadOnly) {
    storage_t* out = nullptr;
    detail::check(storage_from_file(path.c_str(), offset, nbytes, to_c(mode), &out));
    return Storage(out);
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MapMode (tensor::MapMode::Shared), not an integer")
  static Storage from_file(const std::string& path, uint64_t offset, uint64_t nbytes, tensor_map_mode_t mode) {
    return from_file(path, offset, nbytes, static_cast<MapMode>(mode));
  }
  /// A mapping of an open descriptor (e.g. a shared-memory segment received from another
  /// process); the caller keeps `fd`.
  static Storage from_fd(int fd, uint64_t offset = 0, uint64_t nbytes = TENSOR_MAP_TO_END,
                         MapMode mode = MapMode::ReadOnly) {
    storage_t* out = nullptr;
    detail::check(storage_from_fd(fd, offset, nbytes, to_c(mode), &out));
    return Storage(out);
  }
  LIBTENSOR_DEPRECATED("pass a tensor::MapMode (tensor::MapMode::Shared), not an integer")
  static Storage from_fd(int fd, uint64_t offset, uint64_t nbytes, tensor_map_mode_t mode) {
    return from_fd(fd, offset, nbytes, static_cast<MapMode>(mode));
  }
  /// A new zero-filled shared-memory segment (memfd); send fd() to another process.
  static Storage shared(size_t nbytes) {
    storage_t* out = nullptr;
    detail::check(storage_new_shared(nbytes, &out));
    return Storage(out);
  }
  /// The descriptor of a shared / fd-mapped storage (owned by the storage).
  int fd() const {
    int fd = -1;
    detail::check(storage_fd(impl_, &fd));
    return fd;
  }
  bool is_mapped() const noexcept { return storage_is_mapped(impl_); }

 private:
  explicit Storage(storage_t* owned) noexcept : impl_(owned) {}
  storage_t* impl_;
};

/// A weak reference to a storage: lock() gives a Storage while the data is alive.
class WeakStorage {
 public:
  WeakStorage() noexcept : impl_(nullptr) {}
  static WeakStorage adopt(storage_weak_t* owned) noexcept {
    WeakStorage w;
    w.impl_ = owned;
    return w;
  }
  WeakStorage(const WeakStorage&) = delete;
  WeakStorage& operator=(const WeakStorage&) = delete;
  WeakStorage(WeakStorage&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
  WeakStorage& operator=(WeakStorage&& o) noexcept {
    if (this != &o) {
      storage_weak_release(impl_);
      impl_ = o.impl_;
      o.impl_ = nullptr;
    }
    return *this;
  }
  ~WeakStorage() { storage_weak_release(impl_); }
  bool expired() const noexcept { return storage_weak_expired(impl_); }
  /// The storage, or an undefined Storage once it expired.
  Storage lock() const noexcept { return Storage::adopt(storage_weak_lock(impl_)); }

 private:
  storage_weak_t* impl_;
};

inline Storage Tensor::storage() const {
  storage_t* s = tensor_storage(impl_);
  return Storage::adopt(s ? storage_retain(s) : nullptr);
}

inline WeakStorage Storage::weak() const {
  storage_weak_t* w = nullptr;
  detail::check(storage_weak_new(impl_, &w));
  return WeakStorage::adopt(w);
}

/// A loaded .safetensors file: its tensors, views over one mapping of the file (read-only
/// by default; MapMode::Private gives writable copy-on-write tensors that never write the
/// file, MapMode::Shared writable ones whose writes reach it), and its __metadata__.
/// Move-only; the tensors stay valid after it is destroyed.
///
///   tensor::SafetensorsFile f("model.safetensors");
///   tensor::Tensor w = f["encoder.weight"];
///   tensor::SafetensorsFile cow("model.safetensors", tensor::MapMode::Private);
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path) : impl_(nullptr) {
    detail::check(tensor_load_safetensors(path.c_str(), &impl_));
  }
  SafetensorsFile(const std::string& path, MapMode mode) : impl_(nullptr) {
    detail::check(tensor_load_safetensors_mode(path.c_str(), tensor::to_c(mode), &impl_));
  }
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  SafetensorsFile(SafetensorsFile&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
  SafetensorsFile& operator=(SafetensorsFile&& o) noexcept {
    if (this != &o) {
      tensor_safetensors_release(impl_);
      impl_ = o.impl_;
      o.impl_ = nullptr;
    }
    return *this;
  }
  ~SafetensorsFile() { tensor_safetensors_release(impl_); }

  size_t size() const noexcept { return tensor_safetensors_count(impl_); }
  /// Name of tensor i (tensors are in file order).
  std::string name(size_t i) const {
    const char* n = tensor_safetensors_name(impl_, i);
    if (!n) detail::fail(TENSOR_ERR_INDEX, "SafetensorsFile::name: index " + std::to_string(i) + " out of range");
    return n;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < size(); i++) v.push_back(name(i));
    return v;
  }
  Tensor at(size_t i) const {
    tensor_t* out = nullptr;
    detail::check(tensor_safetensors_at(impl_, i, &out));
    return Tensor::adopt(out);
  }
  /// The tensor named `name` (throws tensor::Error with TENSOR_ERR_INDEX if absent).
  Tensor operator[](const std::string& name) const {
    tensor_t* out = nullptr;
    detail::check(tensor_safetensors_get(impl_, name.c_str(), &out));
    return Tensor::adopt(out);
  }
  /// The __metadata__ pairs, sorted by key (empty when the file has none).
  std::vector<std::pair<std::string, std::string>> metadata() const {
    std::vector<std::pair<std::string, std::string>> v;
    for (size_t i = 0; i < tensor_safetensors_metadata_count(impl_); i++)
      v.emplace_back(tensor_safetensors_metadata_key(impl_, i), tensor_safetensors_metadata_value(impl_, i));
    return v;
  }

 private:
  tensor_safetensors_t* impl_;
};

/// Writes named tensors to a .safetensors file that the Python safetensors package reads,
/// with the `metadata` pairs as its __metadata__ (distinct keys; none by default). To
/// re-save a file with its metadata: save_safetensors(out, named, f.metadata()).
inline void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& named,
                             const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  std::vector<const char*> names, keys, values;
  std::vector<const tensor_t*> handles;
  for (const auto& nt : named) {
    names.push_back(nt.first.c_str());
    handles.push_back(nt.second.get());
  }
  for (const auto& kv : metadata) {
    keys.push_back(kv.first.c_str());
    values.push_back(kv.second.c_str());
  }
  detail::check(tensor_save_safetensors_metadata(path.c_str(), names.data(), handles.data(), named.size(),
                                                 keys.data(), values.data(), metadata.size()));
}

}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_HPP
