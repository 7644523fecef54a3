// libtensor C++ layer: a header-only RAII wrapper over the C API of tensor.h, shaped like
// at::Tensor. It adds no state: a tensor::Tensor is exactly one tensor_t* (one strong
// reference), copying retains, destruction releases. Every failed call throws
// tensor::Error, whose what() is the library's message and status() its status code.
//
//   tensor::Tensor img = tensor::Tensor::from_blob(buf, {480, 640, 3}, TENSOR_UINT8,
//                                                  [](void* p) { free(p); });
//   tensor::Tensor chw = img.permute({2, 0, 1});          // a view: no copy
//   std::cout << chw.select(0, 1).slice(0, 0, 2) << "\n";
#ifndef LIBTENSOR_TENSOR_HPP
#define LIBTENSOR_TENSOR_HPP

#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor.h"

namespace tensor {

/// Thrown on any status != TENSOR_OK; what() is tensor_last_error()'s text.
class Error : public std::runtime_error {
 public:
  Error(tensor_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  tensor_status_t status() const noexcept { return status_; }

 private:
  tensor_status_t status_;
};

namespace detail {
inline void check(tensor_status_t s) {
  if (s != TENSOR_OK) throw Error(s, tensor_last_error());
}
}  // namespace detail

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
#define LIBTENSOR_DTYPE_OF(T, D) \
  template <>                    \
  struct dtype_of<T> {           \
    static constexpr tensor_dtype_t value = D; \
  };
LIBTENSOR_DTYPE_OF(uint8_t, TENSOR_UINT8)
LIBTENSOR_DTYPE_OF(int8_t, TENSOR_INT8)
LIBTENSOR_DTYPE_OF(int16_t, TENSOR_INT16)
LIBTENSOR_DTYPE_OF(int32_t, TENSOR_INT32)
LIBTENSOR_DTYPE_OF(int64_t, TENSOR_INT64)
LIBTENSOR_DTYPE_OF(Half, TENSOR_FLOAT16)
LIBTENSOR_DTYPE_OF(float, TENSOR_FLOAT32)
LIBTENSOR_DTYPE_OF(double, TENSOR_FLOAT64)
LIBTENSOR_DTYPE_OF(std::complex<float>, TENSOR_COMPLEX64)
LIBTENSOR_DTYPE_OF(std::complex<double>, TENSOR_COMPLEX128)
LIBTENSOR_DTYPE_OF(bool, TENSOR_BOOL)
LIBTENSOR_DTYPE_OF(BFloat16, TENSOR_BFLOAT16)
LIBTENSOR_DTYPE_OF(uint16_t, TENSOR_UINT16)
LIBTENSOR_DTYPE_OF(uint32_t, TENSOR_UINT32)
LIBTENSOR_DTYPE_OF(uint64_t, TENSOR_UINT64)
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
  /// Gives up ownership of the handle (+1) to the caller; *this becomes undefined.
  tensor_t* release() noexcept {
    tensor_t* p = impl_;
    impl_ = nullptr;
    return p;
  }
  bool defined() const noexcept { return impl_ != nullptr; }
  uint64_t use_count() const noexcept { return tensor_use_count(impl_); }

