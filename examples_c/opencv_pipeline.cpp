// From an OpenCV image to a normalized network input and back, without a copy you did not
// ask for:
//   cv::Mat (HWC uint8) --from_mat--> tensor --crop, HWC->CHW views--> one-pass normalize
//   with BGR -> RGB (copy_affine_ with a channel map) --> float32 RGB CHW tensor --to_mat of
//   one channel--> cv::Mat (CV_32FC1)
//
// Build and run: cargo test --test c_api examples_run   (or by hand:
//   c++ -std=c++17 -Iinclude $(pkg-config --cflags opencv4) examples_c/opencv_pipeline.cpp
//       -Ltarget/debug -ltensor -lopencv_core)
// c_api-pkg: opencv4
// c_api-libs: -lopencv_core
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tensor_opencv.hpp"

#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                     \
    }                                                                   \
  } while (0)

int main() {
  // A 480x640 BGR frame, as cv::imread or a cv::VideoCapture gives it.
  cv::Mat frame(480, 640, CV_8UC3);
  cv::randu(frame, cv::Scalar::all(0), cv::Scalar::all(256));

  // 1. Wrap it: same pixels, [480, 640, 3] uint8; the tensor holds a reference on them.
  tensor::Tensor img = tensor::from_mat(frame);
  EXPECT(img.data_ptr() == frame.data);

  // 2. Views (no copy): a 224x224 center crop, then HWC -> CHW.
  tensor::Tensor crop = img.narrow(0, (480 - 224) / 2, 224).narrow(1, (640 - 224) / 2, 224);
  tensor::Tensor chw = crop.permute({2, 0, 1});  // [3, 224, 224], strides [1, 1920, 3]

  // 3. One pass: uint8 -> float32, BGR -> RGB, / 255, - mean, / std (ImageNet's RGB mean and
  // std). Channel c of the output reads channel src_index[c] of the BGR view: {2, 1, 0}.
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  std::vector<double> scale(3), shift(3);
  for (int c = 0; c < 3; c++) {
    scale[c] = 1.0 / (255.0 * stdv[c]);
    shift[c] = -mean[c] / stdv[c];
  }
  tensor::Tensor input = tensor::Tensor::empty({3, 224, 224}, tensor::kFloat32);
  input.copy_affine_(chw, 0, scale, shift, {2, 1, 0});

  // Every plane against the formula, with the channel swap: output plane c (R, G, B) comes
  // from OpenCV's channel 2 - c (B, G, R). R and B are checked at every pixel.
  const int oy = (480 - 224) / 2, ox = (640 - 224) / 2;
  for (int c = 0; c < 3; c++) {
    cv::Mat plane = tensor::to_mat(input.select(0, c));
    double max_err = 0;
    for (int y = 0; y < 224; y++)
      for (int x = 0; x < 224; x++) {
        double px = frame.at<cv::Vec3b>(oy + y, ox + x)[2 - c];
        max_err = std::fmax(max_err, std::fabs(plane.at<float>(y, x) - (px / 255.0 - mean[c]) / stdv[c]));
      }
    EXPECT(max_err < 1e-5);
  }
  // 4. Back to OpenCV: the green plane as a CV_32FC1 Mat over the tensor's memory. The Mat
  // keeps the tensor's memory alive, even after `input` goes away.
  cv::Mat green = tensor::to_mat(input.select(0, 1));
  input = tensor::Tensor();
  EXPECT(green.type() == CV_32FC1 && green.rows == 224 && green.cols == 224);

  // Check one pixel against the formula.
  const int y = 100, x = 37;
  double px = frame.at<cv::Vec3b>(oy + y, ox + x)[1];
  double want = (px / 255.0 - mean[1]) / stdv[1];
  EXPECT(std::fabs(green.at<float>(y, x) - want) < 1e-5);
  cv::Scalar m = cv::mean(green);
  std::printf("crop %dx%d, green plane mean %.4f (uniform noise: about %.4f)\n", green.rows, green.cols, m[0],
              (0.5 - mean[1]) / stdv[1]);

  // Crops of a crop stay views of the frame; the frame's buffer lives while any does.
  tensor::Tensor patch = crop.narrow(0, 0, 8).narrow(1, 0, 8);
  frame.release();
  img = tensor::Tensor();
  crop = tensor::Tensor();
  chw = tensor::Tensor();
  cv::Mat patch_mat = tensor::to_mat(patch);  // CV_8UC3 with the frame's row step
  EXPECT(patch_mat.type() == CV_8UC3 && patch_mat.step[0] == 640 * 3);
  std::printf("opencv_pipeline: ok\n");
  return 0;
}
