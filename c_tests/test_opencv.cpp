// tensor_opencv.hpp with the real OpenCV: from_mat / to_mat are zero-copy (pointer
// equality), keep each other's memory alive through the right refcounts, refuse what
// they cannot express (read-only memory unless asked by name, sizes past int, CHW read
// as channels), and the last release may happen on another thread.
// c_api-pkg: opencv4
// c_api-libs: -lopencv_core
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <thread>

#include "harness.h"
#include "tensor_opencv.hpp"

template <class F>
static tensor_status_t status_of(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const tensor::Error& e) {
    if (what) *what = e.what();
    return e.status();
  }
  return TENSOR_OK;
}

static void test_from_mat_8uc3() {
  cv::Mat m(4, 5, CV_8UC3);
  for (int i = 0; i < 4 * 5 * 3; i++) m.data[i] = static_cast<uchar>(i);
  CHECK(m.u->refcount == 1);
  {
    tensor::Tensor t = tensor::from_mat(m);
    CHECK(m.u->refcount == 2);
    CHECK(t.data_ptr() == m.data);
    CHECK(t.dtype() == tensor::kUInt8);
    CHECK((t.sizes() == tensor::Tensor::empty({4, 5, 3}).sizes()));
    CHECK(t.stride(0) == 15 && t.stride(1) == 3 && t.stride(2) == 1);
    auto a = t.accessor<uint8_t, 3>();
    CHECK(a[2][3][1] == m.at<cv::Vec3b>(2, 3)[1]);
    a[1][1][2] = 200;  // same memory
    CHECK(m.at<cv::Vec3b>(1, 1)[2] == 200);
    tensor::Tensor v = t.permute({2, 0, 1});  // a view: still one reference on the Mat
    CHECK(m.u->refcount == 2);
  }
  CHECK(m.u->refcount == 1);
}

static void test_from_mat_roi_and_depths() {
  cv::Mat big(10, 12, CV_8UC3, cv::Scalar(1, 2, 3));
  cv::Mat roi = big(cv::Rect(2, 3, 5, 4));  // x, y, w, h
  tensor::Tensor t = tensor::from_mat(roi);
  CHECK(t.data_ptr() == roi.data);
  CHECK(t.size(0) == 4 && t.size(1) == 5 && t.stride(0) == 36 && t.stride(1) == 3);
  t.select(2, 0).fill_(9);
  CHECK(big.at<cv::Vec3b>(3, 2)[0] == 9 && big.at<cv::Vec3b>(6, 6)[0] == 9);
  CHECK(big.at<cv::Vec3b>(2, 2)[0] == 1 && big.at<cv::Vec3b>(3, 7)[0] == 1);

  // CV_32FC1 with row padding: a column range of a wider float Mat.
  cv::Mat wide(6, 9, CV_32F);
  for (int r = 0; r < 6; r++)
    for (int c = 0; c < 9; c++) wide.at<float>(r, c) = static_cast<float>(r * 100 + c);
  cv::Mat f = wide.colRange(1, 8);
  tensor::Tensor tf = tensor::from_mat(f);
  CHECK(tf.dim() == 2 && tf.size(1) == 7 && tf.stride(0) == 9 && tf.stride(1) == 1);
  CHECK(tf.dtype() == tensor::kFloat32);
  CHECK((tf.accessor<float, 2>()[5][6] == 507.0f));

  cv::Mat u16(3, 4, CV_16UC1, cv::Scalar(60000));
  tensor::Tensor tu = tensor::from_mat(u16);
  CHECK(tu.dtype() == tensor::kUInt16 && tu.get_i64({2, 3}) == 60000);

  struct {
    int type;
    tensor::Dtype want;
  } cases[] = {{CV_8SC1, tensor::kInt8},   {CV_16SC1, tensor::kInt16}, {CV_32SC1, tensor::kInt32},
               {CV_64FC1, tensor::kFloat64}, {CV_16FC1, tensor::kFloat16}, {CV_32FC4, tensor::kFloat32}};
  for (auto& c : cases) {
    cv::Mat x(2, 3, c.type, cv::Scalar::all(0));
    tensor::Tensor tx = tensor::from_mat(x);
    CHECK(tx.dtype() == c.want && tx.data_ptr() == x.data);
  }
  cv::Mat four(2, 3, CV_32FC4);
  CHECK(tensor::from_mat(four).size(2) == 4);
  CHECK(status_of([] { tensor::from_mat(cv::Mat()); }) == TENSOR_ERR_INVALID_ARGUMENT);
}

