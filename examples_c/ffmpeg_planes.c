/* Decoded video frames to normalized RGB CHW tensors in one pass (tensor_copy_yuv_affine_),
 * wrapping the decoder's planes without copying.
 *
 * The program first makes a short video: FRAMES flat-colour YUV420P frames, each its own
 * colour, encoded in memory with libavcodec's MPEG-4 Part 2 encoder (built into every
 * libavcodec, Debian's too; no file, no libavformat). Then it decodes that bitstream the way
 * a player does (avcodec_send_packet / avcodec_receive_frame). The decoder hands out
 * YUV420P AVFrames whose rows are padded: linesize[p] (BYTES from one row to the next) is
 * larger than the visible width. Each plane becomes a uint8 tensor through
 * tensor_from_blob_bytes, which takes those byte strides as they are; each tensor owns one
 * new reference on the frame's buffers (av_frame_clone) as its deleter context, and the
 * deleter av_frame_free()s it: the decoder may reuse its frame at once, and the pixels live
 * exactly as long as the tensors. One call per frame then writes (rgb / 255 - mean) / std
 * into a reused float32 [3, H, W] tensor.
 *
 * Checks: every frame comes out of the decoder and is converted, in order; each converted
 * frame's per-channel mean is the expected normalized value of the colour that was encoded
 * (the header's formula in double) within what MPEG-4 quantization at qscale 2 can move a
 * flat colour, and no pixel is further off than that either; every plane's deleter ran
 * exactly once.
 *
 * Build and run: cargo test --test c_api examples_run   (or by hand:
 *   cc -std=c99 -Iinclude examples_c/ffmpeg_planes.c -Ltarget/debug -ltensor -lavcodec -lavutil)
 */
// c_api-pkg: libavcodec libavutil
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor.h"

