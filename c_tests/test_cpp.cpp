// C++17 tests of include/tensor.hpp: RAII ownership, exceptions, views, copies, storage.
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "tensor.hpp"

#include "harness.h"

static int deleted = 0;

static void test_raii_and_ownership() {
  static_assert(sizeof(tensor::Tensor) == sizeof(void*), "Tensor adds no state");
  tensor::Tensor undefined;
  CHECK(!undefined.defined());
  tensor::Tensor a = tensor::Tensor::arange(6, tensor::kFloat32);
  CHECK(a.use_count() == 1);
  {
    tensor::Tensor b = a;  // retain
    CHECK(a.use_count() == 2);
    tensor::Tensor c = std::move(b);  // steal
    CHECK(!b.defined());
    CHECK(a.use_count() == 2);
    c = a;  // self-family assignment keeps counts exact
    CHECK(a.use_count() == 2);
  }
  CHECK(a.use_count() == 1);
  tensor_t* raw = a.into_raw();  // the handle, still +1: nothing was released
  CHECK(!a.defined());
  CHECK(tensor_use_count(raw) == 1);
  tensor::Tensor back = tensor::Tensor::adopt(raw);
  CHECK(back.numel() == 6);
  tensor::Storage st = back.storage();
  CHECK(st.use_count() == 2);  // back's impl and st
  storage_t* sraw = st.into_raw();
  CHECK(!st.defined() && storage_use_count(sraw) == 2);
  tensor::Storage st2 = tensor::Storage::adopt(sraw);
  CHECK(st2.get() == tensor_storage(back.get()));
}

static void test_from_blob_deleter() {
  deleted = 0;
  float* buf = static_cast<float*>(std::malloc(12 * sizeof(float)));
  for (int i = 0; i < 12; ++i) buf[i] = static_cast<float>(i);
  {
    tensor::Tensor t = tensor::Tensor::from_blob(buf, {3, 4}, tensor::kFloat32, [](void* p) {
      ++deleted;
      std::free(p);
    });
    tensor::Tensor v = t.t();  // a view keeps the storage alive
    t = tensor::Tensor();
    CHECK(deleted == 0);
    CHECK(v.size(0) == 4 && v.stride(0) == 1);
    CHECK(v.get_f64({1, 2}) == 9.0);
    std::thread([moved = std::move(v)]() mutable { moved = tensor::Tensor(); }).join();
  }
  CHECK(deleted == 1);
  // failure: deleter not run, std::function freed, caller keeps the buffer
  float local[4] = {0, 0, 0, 0};
  bool threw = false;
  try {
    tensor::Tensor::from_blob(local, {-1}, tensor::kFloat32, [](void*) { ++deleted; });
  } catch (const tensor::Error& e) {
    threw = true;
    CHECK(e.status() == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("tensor_from_blob") != std::string::npos);
  }
  CHECK(threw);
  CHECK(deleted == 1);
}

static void test_views_and_errors() {
  tensor::Tensor x = tensor::Tensor::arange(24, tensor::kFloat32).view({2, 3, 4});
  tensor::Tensor p = x.permute({2, 0, 1});
  CHECK((p.sizes() == tensor::IntArrayRef(std::vector<int64_t>{4, 2, 3}.data(), 3)));
  std::vector<int64_t> st = p.strides();
  CHECK(st.size() == 3 && st[0] == 1 && st[1] == 12 && st[2] == 4);
  CHECK(p.shares_storage(x));
  CHECK(x[1][2].get_f64({3}) == 23.0);
  CHECK(x.slice(2, 1, 4, 2).size(2) == 2);
  CHECK(x.unsqueeze(0).dim() == 4);
  CHECK(x.expand({5, 2, 3, 4}).stride(0) == 0);
  CHECK(x.flatten().dim() == 1);
  CHECK(x.transpose(0, 2).is_contiguous() == false);
  bool threw = false;
  try {
    x.transpose(0, 2).view({24});
  } catch (const tensor::Error& e) {
    threw = true;
    CHECK(e.status() == TENSOR_ERR_NOT_VIEWABLE);
  }
  CHECK(threw);
  tensor::Tensor r = x.transpose(0, 2).reshape({24});  // copies
  CHECK(!r.shares_storage(x));
  CHECK(r.get_f64({1}) == 12.0);
  threw = false;
  try {
    x.select(0, 5);
  } catch (const tensor::Error& e) {
    threw = e.status() == TENSOR_ERR_INDEX;
  }
  CHECK(threw);
}

static void test_copies_and_items() {
  tensor::Tensor x = tensor::Tensor::arange(6, tensor::kFloat32).view({2, 3});
  tensor::Tensor c = x.t().contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.get_f64({2, 1}) == 5.0);
  tensor::Tensor same = x.contiguous();
  CHECK(same.get() == x.get());
  tensor::Tensor y = tensor::Tensor::zeros({2, 3});
  uint64_t v0 = y.version();
  y.copy_(x);
  CHECK(y.version() == v0 + 1);
  CHECK(y.equal(x));
  y.fill_(2.5);
  CHECK(y.get_f64({1, 1}) == 2.5);
  tensor::Tensor one = tensor::Tensor::full({}, 3.75);
  CHECK(one.item<double>() == 3.75);
  CHECK(one.item<int>() == 3);
  CHECK(x.data_ptr<float>()[4] == 4.0f);
  bool threw = false;
  try {
    x.data_ptr<double>();
  } catch (const tensor::Error& e) {
    threw = e.status() == TENSOR_ERR_DTYPE;
  }
  CHECK(threw);
  std::ostringstream os;
  os << tensor::Tensor::arange(3, tensor::kInt64);
  CHECK(os.str() == "tensor([0, 1, 2])");
  CHECK(x.repeat({2, 1}).size(0) == 4);
  CHECK(x.clone().equal(x));
}

static void test_storage() {
  tensor::Storage s = tensor::Storage::create(64);
  CHECK(s.nbytes() == 64 && s.is_resizable());
  tensor::Tensor t = s.tensor({4, 4}, tensor::kFloat32);
  CHECK(s.use_count() == 2);
  CHECK(t.storage().get() == s.get());
  tensor::WeakStorage w = s.weak();
  CHECK(!w.expired());
  s = tensor::Storage();
  t = tensor::Tensor();
  CHECK(w.expired());
  CHECK(!w.lock().defined());
}

int main() {
  test_raii_and_ownership();
  test_from_blob_deleter();
  test_views_and_errors();
  test_copies_and_items();
  test_storage();
  return harness_finish("cpp_wrapper");
}
