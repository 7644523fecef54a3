// tensor_ffmpeg.hpp: header-only FFmpeg adapter for libtensor's C++ wrapper (tensor.hpp).
// Include after (or instead of) tensor.hpp; link libavutil (-lavutil). Requires C++17.
//
//   AVFrame* f = ...;                                    // from avcodec_receive_frame
//   tensor::ffmpeg::Planes p = tensor::ffmpeg::planes(f); // y, u (, v): no copy
//   tensor::Tensor x = tensor::Tensor::empty({3, f->height, f->width}, tensor::kFloat32);
//   tensor::ffmpeg::to_rgb(x, f, 0, {1 / (255 * .229), 1 / (255 * .224), 1 / (255 * .225)},
//                          {-.485 / .229, -.456 / .224, -.406 / .225});  // one pass
//   av_frame_unref(f);                                   // p's tensors keep the pixels
//
// planes(frame) wraps the planes of an NV12 or YUV420P / YUVJ420P frame as uint8 tensors
// (tensor_from_blob_bytes with the frame's linesize as the row stride): y [H, W]; I420:
// u, v [ceil(H/2), ceil(W/2)]; NV12: u [ceil(H/2), ceil(W/2), 2] and v undefined. The
// tensors hold one new reference on the frame's buffers (one av_frame_clone shared by the
// planes, av_frame_free'd when the last of them dies, on whichever thread that is), as
// from_mat holds the Mat: the decoder may unref or reuse its frame at once. A frame
// whose planes are not reference-counted (no buf[0]) is refused, as is any other pixel
// format (TENSOR_ERR_INVALID_ARGUMENT) or a negative linesize (bottom-up frames).
//
// color_of(frame) is the TENSOR_YUV_* code the frame signals: BT.709 for AVCOL_SPC_BT709,
// BT.2020 for BT2020_NCL / BT2020_CL, BT.601 otherwise (also for unspecified, as
// libswscale defaults); full range for AVCOL_RANGE_JPEG and the YUVJ formats, limited
// otherwise. to_rgb(dst, frame, channel_dim, scale, shift[, color]) is
// dst.copy_yuv_affine_ over planes(frame) (color defaults to color_of(frame)).
//
// Errors are reported as everywhere in tensor.hpp (tensor::Error, or the error handler
// with -fno-exceptions).
#ifndef LIBTENSOR_TENSOR_FFMPEG_HPP
#define LIBTENSOR_TENSOR_FFMPEG_HPP

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

#include <memory>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace tensor {
namespace ffmpeg {

/// The planes of a frame as tensors (v undefined for NV12).
struct Planes {
  Tensor y, u, v;
  bool nv12 = false;
};

/// The TENSOR_YUV_* code (matrix | range) the frame signals.
inline int32_t color_of(const AVFrame* f) {
  int32_t m = TENSOR_YUV_BT601;
  if (f->colorspace == AVCOL_SPC_BT709) m = TENSOR_YUV_BT709;
  if (f->colorspace == AVCOL_SPC_BT2020_NCL || f->colorspace == AVCOL_SPC_BT2020_CL) m = TENSOR_YUV_BT2020;
  bool full = f->color_range == AVCOL_RANGE_JPEG || f->format == AV_PIX_FMT_YUVJ420P;
  return m | (full ? TENSOR_YUV_FULL : TENSOR_YUV_LIMITED);
}

/// Wraps the planes of an NV12 or YUV420P / YUVJ420P frame without copying (see the top).
inline Planes planes(const AVFrame* f) {
  if (f == nullptr) detail::fail(TENSOR_ERR_NULL_POINTER, "ffmpeg::planes: frame is NULL");
  const bool nv12 = f->format == AV_PIX_FMT_NV12;
  if (!nv12 && f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "ffmpeg::planes: pixel format " + std::to_string(f->format) +
                                                  " is not NV12, YUV420P or YUVJ420P");
  if (f->buf[0] == nullptr)
    detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "ffmpeg::planes: the frame's planes are not reference-counted");
  const int np = nv12 ? 2 : 3;
  for (int p = 0; p < np; p++)
    if (f->data[p] == nullptr || f->linesize[p] < 0)
      detail::fail(TENSOR_ERR_INVALID_ARGUMENT, "ffmpeg::planes: plane " + std::to_string(p) +
                                                    " is missing or has a negative linesize (" +
                                                    std::to_string(f->linesize[p]) + ")");
  // One reference for all the planes; freed when the last tensor's deleter drops it (or
  // here, if wrapping fails: the deleters that never ran still release their copy).
  std::shared_ptr<AVFrame> ref(av_frame_clone(f), [](AVFrame* r) { av_frame_free(&r); });
  if (!ref) detail::fail(TENSOR_ERR_OUT_OF_MEMORY, "ffmpeg::planes: av_frame_clone failed");
  const int64_t h = f->height, w = f->width, hc = (h + 1) / 2, wc = (w + 1) / 2;
  auto wrap = [&](int p, int64_t rows, int64_t cols, int64_t inner) {
    auto keep = ref;
    std::vector<int64_t> sizes{rows, cols}, strides{ref->linesize[p], inner};
    if (inner > 1) sizes.push_back(inner), strides.push_back(1);
    return Tensor::from_blob_bytes(ref->data[p], sizes, strides, kUInt8, [keep](void*) mutable { keep.reset(); });
  };
  Planes out;
  out.nv12 = nv12;
  out.y = wrap(0, h, w, 1);
  out.u = wrap(1, hc, wc, nv12 ? 2 : 1);
  if (!nv12) out.v = wrap(2, hc, wc, 1);
  return out;
}

/// dst.copy_yuv_affine_ over the frame's planes, in the colour the frame signals unless
/// `color` (a TENSOR_YUV_* code) is given.
inline Tensor& to_rgb(Tensor& dst, const AVFrame* f, int64_t channel_dim, const std::vector<double>& scale,
                      const std::vector<double>& shift, int32_t color = -1) {
  Planes p = planes(f);
  return dst.copy_yuv_affine_(p.y, p.u, p.v, color == -1 ? color_of(f) : color, channel_dim, scale, shift);
}

}  // namespace ffmpeg
}  // namespace tensor

#endif  // LIBTENSOR_TENSOR_FFMPEG_HPP