#define TRY(call)                                                                            \
  do {                                                                                       \
    tensor_status_t st_ = (call);                                                            \
    if (st_ != TENSOR_OK) {                                                                  \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tensor_status_string(st_), tensor_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

enum { W = 100, H = 60, FRAMES = 5 }; /* 100 is no multiple of 16: the decoder pads its rows */

/* The encoded colours (Y, U, V), each well inside the RGB cube (no clamping). */
static const int COLOUR[FRAMES][3] = {{120, 110, 150}, {60, 140, 100}, {180, 128, 128}, {100, 160, 120}, {150, 100, 135}};
static const double MEAN[3] = {0.485, 0.456, 0.406}, STDV[3] = {0.229, 0.224, 0.225};

static int frees = 0;

/* The deleter: drops the tensor's reference on the frame's buffers. */
static void free_frame_ref(void *data, void *ctx) {
  AVFrame *ref = ctx;
  (void)data;
  av_frame_free(&ref);
  frees++;
}

/* A tensor over plane p of `frame` (rows x cols visible bytes, linesize apart). */
static tensor_t *wrap_plane(const AVFrame *frame, int p, int64_t rows, int64_t cols) {
  AVFrame *ref = av_frame_clone(frame); /* +1 on the plane buffers */
  int64_t sizes[2] = {rows, cols};
  int64_t byte_strides[2] = {frame->linesize[p], 1};
  tensor_t *t = NULL;
  const tensor_device_t cpu = {1, 0};
  EXPECT(ref != NULL);
  TRY(tensor_from_blob_bytes(ref->data[p], sizes, byte_strides, 2, TENSOR_UINT8, cpu, free_frame_ref, ref, &t));
  return t;
}

/* R, G, B in 0..255 of (Y, U, V), BT.601 limited range: the header's formula, in double. */
static void rgb_of(const int yuv[3], double rgb[3]) {
  const double kc = 255.0 / 224, yy = (yuv[0] - 16) * 255.0 / 219, u = yuv[1] - 128.0, v = yuv[2] - 128.0;
  rgb[0] = yy + 1.402 * kc * v;
  rgb[1] = yy - 1.772 * 0.114 / 0.587 * kc * u - 1.402 * 0.299 / 0.587 * kc * v;
  rgb[2] = yy + 1.772 * kc * u;
}

/* ---- making the video: FRAMES flat frames through the MPEG-4 encoder, packets kept ---- */

static AVPacket *packets[4 * FRAMES];
static int npackets = 0;

static void drain_encoder(AVCodecContext *enc) {
  for (;;) {
    AVPacket *pkt = av_packet_alloc();
    EXPECT(pkt != NULL);
    int r = avcodec_receive_packet(enc, pkt);
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) {
      av_packet_free(&pkt);
      return;
    }
    EXPECT(r == 0 && npackets < 4 * FRAMES);
    packets[npackets++] = pkt;
  }
}

static void encode_video(void) {
  const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  EXPECT(codec != NULL);
  AVCodecContext *enc = avcodec_alloc_context3(codec);
  EXPECT(enc != NULL);
  enc->width = W;
  enc->height = H;
  enc->pix_fmt = AV_PIX_FMT_YUV420P;
  enc->time_base = (AVRational){1, 25};
  enc->framerate = (AVRational){25, 1};
  enc->gop_size = 3; /* intra frames and predicted ones */
  enc->max_b_frames = 0;
  enc->flags |= AV_CODEC_FLAG_QSCALE; /* constant quantizer 2: near-lossless on flat frames */
  enc->global_quality = FF_QP2LAMBDA * 2;
  EXPECT(avcodec_open2(enc, codec, NULL) == 0);
  for (int n = 0; n < FRAMES; n++) {
    AVFrame *f = av_frame_alloc();
    EXPECT(f != NULL);
    f->format = AV_PIX_FMT_YUV420P;
    f->width = W;
    f->height = H;
    EXPECT(av_frame_get_buffer(f, 0) == 0);
    for (int p = 0; p < 3; p++)
      for (int i = 0; i < (p ? H / 2 : H); i++)
        for (int j = 0; j < (p ? W / 2 : W); j++) f->data[p][i * f->linesize[p] + j] = (uint8_t)COLOUR[n][p];
    f->pts = n;
    EXPECT(avcodec_send_frame(enc, f) == 0);
    av_frame_free(&f);
    drain_encoder(enc);
  }
  EXPECT(avcodec_send_frame(enc, NULL) == 0); /* flush */
  drain_encoder(enc);
  avcodec_free_context(&enc);
}

/* ---- decoding it and converting each frame ---- */

static tensor_t *rgb = NULL; /* [3, H, W] float32, reused for every frame */
static int converted = 0;
static int seen[FRAMES];

static void convert(const AVFrame *frame) {
  EXPECT(frame->format == AV_PIX_FMT_YUV420P && frame->width == W && frame->height == H);
  EXPECT(frame->linesize[0] > W && frame->linesize[1] >= W / 2); /* padded rows, as decoders do */
  const int64_t n = frame->pts;
  EXPECT(n == converted && n < FRAMES); /* no B-frames: out in order, each once */
  seen[n]++;
  if (n == 0)
    printf("decoded YUV420P %dx%d: linesize %d/%d/%d bytes (visible widths %d/%d/%d)\n", W, H, frame->linesize[0],
           frame->linesize[1], frame->linesize[2], W, W / 2, W / 2);
  tensor_t *y = wrap_plane(frame, 0, H, W);
  tensor_t *u = wrap_plane(frame, 1, (H + 1) / 2, (W + 1) / 2);
  tensor_t *v = wrap_plane(frame, 2, (H + 1) / 2, (W + 1) / 2);
  EXPECT(tensor_strides(y)[0] == frame->linesize[0] && tensor_strides(y)[1] == 1); /* uint8: bytes == elements */
  EXPECT(tensor_data_ptr(y) == frame->data[0]);                                    /* no copy */

  /* BT.601 limited range (what an SD decoder signals: frame->colorspace,
   * frame->color_range), chroma replicated over each 2x2 block, then (rgb / 255 - mean) / std
   * per channel, in one pass. */
  double sc[3], sh[3];
  for (int c = 0; c < 3; c++) sc[c] = 1.0 / (255.0 * STDV[c]), sh[c] = -MEAN[c] / STDV[c];
  TRY(tensor_copy_yuv_affine_(rgb, y, u, v, TENSOR_YUV_BT601 | TENSOR_YUV_LIMITED, 0, sc, sh, 3));
  tensor_release(y);
  tensor_release(u);
  tensor_release(v);
  EXPECT(frees == 3 * (converted + 1)); /* the last references of the wrappers: the clones are freed */

  /* The encoded colour, normalized: MPEG-4 at qscale 2 keeps a flat Y, U, V within about 1
   * level (here exactly), which moves R, G, B by at most 1.164 + 2.017 < 3.5 (in 0..255);
   * the frame's mean within 1 level (a wrong matrix, range or channel order is off by more:
   * BT.709's R of frame 0, for one, by 4.3). */
  double want[3];
  rgb_of(COLOUR[n], want);
  const float *px = tensor_data_ptr(rgb);
  printf("frame %lld:", (long long)n);
  for (int c = 0; c < 3; c++) {
    const double expect = want[c] * sc[c] + sh[c];
    double sum = 0, worst = 0;
    for (int k = 0; k < W * H; k++) {
      const double d = px[c * W * H + k], e = fabs(d - expect);
      sum += d;
      if (e > worst) worst = e;
    }
    const double mean = sum / (W * H);
    printf(" %c mean %+.4f (encoded %+.4f, max |difference| %.4f)", "RGB"[c], mean, expect, worst);
    EXPECT(fabs(mean - expect) <= 1.0 * sc[c] && worst <= 3.5 * sc[c]);
  }
  printf("\n");
  converted++;
}

static void receive_frames(AVCodecContext *dec, AVFrame *frame) {
  for (;;) {
    int r = avcodec_receive_frame(dec, frame);
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
    EXPECT(r == 0);
    convert(frame);
    av_frame_unref(frame); /* the decoder may reuse the buffers: the tensors' clones are gone too */
  }
}

int main(void) {
  encode_video();
  EXPECT(npackets == FRAMES);
  int64_t chw[3] = {3, H, W};
  TRY(tensor_empty(chw, 3, TENSOR_FLOAT32, &rgb));

  const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MPEG4);
  EXPECT(codec != NULL);
  AVCodecContext *dec = avcodec_alloc_context3(codec);
  EXPECT(dec != NULL);
  dec->thread_count = 1;
  EXPECT(avcodec_open2(dec, codec, NULL) == 0);
  AVFrame *frame = av_frame_alloc();
  EXPECT(frame != NULL);
  for (int k = 0; k < npackets; k++) {
    EXPECT(avcodec_send_packet(dec, packets[k]) == 0);
    receive_frames(dec, frame);
    av_packet_free(&packets[k]);
  }
  EXPECT(avcodec_send_packet(dec, NULL) == 0); /* end of stream: the delayed frames */
  receive_frames(dec, frame);
  av_frame_free(&frame);
  avcodec_free_context(&dec);
  tensor_release(rgb);

  EXPECT(converted == FRAMES);
  for (int n = 0; n < FRAMES; n++) EXPECT(seen[n] == 1);
  EXPECT(frees == 3 * FRAMES); /* each plane's deleter ran once per frame */
  printf("ffmpeg_planes: ok (%d packets decoded, %d frames converted, %d planes wrapped zero-copy, %d frame "
         "references freed)\n",
         npackets, converted, 3 * converted, frees);
  return 0;
}
