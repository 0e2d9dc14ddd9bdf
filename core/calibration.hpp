// A calibration bundle: what the probe (validation/probe/hetplan_probe.py) measured on one
// node — GEMMs, memory bandwidth, attention, element-wise kernels, one decoder layer, a small
// real training step, operator coverage and collectives. docs/formats/calibration-bundle.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/workload.hpp"

namespace hetplan {

struct GemmSample {
  DType dtype = DType::fp32;
  std::string layout = "nn";  // nt: forward x W^T; nn: input gradient; tn: weight gradient
  double m = 0, n = 0, k = 0;
  double seconds = 0;
};

struct MemorySample {
  std::string kernel;  // copy, scale, add, triad
  double bytes = 0;    // read + written per call
  double seconds = 0;
};

struct AttentionSample {
  DType dtype = DType::fp32;
  int batch = 0, heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  std::string kernel;  // sdpa (the framework's fused kernel) or math
  double forward_s = 0, backward_s = 0;
};

struct ElementwiseSample {
  std::string op;  // add, mul, gelu, silu, softmax, layernorm, rmsnorm
  DType dtype = DType::fp32;
  double elements = 0;
  double seconds = 0;
};

struct LayerSample {
  ModelShape model;  // a mixture's layer when model.experts > 0 (no expert parallelism)
  DType dtype = DType::fp32;
  int micro_batch = 1, seq = 0;
  bool grouped_gemm = true;  // a mixture's experts in one grouped GEMM, else one GEMM each
  double forward_s = 0, backward_s = 0;
};

// A real training step, measured for checking predictions; never used for fitting.
struct StepSample {
  ModelShape model;
  DType dtype = DType::fp32;
  int micro_batch = 1, seq = 0;
  Optimizer optimizer = Optimizer::adamw;
  double seconds = 0;
};

struct OperatorSample {
  OpClass op = OpClass::gemm;
  Support status = Support::native;
  std::string detail;
};

struct CollectiveSample {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, broadcast, all_to_all
  int ranks = 0;
  double bytes = 0;  // nccl-tests' size convention
  double seconds = 0;
};

struct ProbeHost {
  std::string hostname, backend, device, torch, collective_backend;
  int devices = 0, threads = 0;
  SoftwareComponent runtime;
};

struct CalibrationBundle {
  std::string file;
  std::string probe_version, started;
  bool quick = false;
  ProbeHost host;
  std::map<DType, bool> dtypes;
  std::vector<GemmSample> gemm;
  std::vector<MemorySample> memory;
  std::vector<AttentionSample> attention;
  std::vector<ElementwiseSample> elementwise;
  std::vector<LayerSample> layers;
  std::vector<StepSample> steps;
  std::vector<OperatorSample> operators;
  std::vector<CollectiveSample> collectives;
  std::vector<std::string> skipped;  // "what: why"
};

}  // namespace hetplan
