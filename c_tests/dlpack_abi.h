/* DLPack 1.x structs for the C tests, declared before tensor.h in the same typedef style as
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

#define FLAG_READ_ONLY 1u
#define FLAG_IS_COPIED 2u

#endif
