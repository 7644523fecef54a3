// The libtorch side of the AOTI benchmark (aoti/bench/bench.py): runs a .pt2 package through
// torch::inductor::AOTIModelPackageLoader (the wheel's libtorch, no Python) under the
// protocol bench_run.c follows:
//   bench_libtorch MODEL.pt2 INPUT.npy...      (threads: OMP_NUM_THREADS)
// loads the model and the inputs, runs once and prints "ready T_FIRST LOAD_MS" (T_FIRST: the
// CLOCK_MONOTONIC seconds at which the first output was there); then for each line "r" on
// stdin runs once and prints the run's nanoseconds, and for "q" prints the process's peak
// RSS in kB and exits. BENCH_SAVE=PREFIX writes the first run's outputs to PREFIX<i>.npy.
// The host links libsleef (Debian's libsleef3) so that vectorized packages, whose kernels
// call Sleef_* and which the wheel's libtorch_cpu does not export, resolve.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

static double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

// A C-order .npy file (format 1.0 / 2.0) of float32, float64, int64, int32 or bool.
static at::Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  size_t hlen, at0;
  if (data[6] == 1) {
    hlen = (uint8_t)data[8] | ((size_t)(uint8_t)data[9] << 8);
    at0 = 10;
  } else {
    hlen = 0;
    for (int i = 0; i < 4; i++) hlen |= (size_t)(uint8_t)data[8 + i] << (8 * i);
    at0 = 12;
  }
  std::string h = data.substr(at0, hlen);
  if (h.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": not C order");
  auto field = [&](const char* key) {
    size_t p = h.find(key);
    if (p == std::string::npos) throw std::runtime_error(path + ": no " + key);
    return p + std::strlen(key);
  };
  size_t d = field("'descr': '");
  std::string descr = h.substr(d, h.find('\'', d) - d);
  at::ScalarType st;
  if (descr == "<f4") st = at::kFloat;
  else if (descr == "<f8") st = at::kDouble;
  else if (descr == "<i8") st = at::kLong;
  else if (descr == "<i4") st = at::kInt;
  else if (descr == "|b1") st = at::kBool;
  else throw std::runtime_error(path + ": dtype " + descr);
  size_t s = field("'shape': (");
  std::vector<int64_t> shape;
  std::stringstream dims(h.substr(s, h.find(')', s) - s));
  std::string tok;
  while (std::getline(dims, tok, ','))
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(st));
  size_t nbytes = t.numel() * t.element_size();
  if (data.size() < at0 + hlen + nbytes) throw std::runtime_error(path + ": short");
  std::memcpy(t.data_ptr(), data.data() + at0 + hlen, nbytes);
  return t;
}

static void save_npy(const std::string& path, at::Tensor t) {
  t = t.contiguous();
  const char* descr = t.scalar_type() == at::kFloat  ? "<f4"
                      : t.scalar_type() == at::kLong ? "<i8"
                      : t.scalar_type() == at::kDouble ? "<f8"
                                                       : nullptr;
  if (!descr) throw std::runtime_error("save_npy: dtype");
  std::string shape;
  for (auto s : t.sizes()) shape += std::to_string(s) + ",";
  std::string h = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                  shape + "), }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t n = (uint16_t)h.size();
  f.write((const char*)&n, 2);
  f.write(h.data(), (std::streamsize)h.size());
  f.write((const char*)t.data_ptr(), (std::streamsize)(t.numel() * t.element_size()));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_libtorch MODEL.pt2 INPUT.npy...\n");
    return 2;
  }
  const char* nt = std::getenv("OMP_NUM_THREADS");
  at::set_num_threads(nt ? std::atoi(nt) : 1);
  c10::InferenceMode guard;
  double t0 = now();
  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  double load = now() - t0;
  std::vector<at::Tensor> inputs;
  for (int i = 2; i < argc; i++) inputs.push_back(load_npy(argv[i]));
  std::vector<at::Tensor> outs = loader.run(inputs);
  double first = now();
  if (const char* prefix = std::getenv("BENCH_SAVE"))
    for (size_t i = 0; i < outs.size(); i++) save_npy(prefix + std::to_string(i) + ".npy", outs[i]);
  outs.clear();
  std::printf("ready %.6f %.3f\n", first, load * 1e3);
  std::fflush(stdout);
  std::string cmd;
  while (std::getline(std::cin, cmd)) {
    if (cmd == "r") {
      t0 = now();
      outs = loader.run(inputs);
      double dt = now() - t0;
      outs.clear();
      std::printf("%.0f\n", dt * 1e9);
    } else {
      std::printf("%ld\n", rss_kb());
      return 0;
    }
    std::fflush(stdout);
  }
  return 0;
}
