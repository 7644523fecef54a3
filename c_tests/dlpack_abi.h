/* DLPack 1.3 structs and constants for the C tests, declared before tensor.h in the same typedef style as
 * <dlpack/dlpack.h> (typedef struct DLManagedTensorVersioned {...} DLManagedTensorVersioned),
 * so the tests also check that the header's forward declarations coexist with the real ones.
 * Field names and order follow DLPack's public ABI. */
#ifndef LIBTENSOR_TEST_DLPACK_ABI_H
#define LIBTENSOR_TEST_DLPACK_ABI_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct {
  int32_t device_type; /* DLDeviceType, an int-sized enum */
  int32_t device_id;
} DLDevice;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The C exchange API (dlpack.h 1.3): the allocator and the table. */
typedef int (*DLPackManagedTensorAllocator)(DLTensor *prototype, DLManagedTensorVersioned **out,
                                            void *error_ctx,
                                            void (*SetError)(void *error_ctx, const char *kind,
                                                             const char *message));
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void *py_object, DLManagedTensorVersioned **out);
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void *py_object, DLTensor *out);
typedef int (*DLPackCurrentWorkStream)(int32_t device_type, int32_t device_id, void **out_current_stream);
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned *tensor, void **out_py_object);

typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;

typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

#define FLAG_READ_ONLY 1u
#define FLAG_IS_COPIED 2u
#define FLAG_IS_SUBBYTE_TYPE_PADDED 4u

/* DLDeviceType values used by the tests (kDLTrn is new in 1.3). */
enum { kDLCPU = 1, kDLCUDA = 2, kDLTrn = 18 };

/* DLDataTypeCode (dlpack.h 1.3). */
enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17
};

#endif
