// c_api-skip: needs libtorch (the torch wheel): .ci/torch_bridge.sh builds and runs it (CI's pytorch stage)
//
// tensor_torch.hpp against the torch wheel's libtorch: to_torch / from_torch share memory
// (same data pointer, sizes, strides, values) for views with offsets, steps, permutations,
// zero strides, no elements, no dims; every libtensor dtype both ways with torch reading
// the same values; the release orders of both sides (deleter counters, reference counts),
// on another thread too; writes seen across; read-only tensors refused by default, copied
// or shared by name, and (in a child) the crash an in-place op on a shared read-only
// mapping is; the refusals of tensors DLPack cannot carry.
//
// Built twice by .ci/torch_bridge.sh: with libtorch's DLPack 1.x API (the default for torch
// >= 2.9), tensor.h included before ATen's DLPack structs; and with
// -DLIBTENSOR_TORCH_DLPACK_VERSIONED=0 -DTEST_TORCH_ATEN_FIRST (the legacy DLManagedTensor
// route), ATen's structs first. Both orders must compile: tensor.h forward-declares the
// DLPack structs that <ATen/dlpack.h> defines.
#ifdef TEST_TORCH_ATEN_FIRST
#include <ATen/dlpack.h>
#endif
#include "tensor.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <type_traits>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tensor_torch.hpp"

// c10 defines a glog-style CHECK; the harness's is used here.
#undef CHECK
#include "harness.h"