  // ---- creation -----------------------------------------------------------------------
  static Tensor empty(IntList sizes, tensor_dtype_t dtype = TENSOR_FLOAT32) {
    return make([&](tensor_t** o) { return tensor_empty(sizes.data(), sizes.size(), dtype, o); });
  }
  static Tensor empty_strided(IntList sizes, IntList strides, tensor_dtype_t dtype = TENSOR_FLOAT32) {
    check_same_length(sizes, strides, "empty_strided");
    return make([&](tensor_t** o) {
      return tensor_empty_strided(sizes.data(), strides.data(), sizes.size(), dtype, o);
    });
  }
  static Tensor zeros(IntList sizes, tensor_dtype_t dtype = TENSOR_FLOAT32) {
    return make([&](tensor_t** o) { return tensor_zeros(sizes.data(), sizes.size(), dtype, o); });
  }
  static Tensor ones(IntList sizes, tensor_dtype_t dtype = TENSOR_FLOAT32) {
    return make([&](tensor_t** o) { return tensor_ones(sizes.data(), sizes.size(), dtype, o); });
  }
  static Tensor full(IntList sizes, double value, tensor_dtype_t dtype = TENSOR_FLOAT32) {
    return make([&](tensor_t** o) { return tensor_full(sizes.data(), sizes.size(), dtype, value, o); });
  }
  static Tensor arange(int64_t n, tensor_dtype_t dtype = TENSOR_INT64) {
    return make([&](tensor_t** o) { return tensor_arange(n, dtype, o); });
  }
  /// Wraps memory owned elsewhere without copying. `deleter(data)` runs exactly once when
  /// the last reference dies; if this throws, it never runs and the caller keeps `data`.
  /// Empty `strides` means contiguous.
  static Tensor from_blob(void* data, IntList sizes, tensor_dtype_t dtype,
                          std::function<void(void*)> deleter = {}, IntList strides = {},
                          tensor_device_t device = tensor_device_t{1, 0}) {
    if (strides.size() != 0) check_same_length(sizes, strides, "from_blob");
    detail::Deleter* ctx = deleter ? new detail::Deleter(std::move(deleter)) : nullptr;
    tensor_t* out = nullptr;
    tensor_status_t s = tensor_from_blob(data, sizes.data(), strides.size() ? strides.data() : nullptr,
                                         sizes.size(), dtype, device,
                                         ctx ? &detail::libtensor_hpp_run_deleter : nullptr, ctx, &out);
    if (s != TENSOR_OK) {
      delete ctx;  // the library did not take ownership
      detail::check(s);
    }
    return Tensor(out);
  }
  Tensor empty_like(tensor_memory_format_t f = TENSOR_PRESERVE_FORMAT) const {
    return make([&](tensor_t** o) { return tensor_empty_like(impl_, f, o); });
  }
  /// Loads a .npy file as a view over a mapping of it (no copy), like
  /// numpy.load(path, mmap_mode="r") for the default mode.
  static Tensor load_npy(const std::string& path, tensor_map_mode_t mode = TENSOR_MAP_READ_ONLY) {
    return make([&](tensor_t** o) { return tensor_load_npy(path.c_str(), mode, o); });
  }
  /// Writes this tensor to a .npy file (C order) that numpy.load reads.
  void save_npy(const std::string& path) const { detail::check(tensor_save_npy(path.c_str(), impl_)); }

  // ---- metadata -----------------------------------------------------------------------
  int64_t dim() const { return tensor_ndim(impl_); }
  IntArrayRef sizes() const { return IntArrayRef(tensor_sizes(impl_), static_cast<size_t>(dim())); }
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
  tensor_dtype_t dtype() const { return tensor_dtype(impl_); }
  size_t itemsize() const { return tensor_itemsize(impl_); }
  size_t nbytes() const { return tensor_nbytes(impl_); }
  tensor_device_t device() const { return tensor_device(impl_); }
  int64_t storage_offset() const { return tensor_storage_offset(impl_); }
  void* data_ptr() const { return tensor_data_ptr(impl_); }
  /// The data as T*; throws TENSOR_ERR_DTYPE when T does not match dtype().
  template <class T>
  T* data_ptr() const {
    if (detail::dtype_of<T>::value != dtype())
      throw Error(TENSOR_ERR_DTYPE, std::string("data_ptr: tensor has dtype ") +
                                        tensor_dtype_name(dtype()) + ", not " +
                                        tensor_dtype_name(detail::dtype_of<T>::value));
    return static_cast<T*>(data_ptr());
  }
  bool is_contiguous(tensor_memory_format_t f = TENSOR_CONTIGUOUS_FORMAT) const {
    return tensor_is_contiguous(impl_, f);
  }
  bool is_non_overlapping_and_dense() const { return tensor_is_non_overlapping_and_dense(impl_); }
  tensor_memory_format_t suggest_memory_format() const { return tensor_suggest_memory_format(impl_); }
  bool shares_storage(const Tensor& o) const { return tensor_shares_storage(impl_, o.impl_); }
  uint64_t version() const { return tensor_version(impl_); }
  inline Storage storage() const;