static void test_to_mat() {
  tensor::Tensor t = tensor::Tensor::arange(4 * 5 * 3, tensor::kInt64).to(tensor::kUInt8).view({4, 5, 3});
  CHECK(t.use_count() == 1);
  {
    cv::Mat m = tensor::to_mat(t);
    CHECK(t.use_count() == 2);
    CHECK(m.data == t.data_ptr() && m.type() == CV_8UC3 && m.rows == 4 && m.cols == 5);
    CHECK(m.step[0] == 15);
    CHECK(m.at<cv::Vec3b>(3, 4)[2] == 59);
    cv::Mat copy = m;  // OpenCV's refcount, not ours
    CHECK(t.use_count() == 2 && m.u->refcount == 2);
    cv::Mat row = m.row(2);
    CHECK(row.data == m.data + 30);
    // Round trips keep the pointer.
    tensor::Tensor back = tensor::from_mat(m);
    CHECK(back.data_ptr() == t.data_ptr());
    cv::Mat again = tensor::to_mat(back);
    CHECK(again.data == m.data);
  }
  CHECK(t.use_count() == 1);

  // A row-strided slice (any row stride) and one channel plane of a CHW tensor.
  tensor::Tensor every_other = t.slice(0, 0, 4, 2);
  cv::Mat mo = tensor::to_mat(every_other);
  CHECK(mo.rows == 2 && mo.step[0] == 30 && mo.data == every_other.data_ptr());
  tensor::Tensor chw = t.permute({2, 0, 1}).contiguous();
  cv::Mat green = tensor::to_mat(chw.select(0, 1));
  CHECK(green.type() == CV_8UC1 && green.at<uchar>(3, 4) == 58);

  // A Mat over a temporary contiguous(): the Mat keeps the copy alive.
  cv::Mat planar = tensor::to_mat(t.permute({2, 0, 1}).contiguous().view({12, 5}));
  CHECK(planar.at<uchar>(11, 4) == 59);

  cv::Mat f = tensor::to_mat(tensor::Tensor::full({2, 3}, 1.5, tensor::kFloat32));
  CHECK(f.type() == CV_32FC1 && f.at<float>(1, 2) == 1.5f);

  std::string what;
  CHECK(status_of([&] { tensor::to_mat(t.permute({1, 0, 2})); }, &what) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(what.find("contiguous()") != std::string::npos);
  CHECK(status_of([&] { tensor::to_mat(t.permute({2, 0, 1})); }, &what) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(what.find("to_mats_chw") != std::string::npos);  // [3, 4, 5]: CHW, not 5 channels
  CHECK(status_of([&] { tensor::to_mat(t.select(2, 0).t()); }) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { tensor::to_mat(t.view({60})); }) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { tensor::to_mat(tensor::Tensor::zeros({2, 2}, tensor::kInt64)); }, &what) ==
        TENSOR_ERR_DTYPE);
  CHECK(what.find("int64") != std::string::npos);
  CHECK(status_of([&] { tensor::to_mat(tensor::Tensor::zeros({0, 3}, tensor::kUInt8)); }) ==
        TENSOR_ERR_INVALID_ARGUMENT);
}

static std::string tmp(const char* name) {
  return "/tmp/libtensor-opencv-" + std::to_string(static_cast<long>(getpid())) + "-" + name;
}