namespace {

std::atomic<int> freed{0};

// A tensor of libtensor's over 24 floats 0..23 of its own buffer, whose deleter counts.
tensor::Tensor counted_tensor() {
  float* buf = new float[24];
  for (int i = 0; i < 24; i++) buf[i] = static_cast<float>(i);
  return tensor::Tensor::from_blob(buf, {2, 3, 4}, tensor::kFloat32, [](void* p) {
    delete[] static_cast<float*>(p);
    freed++;
  });
}

// An at::Tensor over 24 floats 0..23 of its own buffer, whose deleter counts.
at::Tensor counted_torch() {
  float* buf = new float[24];
  for (int i = 0; i < 24; i++) buf[i] = static_cast<float>(i);
  return at::from_blob(
      buf, {2, 3, 4},
      [](void* p) {
        delete[] static_cast<float*>(p);
        freed++;
      },
      at::kFloat);
}

std::vector<int64_t> vec(at::IntArrayRef r) { return std::vector<int64_t>(r.begin(), r.end()); }
std::vector<int64_t> vec(tensor::IntArrayRef r) { return r.vec(); }

// Strides as PyTorch's DLPack export writes them: 1 for a dim of size 1 (or 0).
std::vector<int64_t> dlpack_strides(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  for (size_t i = 0; i < sizes.size(); i++)
    if (sizes[i] < 2) strides[i] = 1;
  return strides;
}

// The elements of a tensor of ours and of an at::Tensor, each read by its own library, as
// doubles in C order (complex: the real part).
std::vector<double> ours(const tensor::Tensor& t) {
  tensor::Tensor c = t.to(tensor::kFloat64).contiguous();
  const double* p = static_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}
std::vector<double> theirs(const at::Tensor& a) {
  at::Tensor r = a.is_complex() ? at::real(a) : a;
  at::Tensor c = r.to(at::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// `a` is `v` seen by libtorch: the same memory, sizes, strides (up to DLPack's
// normalization), dtype code and values.
bool same_tensor(const tensor::Tensor& v, const at::Tensor& a) {
  bool ok = vec(a.sizes()) == vec(v.sizes()) &&
            dlpack_strides(vec(a.sizes()), vec(a.strides())) == dlpack_strides(vec(v.sizes()), vec(v.strides())) &&
            static_cast<int32_t>(a.scalar_type()) == static_cast<int32_t>(tensor::to_c(v.dtype())) &&
            ours(v) == theirs(a);
  if (v.numel() > 0) ok = ok && a.data_ptr() == v.data_ptr();
  return ok;
}

// The status of the tensor::Error `f` throws (0 if none), its message in `*what`.
template <class F>
tensor_status_t status_of(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const tensor::Error& e) {
    if (what) *what = e.what();
    return e.status();
  }
  return TENSOR_OK;
}

bool has(const std::string& s, const char* sub) { return s.find(sub) != std::string::npos; }

void views_to_torch() {
  tensor::Tensor t = counted_tensor();
  std::vector<tensor::Tensor> views = {
      t,
      t.slice(1, 1, 3),             // storage offset 4
      t.slice(2, 1, 4, 2),          // a step
      t.permute({2, 0, 1}),         // not contiguous
      t.transpose(0, 2).slice(0, 1, 3),
      t.select(2, 3),               // offset 3, strides {12, 4}
      t.select(0, 1).select(0, 2).select(0, 1),  // no dims
      t.slice(0, 1, 1),             // no elements
      t.select(1, 0).unsqueeze(1).expand({2, 5, 4}),  // a zero stride
      t.as_strided({3, 3}, {5, 1}, 7),  // overlapping rows, offset 7
  };
  for (size_t i = 0; i < views.size(); i++) {
    at::Tensor a = tensor::to_torch(views[i]);
    CHECK(same_tensor(views[i], a));
    if (!same_tensor(views[i], a)) fprintf(stderr, "  to_torch view %zu: %s\n", i, views[i].str().c_str());
  }
  // A write through a torch view reaches exactly those elements of ours, and back.
  tensor::to_torch(t.slice(1, 1, 2)).fill_(-1.0);
  CHECK(t.get_f64({0, 1, 2}) == -1.0 && t.get_f64({1, 1, 3}) == -1.0 && t.get_f64({0, 0, 3}) == 3.0 &&
        t.get_f64({1, 2, 0}) == 20.0);
  at::Tensor a = tensor::to_torch(t);
  a.add_(100);
  CHECK(t.get_f64({0, 0, 0}) == 100.0 && t.get_f64({1, 2, 3}) == 123.0);
  t.set({1, 2, 3}, 5.0);
  CHECK(a[1][2][3].item<double>() == 5.0);
  t.fill_(2.0);
  CHECK(a.sum().item<double>() == 48.0);
}

void views_from_torch() {
  at::Tensor x = at::arange(24, at::kFloat).reshape({2, 3, 4});
  std::vector<at::Tensor> views = {
      x,
      x.slice(1, 1, 3),
      x.slice(2, 1, 4, 2),
      x.permute({2, 0, 1}),
      x.transpose(0, 2).slice(0, 1, 3),
      x.select(2, 3),
      x[1][2][1],
      x.slice(0, 1, 1),
      x.select(1, 0).unsqueeze(1).expand({2, 5, 4}),
      x.as_strided({3, 3}, {5, 1}, 7),
  };
  for (size_t i = 0; i < views.size(); i++) {
    tensor::Tensor b = tensor::from_torch(views[i]);
    CHECK(same_tensor(b, views[i]));
    if (!same_tensor(b, views[i])) fprintf(stderr, "  from_torch view %zu: %s\n", i, b.str().c_str());
  }
  tensor::Tensor b = tensor::from_torch(x);
  x.mul_(2);  // an in-place torch op, seen by libtensor
  CHECK(b.get_f64({1, 2, 3}) == 46.0);
  b.set({0, 1, 2}, -3.0);
  b.slice(0, 1, 2).fill_(9.0);
  CHECK(x[0][1][2].item<double>() == -3.0 && x[1][0][0].item<double>() == 9.0 && x[0][2][3].item<double>() == 22.0);
  // Views of libtensor's over a from_torch'd tensor write into torch's memory too.
  tensor::from_torch(x.select(2, 0)).fill_(0.0);
  CHECK(x.select(2, 0).abs().sum().item<double>() == 0.0 && x[0][0][1].item<double>() == 2.0);
}

const tensor::Dtype kAllDtypes[] = {
    tensor::kUInt8,   tensor::kInt8,         tensor::kInt16,         tensor::kInt32,  tensor::kInt64,
    tensor::kFloat16, tensor::kFloat32,      tensor::kFloat64,       tensor::kComplexFloat,
    tensor::kComplexDouble, tensor::kBool,   tensor::kBFloat16,      tensor::kUInt16, tensor::kUInt32,
    tensor::kUInt64,
};

void dtypes() {
  for (tensor::Dtype d : kAllDtypes) {
    const bool is_bool = d == tensor::kBool;
    // Ours, values 0..11 (bool: alternating), seen by torch through a transposed view.
    tensor::Tensor t = tensor::Tensor::zeros({3, 4}, d);
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 4; j++) t.set({i, j}, is_bool ? static_cast<double>((i + j) % 2) : 4.0 * i + j);
    tensor::Tensor v = t.t();
    at::Tensor a = tensor::to_torch(v);
    CHECK(same_tensor(v, a));
    // Torch's, of that dtype (its code is the dtype's), seen by libtensor.
    const auto st = static_cast<at::ScalarType>(tensor::to_c(d));
    at::Tensor x = (is_bool ? at::arange(12).remainder(3) : at::arange(12)).reshape({3, 4}).to(st).t();
    tensor::Tensor b = tensor::from_torch(x);
    CHECK(b.dtype() == d && same_tensor(b, x));
    if (!same_tensor(v, a) || b.dtype() != d || !same_tensor(b, x))
      fprintf(stderr, "  dtype %s: torch has %s\n", tensor::name(d), c10::toString(a.scalar_type()));
  }
  // Torch dtypes with no DLPack code, or none of libtensor's.
  std::string what;
  CHECK(status_of([] { tensor::from_torch(at::zeros({2}, at::kComplexHalf)); }, &what) == TENSOR_ERR_DTYPE &&
        has(what, "ComplexHalf"));
  CHECK(status_of([] { tensor::from_torch(at::quantize_per_tensor(at::ones({2}), 0.5, 0, at::kQInt8)); }, &what) ==
            TENSOR_ERR_DTYPE &&
        has(what, "QInt8"));
  at::Tensor f8 = at::arange(4).to(at::kFloat8_e4m3fn);
#ifdef TENSOR_FLOAT8_E4M3FN
  tensor::Tensor b8 = tensor::from_torch(f8);
  CHECK(tensor::to_c(b8.dtype()) == TENSOR_FLOAT8_E4M3FN && b8.data_ptr() == f8.data_ptr());
  CHECK(tensor::to_torch(b8).scalar_type() == at::kFloat8_e4m3fn);
#else
  CHECK(status_of([&] { tensor::from_torch(f8); }, &what) == TENSOR_ERR_DTYPE && has(what, "Float8_e4m3fn"));
  CHECK(f8.storage().use_count() == 1);  // torch's export, refused by libtensor, was released
#endif
}

// Release one of three handles (0: ours, 1: torch's, 2: ours or torch's second one).
template <class A, class B, class C>
void release(int which, A& a, B& b, C& c) {
  if (which == 0) a = A();
  if (which == 1) b = B();
  if (which == 2) c = C();
}

void lifetimes() {
  // to_torch: ours released first, then torch's; then the other way round.
  {
    freed = 0;
    tensor::Tensor t = counted_tensor();
    at::Tensor a = tensor::to_torch(t);
    CHECK(t.use_count() == 2);  // the export's reference
    t = tensor::Tensor();
    CHECK(freed == 0 && a[1][2][3].item<double>() == 23.0);
    a = at::Tensor();
    CHECK(freed == 1);
  }
  {
    freed = 0;
    tensor::Tensor t = counted_tensor();
    at::Tensor a = tensor::to_torch(t.slice(0, 1, 2));
    a = at::Tensor();
    CHECK(freed == 0 && t.use_count() == 1 && t.get_f64({1, 2, 3}) == 23.0);
    t = tensor::Tensor();
    CHECK(freed == 1);
  }
  // from_torch: torch's released first, then ours; then the other way round.
  {
    freed = 0;
    at::Tensor x = counted_torch();
    tensor::Tensor b = tensor::from_torch(x);
    CHECK(x.storage().use_count() == 2);  // the export's at::Tensor
    x = at::Tensor();
    CHECK(freed == 0 && b.get_f64({1, 2, 3}) == 23.0);
    b = tensor::Tensor();
    CHECK(freed == 1);
  }
  {
    freed = 0;
    at::Tensor x = counted_torch();
    tensor::Tensor b = tensor::from_torch(x.slice(0, 1, 2));
    b = tensor::Tensor();
    CHECK(freed == 0 && x.storage().use_count() == 1 && x[1][2][3].item<double>() == 23.0);
    x = at::Tensor();
    CHECK(freed == 1);
  }
  // Round trips, the three handles released in every order: the memory is freed once, last.
  int order[3] = {0, 1, 2};
  do {
    freed = 0;
    tensor::Tensor t = counted_tensor();
    at::Tensor a = tensor::to_torch(t);
    tensor::Tensor b = tensor::from_torch(a);
    CHECK(b.data_ptr() == t.data_ptr());
    for (int k = 0; k < 3; k++) {
      release(order[k], t, a, b);
      CHECK(freed == (k == 2 ? 1 : 0));
    }
    freed = 0;
    at::Tensor x = counted_torch();
    tensor::Tensor y = tensor::from_torch(x);
    at::Tensor z = tensor::to_torch(y);
    CHECK(z.data_ptr() == x.data_ptr());
    for (int k = 0; k < 3; k++) {
      release(order[k], y, x, z);
      CHECK(freed == (k == 2 ? 1 : 0));
    }
  } while (std::next_permutation(order, order + 3));
  // The last reference dropped on another thread runs the deleter there.
  {
    freed = 0;
    tensor::Tensor t = counted_tensor();
    at::Tensor a = tensor::to_torch(t);
    t = tensor::Tensor();
    std::thread([&a] { a = at::Tensor(); }).join();
    CHECK(freed == 1);
    freed = 0;
    at::Tensor x = counted_torch();
    tensor::Tensor b = tensor::from_torch(x);
    x = at::Tensor();
    std::thread([&b] { b = tensor::Tensor(); }).join();
    CHECK(freed == 1);
  }
  // While libtorch holds a tensor's memory, its storage does not move.
  {
    tensor::Tensor t = tensor::Tensor::zeros({4});
    at::Tensor a = tensor::to_torch(t);
    CHECK(status_of([&] { t.storage().resize(4096); }) == TENSOR_ERR_NOT_RESIZABLE);
    a = at::Tensor();
    CHECK(status_of([&] { t.storage().resize(4096); }) == TENSOR_OK);
  }
}

void read_only() {
  std::string what;
  // A storage marked read-only (heap memory).
  tensor::Tensor t = tensor::Tensor::arange(6, tensor::kFloat32);
  t.storage().mark_read_only();
  CHECK(status_of([&] { tensor::to_torch(t); }, &what) == TENSOR_ERR_READ_ONLY && has(what, "to_torch") &&
        has(what, "read-only") && has(what, "TorchReadOnly::Copy") && has(what, "TorchReadOnly::Share"));
  CHECK(t.use_count() == 1);  // nothing exported
  at::Tensor c = tensor::to_torch(t, tensor::TorchReadOnly::Copy);
  CHECK(c.data_ptr() != t.data_ptr() && theirs(c) == ours(t));
  c.add_(1);
  CHECK(t.get_f64({5}) == 5.0 && c[5].item<double>() == 6.0);
  at::Tensor s = tensor::to_torch(t, tensor::TorchReadOnly::Share);
  CHECK(s.data_ptr() == t.data_ptr() && theirs(s) == ours(t));
  CHECK(tensor::to_torch(t, tensor::read_only).data_ptr() == t.data_ptr());
  // A writable tensor is shared whatever the policy.
  tensor::Tensor w = tensor::Tensor::arange(6, tensor::kFloat32);
  CHECK(tensor::to_torch(w, tensor::TorchReadOnly::Copy).data_ptr() == w.data_ptr());
  CHECK(tensor::to_torch(w, tensor::TorchReadOnly::Share).data_ptr() == w.data_ptr());
  // A read-only mapping (load_npy's default): read-only pages.
  char path[] = "/tmp/libtensor_torch_XXXXXX.npy";
  int fd = mkstemps(path, 4);
  CHECK(fd >= 0);
  close(fd);
  tensor::Tensor::arange(8, tensor::kFloat32).save_npy(path);
  tensor::Tensor m = tensor::Tensor::load_npy(path);
  unlink(path);
  CHECK(m.is_read_only() && m.storage().is_mapped());
  CHECK(status_of([&] { tensor::to_torch(m); }) == TENSOR_ERR_READ_ONLY);
  at::Tensor shared = tensor::to_torch(m, tensor::read_only);
  CHECK(shared.sum().item<double>() == 28.0 && shared.data_ptr() == m.data_ptr());
  // What the refusal guards against: libtorch ignores DLPack's read-only flag, and an
  // in-place op on the shared mapping dies on its pages (in a child; not under valgrind).
  if (!getenv("TENSOR_TEST_UNDER_VALGRIND")) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      shared.add_(1);
      _exit(0);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
  }
  at::Tensor copy = tensor::to_torch(m, tensor::TorchReadOnly::Copy);
  copy.add_(1);
  CHECK(copy.sum().item<double>() == 36.0 && m.get_f64({7}) == 7.0);
}