  // ---- views (no data is copied) --------------------------------------------------------
  Tensor view(IntList sizes) const {
    return make([&](tensor_t** o) { return tensor_view(impl_, sizes.data(), sizes.size(), o); });
  }
  Tensor view_dtype(tensor_dtype_t d) const {
    return make([&](tensor_t** o) { return tensor_view_dtype(impl_, d, o); });
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
  Tensor contiguous(tensor_memory_format_t f = TENSOR_CONTIGUOUS_FORMAT) const {
    return make([&](tensor_t** o) { return tensor_contiguous(impl_, f, o); });
  }
  Tensor clone(tensor_memory_format_t f = TENSOR_PRESERVE_FORMAT) const {
    return make([&](tensor_t** o) { return tensor_clone(impl_, f, o); });
  }
  Tensor to(tensor_dtype_t d) const {
    return make([&](tensor_t** o) { return tensor_to_dtype(impl_, d, o); });
  }
  Tensor repeat(IntList reps) const {
    return make([&](tensor_t** o) { return tensor_repeat(impl_, reps.data(), reps.size(), o); });
  }
  Tensor& copy_(const Tensor& src) {
    detail::check(tensor_copy_(impl_, src.impl_));
    return *this;
  }
  Tensor& fill_(double v) {
    detail::check(tensor_fill_f64(impl_, v));
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
      throw Error(TENSOR_ERR_SHAPE, "item: a Tensor with " + std::to_string(numel()) +
                                        " elements cannot be converted to Scalar");
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
      throw Error(TENSOR_ERR_INVALID_ARGUMENT, std::string(fn) + ": sizes has " + std::to_string(a.size()) +
                                                   " entries but strides has " + std::to_string(b.size()));
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
  storage_t* release() noexcept {
    storage_t* p = impl_;
    impl_ = nullptr;
    return p;
  }
  bool defined() const noexcept { return impl_ != nullptr; }
  uint64_t use_count() const noexcept { return storage_use_count(impl_); }
  uint64_t weak_count() const noexcept { return storage_weak_count(impl_); }
  void* data() const noexcept { return storage_data_ptr(impl_); }
  size_t nbytes() const noexcept { return storage_nbytes(impl_); }
  tensor_device_t device() const noexcept { return storage_device(impl_); }
  bool is_resizable() const noexcept { return storage_is_resizable(impl_); }
  bool is_read_only() const noexcept { return storage_is_read_only(impl_); }
  void resize(size_t nbytes) { detail::check(storage_resize(impl_, nbytes)); }
  void mark_read_only() { detail::check(storage_mark_read_only(impl_)); }
  /// A tensor over this storage (bounds-checked); empty `strides` means contiguous.
  Tensor tensor(IntList sizes, tensor_dtype_t dtype, int64_t offset = 0, IntList strides = {}) const {
    tensor_t* out = nullptr;
    if (strides.size() != 0 && strides.size() != sizes.size())
      throw Error(TENSOR_ERR_INVALID_ARGUMENT, "Storage::tensor: sizes and strides differ in length");
    detail::check(tensor_from_storage(impl_, offset, sizes.data(), strides.size() ? strides.data() : nullptr,
                                      sizes.size(), dtype, &out));
    return Tensor::adopt(out);
  }
  inline WeakStorage weak() const;

  // ---- mapped files and shared memory ---------------------------------------------------
  /// `nbytes` bytes at `offset` of the file at `path` (default: all of it), mapped: no copy.
  static Storage from_file(const std::string& path, uint64_t offset = 0, uint64_t nbytes = TENSOR_MAP_TO_END,
                           tensor_map_mode_t mode = TENSOR_MAP_READ_ONLY) {
    storage_t* out = nullptr;
    detail::check(storage_from_file(path.c_str(), offset, nbytes, mode, &out));
    return Storage(out);
  }
  /// A mapping of an open descriptor (e.g. a shared-memory segment received from another
  /// process); the caller keeps `fd`.
  static Storage from_fd(int fd, uint64_t offset = 0, uint64_t nbytes = TENSOR_MAP_TO_END,
                         tensor_map_mode_t mode = TENSOR_MAP_READ_ONLY) {
    storage_t* out = nullptr;
    detail::check(storage_from_fd(fd, offset, nbytes, mode, &out));
    return Storage(out);
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

/// A loaded .safetensors file: its tensors, read-only views over one mapping of the file.
/// Move-only; the tensors stay valid after it is destroyed.
///
///   tensor::SafetensorsFile f("model.safetensors");
///   tensor::Tensor w = f["encoder.weight"];
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path) : impl_(nullptr) {
    detail::check(tensor_safetensors_load(path.c_str(), &impl_));
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
    if (!n) throw Error(TENSOR_ERR_INDEX, "SafetensorsFile::name: index " + std::to_string(i) + " out of range");
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

 private:
  tensor_safetensors_t* impl_;
};

/// Writes named tensors to a .safetensors file that the Python safetensors package reads.
inline void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<const char*> names;
  std::vector<const tensor_t*> handles;
  for (const auto& nt : named) {
    names.push_back(nt.first.c_str());
    handles.push_back(nt.second.get());
  }
  detail::check(tensor_save_safetensors(path.c_str(), names.data(), handles.data(), named.size()));
}

}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_HPP
