// C++17 tests of the file / mapping / shared-memory layer of include/tensor.hpp:
// tensor::SafetensorsFile, tensor::save_safetensors, Tensor::load_npy / save_npy,
// Storage::from_file / from_fd / shared.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tensor.hpp"

#include "harness.h"

static std::string tmp(const char* name) {
  return "/tmp/libtensor-files-cpp-" + std::to_string(static_cast<long>(getpid())) + "-" + name;
}

static void test_safetensors() {
  std::string path = tmp("w.safetensors");
  tensor::Tensor w = tensor::Tensor::arange(12, tensor::kFloat32).view({3, 4});
  tensor::Tensor b = tensor::Tensor::full({4}, 0.5, tensor::kBFloat16);
  tensor::save_safetensors(path, {{"layer.weight", w}, {"layer.bias", b}});
  tensor::Tensor kept;
  {
    tensor::SafetensorsFile f(path);
    CHECK(f.size() == 2);
    std::vector<std::string> names = f.names();
    CHECK(names.size() == 2);
    tensor::Tensor w2 = f["layer.weight"];
    CHECK(w2.equal(w) && w2.dtype() == tensor::kFloat32);
    CHECK(f["layer.bias"].get_f64({3}) == 0.5);
    CHECK(w2.storage().is_mapped() && w2.storage().is_read_only());
    CHECK(f.at(0).storage().data() == f.at(1).storage().data());  // one mapping
    int status = 0;
    try {
      f["missing"];
    } catch (const tensor::Error& e) {
      status = e.status();
      CHECK(std::string(e.what()).find("missing") != std::string::npos);
    }
    CHECK(status == TENSOR_ERR_INDEX);
    try {
      w2.set({0, 0}, 1.0);
    } catch (const tensor::Error& e) {
      status = e.status();
    }
    CHECK(status == TENSOR_ERR_READ_ONLY);
    kept = std::move(w2);
  }
  CHECK(kept.get_f64({2, 3}) == 11.0);  // the tensor outlives the file handle
  int status = 0;
  try {
    tensor::SafetensorsFile missing(tmp("nope.safetensors"));
  } catch (const tensor::Error& e) {
    status = e.status();
  }
  CHECK(status == TENSOR_ERR_IO);
  std::remove(path.c_str());
}

// Map modes and metadata through the wrapper: a private load is writable and leaves the
// file alone; metadata round trips and survives a re-save.
static void test_safetensors_modes_and_metadata() {
  std::string path = tmp("m.safetensors"), again = tmp("m2.safetensors");
  tensor::Tensor w = tensor::Tensor::arange(6, tensor::kFloat32);
  tensor::save_safetensors(path, {{"w", w}}, {{"format", "pt"}, {"author", "me"}});
  {
    tensor::SafetensorsFile f(path, tensor::MapMode::Private);
    std::vector<std::pair<std::string, std::string>> want = {{"author", "me"}, {"format", "pt"}};
    CHECK(f.metadata() == want);
    tensor::Tensor cow = f["w"];
    CHECK(!cow.storage().is_read_only());
    cow.set({2}, 42.0);
    CHECK(cow.get_f64({2}) == 42.0);
    tensor::save_safetensors(again, {{"w", tensor::SafetensorsFile(path)["w"]}}, f.metadata());
  }
  tensor::SafetensorsFile g(again);
  CHECK(g["w"].equal(w));  // the private write never reached the file
  CHECK(g.metadata().size() == 2 && g.metadata()[1].second == "pt");
  CHECK(tensor::SafetensorsFile(path).metadata().size() == 2);
  std::remove(path.c_str());
  std::remove(again.c_str());
}

static void test_npy_and_storages() {
  std::string path = tmp("x.npy");
  tensor::Tensor t = tensor::Tensor::arange(6, tensor::kInt16).view({2, 3}).transpose(0, 1);
  t.save_npy(path);
  tensor::Tensor back = tensor::Tensor::load_npy(path);
  CHECK(back.equal(t) && back.is_contiguous());
  tensor::Storage whole = tensor::Storage::from_file(path);
  size_t header = whole.nbytes() - 12;  // data starts on a 64-byte boundary
  CHECK(whole.is_mapped() && header > 0 && header % 64 == 0);
  tensor::Storage tail = tensor::Storage::from_file(path, header, 12, tensor::MapMode::Private);
  CHECK(tail.tensor({6}, tensor::kInt16).get_i64({1}) == 3);  // C order of the transpose
  std::remove(path.c_str());

  tensor::Storage shm = tensor::Storage::shared(4096);
  shm.tensor({1024}, tensor::kInt32).fill_(7);
  tensor::Storage again = tensor::Storage::from_fd(shm.fd());
  CHECK(again.is_mapped() && again.is_read_only());
  CHECK(again.tensor({1024}, tensor::kInt32).get_i64({1023}) == 7);
  int status = 0;
  try {
    tensor::Storage::create(8).fd();
  } catch (const tensor::Error& e) {
    status = e.status();
  }
  CHECK(status == TENSOR_ERR_INVALID_ARGUMENT);
}

int main() {
  test_safetensors();
  test_safetensors_modes_and_metadata();
  test_npy_and_storages();
  return harness_finish("cpp_files");
}
