// tensor.hpp's typed layer: the scoped Dtype, dtype_of<T>(), data_ptr<T>() checked against
// the dtype, accessor<T, N>() (strided, checked once, bounds-checked in debug builds),
// from_blob_bytes (byte strides) and copy_affine_.
#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "harness.h"
#include "tensor.hpp"

static_assert(!std::is_convertible<int, tensor::Dtype>::value, "an int must not convert to a Dtype");
static_assert(!std::is_convertible<tensor::Dtype, int>::value, "a Dtype must not convert to an int");
static_assert(tensor::dtype_of<float>() == tensor::kFloat32, "float");
static_assert(tensor::dtype_of<const uint8_t>() == tensor::kUInt8, "const uint8_t");
static_assert(tensor::dtype_of<tensor::Half>() == tensor::kHalf, "Half");
static_assert(tensor::dtype_of<int64_t>() == tensor::kLong, "int64_t");
static_assert(tensor::to_c(tensor::kFloat64) == TENSOR_FLOAT64, "codes are the C API's");
static_assert(!std::is_convertible<int, tensor::MemoryFormat>::value, "an int must not convert to a MemoryFormat");
static_assert(!std::is_convertible<int, tensor::MapMode>::value, "an int must not convert to a MapMode");
static_assert(!std::is_convertible<int, tensor::DeviceType>::value, "an int must not convert to a DeviceType");
static_assert(!std::is_convertible<int, tensor::Device>::value, "an int must not convert to a Device");
static_assert(tensor::to_c(tensor::MemoryFormat::ChannelsLast) == TENSOR_CHANNELS_LAST, "C codes");
static_assert(tensor::to_c(tensor::MemoryFormat::ChannelsLast3d) == TENSOR_CHANNELS_LAST_3D, "C codes");
static_assert(tensor::to_c(tensor::MapMode::Private) == TENSOR_MAP_PRIVATE, "C codes");
static_assert(tensor::Device().is_cpu() && tensor::Device().to_c().device_type == 1, "the default is the CPU");

template <class F>
static tensor_status_t status_of(F&& f) {
  try {
    f();
  } catch (const tensor::Error& e) {
    return e.status();
  }
  return TENSOR_OK;
}

static void test_dtype_and_data_ptr() {
  tensor::Tensor t = tensor::Tensor::arange(6, tensor::kInt32).view({2, 3});
  CHECK(t.dtype() == tensor::kInt32);
  CHECK(std::string(tensor::name(t.dtype())) == "int32");
  CHECK(t.data_ptr<int32_t>()[4] == 4);
  CHECK(status_of([&] { t.data_ptr<float>(); }) == TENSOR_ERR_DTYPE);
  CHECK(status_of([&] { t.data_ptr<uint32_t>(); }) == TENSOR_ERR_DTYPE);
  CHECK(t.to(tensor::kFloat64).dtype() == tensor::kDouble);
}

// Memory formats and devices as scoped enums reach the C API with the right codes.
static void test_formats_and_devices() {
  tensor::Tensor x = tensor::Tensor::arange(2 * 3 * 4 * 5, tensor::kFloat32).view({2, 3, 4, 5});
  CHECK(x.suggest_memory_format() == tensor::MemoryFormat::Contiguous);
  tensor::Tensor cl = x.contiguous(tensor::MemoryFormat::ChannelsLast);
  CHECK(cl.stride(1) == 1 && cl.stride(3) == 3 && cl.equal(x));  // NHWC strides, same values
  CHECK(cl.is_contiguous(tensor::MemoryFormat::ChannelsLast) && !cl.is_contiguous());
  CHECK(cl.suggest_memory_format() == tensor::MemoryFormat::ChannelsLast);
  CHECK(cl.clone().stride(1) == 1);                                  // Preserve by default
  CHECK(cl.clone(tensor::MemoryFormat::Contiguous).is_contiguous());
  CHECK(cl.empty_like().stride(1) == 1);
  CHECK(status_of([&] { x.contiguous(tensor::MemoryFormat::ChannelsLast3d); }) != TENSOR_OK);  // 4-D

  CHECK(x.device() == tensor::Device(tensor::DeviceType::CPU, 0) && x.device().is_cpu());
  CHECK(x.storage().device() == tensor::Device());
  static float fake[4];  // never read: a CUDA tensor's data is not host-accessible
  tensor::Tensor g = tensor::Tensor::from_blob(fake, {4}, tensor::kFloat32, {}, {},
                                               tensor::Device(tensor::DeviceType::CUDA, 1));
  CHECK(g.device().type() == tensor::DeviceType::CUDA && g.device().index() == 1 && !g.device().is_cpu());
  CHECK(g.device() != tensor::Device(tensor::DeviceType::CUDA, 0));
  CHECK(tensor_device(g.get()).device_type == 2 && tensor_device(g.get()).device_id == 1);
  CHECK(status_of([&] { g.get_f64({0}); }) == TENSOR_ERR_DEVICE);
}