void refusals() {
  std::string what;
  CHECK(status_of([] { tensor::to_torch(tensor::Tensor()); }) == TENSOR_ERR_NULL_POINTER);
  CHECK(status_of([] { tensor::from_torch(at::Tensor()); }) == TENSOR_ERR_NULL_POINTER);
  CHECK(status_of([] { tensor::from_torch(at::ones({2, 2}).to_sparse()); }, &what) == TENSOR_ERR_INVALID_ARGUMENT &&
        has(what, "Sparse") && has(what, "to_dense()"));
  at::Tensor z = at::ones({2}, at::kComplexFloat).conj();
  CHECK(z.is_conj());
  CHECK(status_of([&] { tensor::from_torch(z); }, &what) == TENSOR_ERR_INVALID_ARGUMENT && has(what, "resolve_conj()"));
  CHECK(tensor::from_torch(z.resolve_conj()).dtype() == tensor::kComplexFloat);
  at::Tensor n = at::_neg_view(at::ones({2}));
  CHECK(n.is_neg());
  CHECK(status_of([&] { tensor::from_torch(n); }, &what) == TENSOR_ERR_INVALID_ARGUMENT && has(what, "resolve_neg()"));
  // Devices: libtorch has no Hexagon; a meta tensor has no memory. Refused, nothing kept.
  freed = 0;
  float* buf = new float[2];
  tensor::Tensor h = tensor::Tensor::from_blob(
      buf, {2}, tensor::kFloat32, [](void* q) { delete[] static_cast<float*>(q); freed++; }, {},
      tensor::Device(tensor::DeviceType::Hexagon));
  CHECK(status_of([&] { tensor::to_torch(h); }, &what) == TENSOR_ERR_DEVICE && has(what, "to_torch"));
  CHECK(h.use_count() == 1);  // the refused export was released
  h = tensor::Tensor();
  CHECK(freed == 1);
  CHECK(status_of([] { tensor::from_torch(at::empty({2}, at::device(at::kMeta))); }, &what) == TENSOR_ERR_DEVICE);
  // A parameter that requires grad is shared as it is (autograd records nothing).
  at::Tensor p = at::ones({3}).set_requires_grad(true);
  tensor::Tensor b = tensor::from_torch(p);
  CHECK(b.data_ptr() == p.data_ptr() && !p.grad_fn());
}