// Read-only tensors (a read-only mapping of a .npy, a .safetensors tensor) get no
// writable Mat: an in-place OpenCV call on one would write to read-only pages.
static void test_read_only() {
  std::string npy = tmp("ro.npy"), st = tmp("ro.safetensors");
  tensor::Tensor src = tensor::Tensor::arange(6 * 7, tensor::kInt64).to(tensor::kFloat32).view({6, 7});
  src.save_npy(npy);
  tensor::save_safetensors(st, {{"w", src}});
  tensor::Tensor mapped = tensor::Tensor::load_npy(npy);  // PROT_READ pages
  tensor::Tensor weight = tensor::SafetensorsFile(st)["w"];
  std::remove(npy.c_str());
  std::remove(st.c_str());
  CHECK(mapped.is_read_only() && weight.is_read_only() && !src.is_read_only());

  std::string what;
  CHECK(status_of([&] { tensor::to_mat(mapped); }, &what) == TENSOR_ERR_READ_ONLY);
  CHECK(what.find("to_mat(t, tensor::read_only)") != std::string::npos && what.find("clone()") != std::string::npos);
  CHECK(status_of([&] { tensor::to_mat(weight); }) == TENSOR_ERR_READ_ONLY);
  CHECK(status_of([&] { tensor::to_mat(weight.slice(0, 1, 3)); }) == TENSOR_ERR_READ_ONLY);  // views too
  CHECK(status_of([&] { tensor::to_mats_chw(weight.view({2, 3, 7})); }, &what) == TENSOR_ERR_READ_ONLY);
  CHECK(what.find("to_mats_chw(t, tensor::read_only)") != std::string::npos);

  // Opted in by name: a ReadOnlyMat over the same pages, a source for OpenCV calls.
  tensor::WeakStorage weak = mapped.storage().weak();
  tensor::ReadOnlyMat ro = tensor::to_mat(mapped, tensor::read_only);
  CHECK(ro.data() == mapped.data_ptr() && ro.mat().data == mapped.data_ptr());
  CHECK(ro.rows() == 6 && ro.cols() == 7 && ro.type() == CV_32FC1 && ro.channels() == 1 && !ro.empty());
  CHECK(ro.mat().at<float>(5, 6) == 41.0f);
  mapped = tensor::Tensor();
  CHECK(!weak.expired());  // the ReadOnlyMat keeps the mapping alive
  CHECK(cv::sum(ro)[0] == 41.0 * 42.0 / 2);  // passes as a cv::InputArray
  cv::Mat doubled;
  cv::add(ro, ro, doubled);  // a source, with a separate destination
  CHECK(doubled.at<float>(5, 6) == 82.0f && doubled.data != ro.data());
  cv::Mat copy = ro.clone();  // a writable deep copy
  copy.at<float>(0, 0) = 5.0f;
  CHECK(copy.data != ro.data() && ro.mat().at<float>(0, 0) == 0.0f);

  // Back to a tensor: still read-only, so writes are refused rather than crash.
  tensor::Tensor back = tensor::from_mat(ro);
  CHECK(back.data_ptr() == ro.data() && back.is_read_only());
  CHECK(status_of([&] { back.fill_(1.0); }) == TENSOR_ERR_READ_ONLY);
  ro = tensor::ReadOnlyMat();
  CHECK(!weak.expired());  // back holds the Mat's reference
  back = tensor::Tensor();
  CHECK(weak.expired());

  // The opt-in works on writable tensors too, and runs the same layout checks.
  tensor::ReadOnlyMat w = tensor::to_mat(src, tensor::read_only);
  CHECK(w.data() == src.data_ptr() && src.use_count() == 2);
  CHECK(status_of([&] { tensor::to_mat(src.t(), tensor::read_only); }) == TENSOR_ERR_INVALID_ARGUMENT);
  std::vector<tensor::ReadOnlyMat> planes = tensor::to_mats_chw(weight.view({2, 3, 7}), tensor::read_only);
  CHECK(planes.size() == 2 && planes[1].rows() == 3 && planes[1].mat().at<float>(2, 6) == 41.0f);
}

// OpenCV's rows and cols are int: larger sizes are refused, not truncated. The tensors
// claim far more memory than `buf` (from_blob cannot know); no element is read.
static void test_sizes_past_int() {
  static uint8_t buf[64];
  const int64_t big = (int64_t(1) << 32) + 5, neg = (int64_t(1) << 31) + 1;
  std::string what;
  tensor::Tensor t = tensor::Tensor::from_blob(buf, {big, 2}, tensor::kUInt8, {}, {2, 1});
  CHECK(status_of([&] { tensor::to_mat(t); }, &what) == TENSOR_ERR_OVERFLOW);  // was a 5x2 Mat
  CHECK(what.find("4294967301") != std::string::npos && what.find("2147483647") != std::string::npos);
  tensor::Tensor n = tensor::Tensor::from_blob(buf, {neg, 2}, tensor::kUInt8, {}, {2, 1});
  CHECK(status_of([&] { tensor::to_mat(n); }, &what) == TENSOR_ERR_OVERFLOW);  // was rows < 0
  CHECK(what.find("2147483649") != std::string::npos);
  tensor::Tensor wide = tensor::Tensor::from_blob(buf, {2, neg}, tensor::kUInt8, {}, {0, 1});
  CHECK(status_of([&] { tensor::to_mat(wide); }) == TENSOR_ERR_OVERFLOW);
  tensor::Tensor hwc = tensor::Tensor::from_blob(buf, {big, 1, 3}, tensor::kUInt8, {}, {3, 3, 1});
  CHECK(status_of([&] { tensor::to_mat(hwc, tensor::read_only); }) == TENSOR_ERR_OVERFLOW);
  tensor::Tensor chw = tensor::Tensor::from_blob(buf, {2, big, 1}, tensor::kUInt8, {}, {0, 1, 1});
  CHECK(status_of([&] { tensor::to_mats_chw(chw); }) == TENSOR_ERR_OVERFLOW);
  // INT_MAX itself fits.
  tensor::Tensor edge = tensor::Tensor::from_blob(buf, {INT_MAX, 1}, tensor::kUInt8, {}, {1, 1});
  cv::Mat m = tensor::to_mat(edge);
  CHECK(m.rows == INT_MAX && m.cols == 1 && m.data == buf);
}

