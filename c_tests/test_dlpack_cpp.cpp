// C++17: tensor.h first, then DLPack's structs declared in <dlpack/dlpack.h>'s C++ style
// (inside extern "C", an int32_t-based enum for the device type), completing the header's
// forward declarations (test_dlpack.c checks the other order, in C99). A round trip
// through the C API with the completed types.
#include <cstdint>

#include "harness.h"

extern "C" {
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;
typedef enum : int32_t { kDLCPU = 1, kDLCUDA = 2 } DLDeviceType;
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
}

int main() {
  tensor_t* t = nullptr;
  tensor_t* back = nullptr;
  DLManagedTensorVersioned* m = nullptr;
  DLManagedTensor* u = nullptr;
  int64_t sizes[2] = {2, 3};
  CHECK_OK(tensor_zeros(sizes, 2, TENSOR_INT64, &t));
  CHECK_OK(tensor_to_dlpack(t, &m));
  CHECK(m->dl_tensor.device.device_type == kDLCPU);
  CHECK(m->dl_tensor.dtype.code == 0 && m->dl_tensor.dtype.bits == 64);
  CHECK(m->dl_tensor.shape[1] == 3 && m->dl_tensor.strides[0] == 3);
  CHECK_OK(tensor_from_dlpack(m, &back));
  CHECK(tensor_data_ptr(back) == tensor_data_ptr(t));
  tensor_release(back);
  CHECK(tensor_use_count(t) == 1);
  CHECK_OK(tensor_to_dlpack_unversioned(t, &u));
  CHECK(u->dl_tensor.data == tensor_data_ptr(t) && u->dl_tensor.byte_offset == 0);
  u->deleter(u);
  CHECK(tensor_use_count(t) == 1);
  tensor_release(t);
  return harness_finish("cpp_dlpack");
}
