// One-pass preprocessing benchmark through the C API of the real libtensor.so (single
// thread): a 1080x1920x3 uint8 HWC frame, permuted to CHW (a view), written into a
// float32 CHW tensor scaled by 1/255 and normalized by ImageNet mean/std with one
// tensor_copy_affine_ call. Compared in the same run, alternating, with:
//   - memcpy of the output bytes (24.9 MB) into an already-touched buffer;
//   - cv::dnn::blobFromImage(img, 1/255., size, mean, swapRB=false) followed by the
//     division by std that ImageNet normalization needs (when built with OpenCV dnn:
//     -DWITH_OPENCV_DNN); blobFromImage alone is also reported.
// The output of copy_affine_ is allocated once and reused (what a video loop does);
// blobFromImage allocates its output on every call, as its API requires.
// Ratios: t(reference) / t(ours), so > 1 means ours is faster.
// Second part: typed element access. The sum of a permuted (CHW view) 3x256x256 crop of the
// frame read element by element through tensor_get_i64, through tensor.hpp's
// accessor<uint8_t, 3>, and through hand-written stride arithmetic on the data pointer.
// Build and run: benches/c/run.sh pipe
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "tensor.hpp"
#ifdef WITH_OPENCV_DNN
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#endif

static double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char* what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 21;
  const int64_t H = 1080, W = 1920, C = 3;
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double scale[3], shift[3];
  for (int c = 0; c < 3; c++) {
    scale[c] = 1.0 / (255.0 * stdv[c]);
    shift[c] = -mean[c] / stdv[c];
  }
  int64_t hwc[3] = {H, W, C}, chw[3] = {C, H, W}, perm[3] = {2, 0, 1};
  tensor_t *img = nullptr, *view = nullptr, *out = nullptr;
  if (tensor_empty(hwc, 3, TENSOR_UINT8, &img) != TENSOR_OK) die("empty");
  uint8_t* px = static_cast<uint8_t*>(tensor_data_ptr(img));
  for (int64_t i = 0; i < H * W * C; i++) px[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  if (tensor_permute(img, perm, 3, &view) != TENSOR_OK) die("permute");
  if (tensor_empty(chw, 3, TENSOR_FLOAT32, &out) != TENSOR_OK) die("empty");
  const size_t nbytes = static_cast<size_t>(H * W * C) * 4;
  char* a = static_cast<char*>(malloc(nbytes));
  char* b = static_cast<char*>(malloc(nbytes));
  memset(a, 1, nbytes);
  memset(b, 2, nbytes);
#ifdef WITH_OPENCV_DNN
  cv::setNumThreads(1);
  cv::Mat mat(static_cast<int>(H), static_cast<int>(W), CV_8UC3, px);
  cv::Scalar cv_mean(255 * mean[0], 255 * mean[1], 255 * mean[2]);
  std::vector<double> t_dnn, t_dnn_std;
#endif
  std::vector<double> t_ours, t_mc;
  for (int r = 0; r < reps + 1; r++) {
    double t0 = now_ms();
    if (tensor_copy_affine_(out, view, 0, scale, shift, 3) != TENSOR_OK) die("copy_affine_");
    double t1 = now_ms();
    memcpy(b, a, nbytes);
    double t2 = now_ms();
    if (r > 0) {  // the first round warms the pages
      t_ours.push_back(t1 - t0);
      t_mc.push_back(t2 - t1);
    }
#ifdef WITH_OPENCV_DNN
    double t3 = now_ms();
    cv::Mat blob = cv::dnn::blobFromImage(mat, 1 / 255.0, cv::Size(static_cast<int>(W), static_cast<int>(H)),
                                          cv_mean, false, false, CV_32F);
    double t4 = now_ms();
    // blobFromImage has no std: ImageNet normalization needs one more pass per channel.
    for (int c = 0; c < 3; c++) {
      cv::Mat plane(static_cast<int>(H), static_cast<int>(W), CV_32F, blob.ptr<float>(0, c));
      plane *= 1.0 / stdv[c];
    }
    double t5 = now_ms();
    if (r > 0) {
      t_dnn.push_back(t4 - t3);
      t_dnn_std.push_back(t5 - t3);
    }
    if (r == 0) {
      // Same values as ours, to one float32 rounding of the operands.
      const float* o = static_cast<const float*>(tensor_data_ptr(out));
      double worst = 0;
      for (int64_t i = 0; i < C * H * W; i += 7)
        worst = std::max(worst, static_cast<double>(std::abs(o[i] - blob.ptr<float>()[i])));
      printf("max |ours - blobFromImage/std| over a sample: %.3g\n", worst);
    }
#endif
  }
  double ours = median(t_ours), mc = median(t_mc);
  printf("uint8 1080x1920x3 HWC -> float32 CHW normalized (median of %d)\n", reps);
  printf("  copy_affine_          %8.3f ms\n", ours);
  printf("  memcpy of out bytes   %8.3f ms   ratio memcpy/ours = %.2fx  (target >= 1.0x)\n", mc, mc / ours);
#ifdef WITH_OPENCV_DNN
  double dnn = median(t_dnn), dnn_std = median(t_dnn_std);
  printf("  blobFromImage         %8.3f ms   ratio = %.2fx  (target >= 2x)\n", dnn, dnn / ours);
  printf("  blobFromImage + /std  %8.3f ms   ratio = %.2fx\n", dnn_std, dnn_std / ours);
#else
  printf("  (built without OpenCV dnn: no blobFromImage row)\n");
#endif
  // ---- typed element access ------------------------------------------------------------
  {
    tensor::Tensor frame = tensor::Tensor::adopt(tensor_retain(img));
    tensor::Tensor crop = frame.narrow(0, 100, 256).narrow(1, 200, 256).permute({2, 0, 1});
    const int64_t n = 3 * 256 * 256;
    std::vector<double> t_get, t_acc, t_raw;
    uint64_t s_get = 0, s_acc = 0, s_raw = 0;
    for (int r = 0; r < reps + 1; r++) {
      double t0 = now_ms();
      uint64_t s1 = 0;
      int64_t idx[3];
      for (idx[0] = 0; idx[0] < 3; idx[0]++)
        for (idx[1] = 0; idx[1] < 256; idx[1]++)
          for (idx[2] = 0; idx[2] < 256; idx[2]++) {
            int64_t v = 0;
            if (tensor_get_i64(crop.get(), idx, 3, &v) != TENSOR_OK) die("get_i64");
            s1 += static_cast<uint64_t>(v);
          }
      double t1 = now_ms();
      uint64_t s2 = 0;
      auto acc = crop.accessor<uint8_t, 3>();
      for (int64_t c = 0; c < 3; c++)
        for (int64_t y = 0; y < 256; y++)
          for (int64_t x = 0; x < 256; x++) s2 += acc[c][y][x];
      double t2 = now_ms();
      uint64_t s3 = 0;
      const uint8_t* p = static_cast<const uint8_t*>(crop.data_ptr());
      const int64_t st0 = crop.stride(0), st1 = crop.stride(1), st2 = crop.stride(2);
      for (int64_t c = 0; c < 3; c++)
        for (int64_t y = 0; y < 256; y++)
          for (int64_t x = 0; x < 256; x++) s3 += p[c * st0 + y * st1 + x * st2];
      double t3 = now_ms();
      if (r > 0) {
        t_get.push_back(t1 - t0);
        t_acc.push_back(t2 - t1);
        t_raw.push_back(t3 - t2);
      }
      s_get = s1;
      s_acc = s2;
      s_raw = s3;
    }
    if (s_get != s_acc || s_acc != s_raw) die("element sums differ");
    double g = median(t_get) * 1e6 / n, ac = median(t_acc) * 1e6 / n, rw = median(t_raw) * 1e6 / n;
    printf("typed access, sum of a 3x256x256 uint8 CHW view (median of %d, ns per element)\n", reps);
    printf("  tensor_get_i64          %6.2f ns\n", g);
    printf("  accessor<uint8_t, 3>    %6.2f ns   (%.0fx faster than get_i64)\n", ac, g / ac);
    printf("  raw stride arithmetic   %6.2f ns   accessor / raw = %.2f\n", rw, ac / rw);
  }
  free(a);
  free(b);
  tensor_release(out);
  tensor_release(view);
  tensor_release(img);
  return 0;
}