// A 3-D tensor is [H, W, C] with 1..4 channels; a CHW tensor gets one Mat per plane.
static void test_channels_and_chw() {
  tensor::Tensor chw = tensor::Tensor::arange(3 * 8 * 8, tensor::kInt64).to(tensor::kUInt8).view({3, 8, 8});
  std::string what;
  CHECK(status_of([&] { tensor::to_mat(chw); }, &what) == TENSOR_ERR_INVALID_ARGUMENT);  // was 3x8, 8 channels
  CHECK(what.find("[3, 8, 8]") != std::string::npos && what.find("to_mats_chw") != std::string::npos);
  CHECK(status_of([&] { tensor::to_mat(tensor::Tensor::zeros({2, 2, 5}, tensor::kUInt8)); }) ==
        TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(tensor::to_mat(tensor::Tensor::zeros({2, 2, 4}, tensor::kUInt8)).type() == CV_8UC4);
  CHECK(tensor::to_mat(tensor::Tensor::zeros({2, 2, 1}, tensor::kFloat32)).type() == CV_32FC1);
  // Many channels, by asking for them: a [H, W * C] Mat reshaped to C channels, no copy.
  tensor::Tensor hwc8 = tensor::Tensor::zeros({2, 3, 8}, tensor::kUInt8);
  cv::Mat m8 = tensor::to_mat(hwc8.view({2, 3 * 8})).reshape(8);
  CHECK(m8.rows == 2 && m8.cols == 3 && m8.channels() == 8 && m8.data == hwc8.data_ptr());

  tensor::WeakStorage weak = chw.storage().weak();
  std::vector<cv::Mat> planes = tensor::to_mats_chw(chw);
  CHECK(planes.size() == 3);
  for (int c = 0; c < 3; c++) {
    CHECK(planes[c].type() == CV_8UC1 && planes[c].rows == 8 && planes[c].cols == 8);
    CHECK(planes[c].data == static_cast<uchar*>(chw.data_ptr()) + 64 * c);
    CHECK(planes[c].at<uchar>(7, 5) == 64 * c + 61);
  }
  planes[1].at<uchar>(0, 0) = 200;  // same memory
  CHECK(chw.get_i64({1, 0, 0}) == 200);
  chw = tensor::Tensor();
  planes.erase(planes.begin(), planes.begin() + 2);
  CHECK(!weak.expired());  // the last plane alone keeps the memory
  CHECK(planes[0].at<uchar>(7, 5) == 128 + 61);
  planes.clear();
  CHECK(weak.expired());

  tensor::Tensor hwc = tensor::Tensor::zeros({4, 5, 3}, tensor::kUInt8);
  CHECK(status_of([&] { tensor::to_mats_chw(hwc.permute({2, 0, 1})); }, &what) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(what.find("contiguous()") != std::string::npos);
  CHECK(tensor::to_mats_chw(hwc.permute({2, 0, 1}).contiguous()).size() == 3);
  CHECK(status_of([&] { tensor::to_mats_chw(hwc.select(2, 0)); }, &what) == TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(what.find("to_mats_chw") != std::string::npos);
  CHECK(status_of([&] { tensor::to_mats_chw(tensor::Tensor::zeros({0, 2, 2}, tensor::kUInt8)); }) ==
        TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { tensor::to_mats_chw(tensor::Tensor()); }) == TENSOR_ERR_NULL_POINTER);
}

static void test_last_release_on_another_thread() {
  // from_mat: the tensor is the last owner of OpenCV's buffer and dies on a thread.
  cv::Mat m(64, 64, CV_8UC3, cv::Scalar(7, 8, 9));
  cv::Mat observer = m;
  tensor::Tensor t = tensor::from_mat(m);
  m.release();
  CHECK(observer.u->refcount == 2);
  std::thread([t = std::move(t)]() mutable { t = tensor::Tensor(); }).join();
  CHECK(observer.u->refcount == 1);
  tensor::Tensor last = tensor::from_mat(observer);
  observer.release();  // now only the tensor holds the buffer
  std::thread([last = std::move(last)]() mutable {
    CHECK(last.get_i64({63, 63, 2}) == 9);
    last = tensor::Tensor();  // OpenCV frees the buffer here, on this thread
  }).join();

  // to_mat: the Mat is the last owner of the tensor and dies on a thread.
  tensor::Tensor src = tensor::Tensor::full({8, 8}, 3.0, tensor::kFloat64);
  tensor::WeakStorage weak = src.storage().weak();
  cv::Mat mm = tensor::to_mat(src);
  src = tensor::Tensor();
  CHECK(!weak.expired());
  std::thread([mm = std::move(mm)]() mutable {
    CHECK(mm.at<double>(7, 7) == 3.0);
    mm.release();
  }).join();
  CHECK(weak.expired());
}

int main() {
  test_from_mat_8uc3();
  test_from_mat_roi_and_depths();
  test_to_mat();
  test_read_only();
  test_sizes_past_int();
  test_channels_and_chw();
  test_last_release_on_another_thread();
  return harness_finish("cpp_opencv");
}