static void test_accessor() {
  // A transposed, sliced view: the accessor follows the strides.
  tensor::Tensor base = tensor::Tensor::arange(24, tensor::kFloat32).view({4, 6});
  tensor::Tensor v = base.t().slice(0, 1, 6, 2);  // [3, 4], strides [2, 6]
  auto a = v.accessor<float, 2>();
  CHECK(a.size(0) == 3 && a.size(1) == 4 && a.stride(0) == 2 && a.stride(1) == 6);
  bool same = true;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 4; j++) same = same && a[i][j] == static_cast<float>(v.get_f64({i, j}));
  CHECK(same);
  a[2][3] = -1.0f;  // writes through to the base
  CHECK(base.get_f64({3, 5}) == -1.0);
  auto b = base.accessor<float, 2>()[1];  // a row: TensorAccessor<float, 1>
  CHECK(b[2] == 8.0f);
  CHECK(status_of([&] { base.accessor<double, 2>(); }) == TENSOR_ERR_DTYPE);
  CHECK(status_of([&] { base.accessor<float, 3>(); }) == TENSOR_ERR_INVALID_ARGUMENT);
#ifndef NDEBUG
  CHECK(status_of([&] { (void)a[3]; }) == TENSOR_ERR_INDEX);
  CHECK(status_of([&] { (void)a[0][-1]; }) == TENSOR_ERR_INDEX);
  CHECK(status_of([&] { (void)b[6]; }) == TENSOR_ERR_INDEX);
#endif
}

static void test_from_blob_bytes() {
  // A 2x3 float image in rows of 4 floats (16-byte step), as a padded cv::Mat gives it.
  float* buf = static_cast<float*>(malloc(8 * sizeof(float)));
  for (int i = 0; i < 8; i++) buf[i] = static_cast<float>(i);
  int deleted = 0;
  {
    tensor::Tensor t = tensor::Tensor::from_blob_bytes(buf, {2, 3}, {16, 4}, tensor::kFloat32, [&](void* p) {
      ++deleted;
      free(p);
    });
    CHECK(t.stride(0) == 4 && t.stride(1) == 1);
    CHECK((t.accessor<float, 2>()[1][2] == 6.0f));
  }
  CHECK(deleted == 1);
  float local[8] = {0};
  tensor_status_t st = status_of([&] {
    tensor::Tensor::from_blob_bytes(local, {2, 3}, {14, 4}, tensor::kFloat32, [&](void*) { ++deleted; });
  });
  CHECK(st == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(deleted == 1);
}

static void test_copy_affine() {
  tensor::Tensor img = tensor::Tensor::arange(2 * 3 * 3, tensor::kInt64).to(tensor::kUInt8).view({2, 3, 3});
  tensor::Tensor out = tensor::Tensor::empty({3, 2, 3}, tensor::kFloat32);
  out.copy_affine_(img.permute({2, 0, 1}), 0, {1.0, 10.0, 100.0}, {0.5, 0.0, -1.0});
  auto o = out.accessor<float, 3>();
  CHECK(o[0][1][2] == 15.0f * 1.0f + 0.5f);   // img[1][2][0] = 15
  CHECK(o[2][0][1] == 5.0f * 100.0f - 1.0f);  // img[0][1][2] = 5
  out.copy_affine_(img.permute({2, 0, 1}), 2.0, 0.0);
  CHECK(o[1][1][1] == 26.0f);  // img[1][1][1] = 13
  out.copy_affine_(img.permute({2, 0, 1}), 0, {1.0, 10.0, 100.0}, {0.5, 0.0, -1.0}, {2, 1, 0});
  CHECK(o[0][1][2] == 17.0f * 1.0f + 0.5f);   // img[1][2][2] = 17: channel 0 reads 2
  CHECK(o[2][0][1] == 3.0f * 100.0f - 1.0f);  // img[0][1][0] = 3: channel 2 reads 0
  tensor::Tensor chw = img.permute({2, 0, 1});
  std::vector<double> two = {1.0, 2.0}, three = {1.0, 2.0, 3.0}, one = {0.0};
  CHECK(status_of([&] { out.copy_affine_(chw, 0, two, two); }) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { out.copy_affine_(chw, 0, one, one, {2, 1}); }) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { out.copy_affine_(chw, 0, one, one, {2, 1, 3}); }) == TENSOR_ERR_INDEX);
  CHECK(status_of([&] { out.copy_affine_(chw, 0, three, one); }) == TENSOR_ERR_INVALID_ARGUMENT);
}

int main() {
  test_dtype_and_data_ptr();
  test_formats_and_devices();
  test_accessor();
  test_from_blob_bytes();
  test_copy_affine();
  return harness_finish("cpp_typed");
}