// DLPack 1.3's C exchange API against the real dlpack.h (ATen's copy): tensor.h's forward
// declaration is its struct DLPackExchangeAPI, the Rust table has its layout byte for byte,
// and a tensor from the table's allocator is consumed by libtorch (at::fromDLPackVersioned).
static_assert(std::is_same_v<decltype(tensor_dlpack_exchange_api()), const DLPackExchangeAPI*>);
static_assert(sizeof(DLPackExchangeAPIHeader) == 16 && offsetof(DLPackExchangeAPIHeader, prev_api) == 8);
static_assert(sizeof(DLPackExchangeAPI) == 56 && alignof(DLPackExchangeAPI) == 8);
static_assert(offsetof(DLPackExchangeAPI, managed_tensor_allocator) == 16);
static_assert(offsetof(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync) == 24);
static_assert(offsetof(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync) == 32);
static_assert(offsetof(DLPackExchangeAPI, dltensor_from_py_object_no_sync) == 40);
static_assert(offsetof(DLPackExchangeAPI, current_work_stream) == 48);

int set_error_calls = 0;
std::string set_error_kind;

void exchange_api() {
  const DLPackExchangeAPI* api = tensor_dlpack_exchange_api();
  CHECK(api->header.version.major == DLPACK_MAJOR_VERSION && api->header.version.minor == DLPACK_MINOR_VERSION);
  CHECK(api->header.prev_api == nullptr);
  CHECK(api->managed_tensor_allocator ==
        reinterpret_cast<DLPackManagedTensorAllocator>(&tensor_dlpack_managed_tensor_allocator));
  CHECK(api->managed_tensor_from_py_object_no_sync == nullptr && api->managed_tensor_to_py_object_no_sync == nullptr &&
        api->dltensor_from_py_object_no_sync == nullptr);
  void* stream = &stream;
  CHECK(api->current_work_stream(kDLCPU, 0, &stream) == 0 && stream == nullptr);
  int64_t shape[2] = {3, 5};
  DLTensor proto{};
  proto.device = DLDevice{kDLCPU, 0};
  proto.ndim = 2;
  proto.dtype = DLDataType{kDLFloat, 32, 1};
  proto.shape = shape;
  auto set_error = [](void*, const char* kind, const char*) {
    set_error_calls++;
    set_error_kind = kind;
  };
  DLManagedTensorVersioned* m = nullptr;
  CHECK(api->managed_tensor_allocator(&proto, &m, nullptr, set_error) == 0 && m != nullptr);
  CHECK(set_error_calls == 0);
#if LIBTENSOR_TORCH_DLPACK_VERSIONED
  if (m) {
    at::Tensor x = at::fromDLPackVersioned(m);  // libtorch owns it now, and calls the deleter
    CHECK(x.sizes() == at::IntArrayRef({3, 5}) && x.strides() == at::IntArrayRef({5, 1}));
    CHECK(x.scalar_type() == at::kFloat && x.device().is_cpu());
    x.fill_(2.0f);
    CHECK(x.sum().item<float>() == 30.0f);
  }
  // libtorch's own export of the same shape has the same geometry.
  DLManagedTensorVersioned* theirs = at::toDLPackVersioned(at::empty({3, 5}));
  CHECK(theirs->version.major == 1 && theirs->dl_tensor.strides[0] == 5 && theirs->dl_tensor.strides[1] == 1);
  theirs->deleter(theirs);
#else
  if (m) m->deleter(m);
#endif
  proto.device = DLDevice{kDLCUDA, 0};
  m = nullptr;
  CHECK(api->managed_tensor_allocator(&proto, &m, nullptr, set_error) == -1 && m == nullptr);
  CHECK(set_error_calls == 1 && set_error_kind == "ValueError");
}

}  // namespace

int main() {
  views_to_torch();
  views_from_torch();
  dtypes();
  lifetimes();
  read_only();
  refusals();
  exchange_api();
  return harness_finish(LIBTENSOR_TORCH_DLPACK_VERSIONED ? "torch (DLPack 1.x)" : "torch (legacy DLPack)");
}
