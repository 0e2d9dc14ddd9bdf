// Reads calibration bundles (docs/formats/calibration-bundle.md).
#include <optional>

#include "formats/document.hpp"
#include "formats/loaders.hpp"

namespace hetplan::formats {
namespace {

constexpr double kMaxSeconds = 1e6;
// The shortest time a sample may hold: the probe floors a difference lost in noise at 1 ns, and
// nothing it times is shorter. Below it a measured time only makes errors and rates infinite.
constexpr double kMinSeconds = 1e-9;
constexpr double kMaxCount = 1e15;

DType read_dtype(const Field& field) {
  static constexpr DType kDTypes[] = {DType::fp32, DType::fp16, DType::bf16, DType::fp8};
  return kDTypes[field.as_choice({"fp32", "fp16", "bf16", "fp8"})];
}

double seconds(MapReader& map, std::string_view key) {
  const Field field = map.required(key);
  const double value = field.as_number(0.0, kMaxSeconds);
  if (value < kMinSeconds) field.fail_expected("a time in seconds of at least 1e-9 (1 ns)");
  return value;
}

// A layer's or a step's model. A layer's may be a mixture of experts (`mixture_allowed`):
// experts, experts_per_token and expert_ffn in place of the dense MLP's ffn.
ModelShape read_model(const Field& field, bool mixture_allowed = false) {
  MapReader map(field);
  ModelShape model;
  model.model_type = "custom";
  if (auto layers = map.optional("layers")) model.layers = static_cast<int>(layers->as_int(1, 100000));
  model.hidden = static_cast<int>(map.required("hidden").as_int(1, 1 << 20));
  model.heads = static_cast<int>(map.required("heads").as_int(1, 1 << 16));
  model.kv_heads = static_cast<int>(map.required("kv_heads").as_int(1, 1 << 16));
  std::optional<Field> experts;
  if (mixture_allowed) experts = map.optional("experts");
  if (experts) {
    model.experts = static_cast<int>(experts->as_int(2, 1 << 16));
    model.experts_per_token =
        static_cast<int>(map.required("experts_per_token").as_int(1, model.experts));
    model.expert_ffn = static_cast<int>(map.required("expert_ffn").as_int(1, 1 << 22));
  } else {
    model.ffn = static_cast<int>(map.required("ffn").as_int(1, 1 << 22));
  }
  if (auto vocab = map.optional("vocab")) model.vocab = static_cast<int>(vocab->as_int(1, 1 << 24));
  model.activation = map.required("activation").as_choice({"swiglu", "gelu"}) == 0
                         ? Activation::swiglu
                         : Activation::gelu;
  model.norm =
      map.required("norm").as_choice({"rmsnorm", "layernorm"}) == 0 ? Norm::rmsnorm : Norm::layernorm;
  if (auto tied = map.optional("tied_embeddings")) model.tied_embeddings = tied->as_bool();
  model.linear_bias = false;
  map.done();
  if (experts && model.activation != Activation::swiglu)
    field.fail("expected activation swiglu for a mixture's experts");
  if (model.hidden % model.heads != 0) field.fail("expected hidden to be a multiple of heads");
  if (model.heads % model.kv_heads != 0) field.fail("expected heads to be a multiple of kv_heads");
  return model;
}

OpClass read_op_class(const Field& field) {
  static constexpr OpClass kClasses[] = {
      OpClass::gemm,      OpClass::flash_attention, OpClass::attention_unfused, OpClass::norm,
      OpClass::activation, OpClass::rope,           OpClass::embedding,         OpClass::cross_entropy,
      OpClass::optimizer, OpClass::dropout};
  return kClasses[field.as_choice({"gemm", "flash_attention", "attention_unfused", "norm",
                                   "activation", "rope", "embedding", "cross_entropy", "optimizer",
                                   "dropout"})];
}

}  // namespace

CalibrationBundle parse_calibration_bundle(const std::string& text, const std::string& file_name) {
  const YAML::Node root_node = parse_document(text, file_name);
  const Field root_field = document_root(root_node, file_name, kCalibrationBundleSchema);
  MapReader root(root_field);
  root.required("schema");
  CalibrationBundle bundle;
  bundle.file = file_name;
  {
    MapReader probe(root.required("probe"));
    bundle.probe_version = probe.required("version").as_string();
    bundle.started = probe.required("started").as_string();
    probe.required("seconds").as_number(0.0, kMaxSeconds);
    bundle.quick = probe.required("quick").as_bool();
    probe.required("seed").as_int(0, INT64_MAX);
    probe.done();
  }
  {
    MapReader host(root.required("host"));
    bundle.host.hostname = host.required("hostname").as_string();
    const Field backend = host.required("backend");
    backend.as_choice({"cpu", "cuda", "npu", "mlu"});
    bundle.host.backend = backend.as_string();
    bundle.host.device = host.required("device").as_string();
    bundle.host.devices = static_cast<int>(host.required("devices").as_int(0, 1 << 20));
    bundle.host.threads = static_cast<int>(host.required("threads").as_int(0, 1 << 20));
    bundle.host.torch = host.required("torch").as_string();
    MapReader runtime(host.required("runtime"));
    bundle.host.runtime.name = runtime.required("name").as_string();
    bundle.host.runtime.version = runtime.required("version").as_string();
    runtime.done();
    bundle.host.collective_backend = host.required("collective_backend").as_string();
    host.done();
  }
  {
    MapReader dtypes(root.required("dtypes"));
    for (const auto& [name, dtype] :
         {std::pair{"fp32", DType::fp32}, {"fp16", DType::fp16}, {"bf16", DType::bf16}}) {
      bundle.dtypes[dtype] = dtypes.required(name).as_bool();
    }
    dtypes.done();
  }
  for (const Field& element : root.required("gemm").elements()) {
    MapReader map(element);
    GemmSample s;
    s.dtype = read_dtype(map.required("dtype"));
    if (auto layout = map.optional("layout")) {
      layout->as_choice({"nn", "nt", "tn"});
      s.layout = layout->as_string();
    }
    s.m = static_cast<double>(map.required("m").as_int(1, 1 << 24));
    s.n = static_cast<double>(map.required("n").as_int(1, 1 << 24));
    s.k = static_cast<double>(map.required("k").as_int(1, 1 << 24));
    s.seconds = seconds(map, "seconds");
    map.done();
    bundle.gemm.push_back(s);
  }
  for (const Field& element : root.required("memory").elements()) {
    MapReader map(element);
    MemorySample s;
    const Field kernel = map.required("kernel");
    kernel.as_choice({"copy", "scale", "add", "triad"});
    s.kernel = kernel.as_string();
    s.bytes = map.required("bytes").as_number(1.0, kMaxCount);
    s.seconds = seconds(map, "seconds");
    map.done();
    bundle.memory.push_back(s);
  }
  for (const Field& element : root.required("attention").elements()) {
    MapReader map(element);
    AttentionSample s;
    s.dtype = read_dtype(map.required("dtype"));
    s.batch = static_cast<int>(map.required("batch").as_int(1, 1 << 20));
    s.heads = static_cast<int>(map.required("heads").as_int(1, 1 << 16));
    s.seq = static_cast<int>(map.required("seq").as_int(1, 1 << 24));
    s.head_dim = static_cast<int>(map.required("head_dim").as_int(1, 1 << 16));
    s.causal = map.required("causal").as_bool();
    const Field kernel = map.required("kernel");
    kernel.as_choice({"sdpa", "math"});
    s.kernel = kernel.as_string();
    s.forward_s = seconds(map, "forward_seconds");
    s.backward_s = seconds(map, "backward_seconds");
    map.done();
    bundle.attention.push_back(s);
  }
  for (const Field& element : root.required("elementwise").elements()) {
    MapReader map(element);
    ElementwiseSample s;
    const Field op = map.required("op");
    op.as_choice({"add", "mul", "gelu", "silu", "softmax", "layernorm", "rmsnorm"});
    s.op = op.as_string();
    s.dtype = read_dtype(map.required("dtype"));
    s.elements = map.required("elements").as_number(1.0, kMaxCount);
    s.seconds = seconds(map, "seconds");
    map.done();
    bundle.elementwise.push_back(s);
  }
  for (const Field& element : root.required("layer").elements()) {
    MapReader map(element);
    LayerSample s;
    s.model = read_model(map.required("model"), true);
    s.dtype = read_dtype(map.required("dtype"));
    s.micro_batch = static_cast<int>(map.required("micro_batch").as_int(1, 1 << 20));
    s.seq = static_cast<int>(map.required("seq").as_int(1, 1 << 24));
    if (auto grouped = map.optional("grouped_gemm")) {
      if (!s.model.moe()) grouped->fail("expected only with a mixture's experts (model.experts)");
      s.grouped_gemm = grouped->as_bool();
    }
    s.forward_s = seconds(map, "forward_seconds");
    s.backward_s = seconds(map, "backward_seconds");
    map.done();
    bundle.layers.push_back(s);
  }
  for (const Field& element : root.required("step").elements()) {
    MapReader map(element);
    StepSample s;
    const Field model = map.required("model");
    s.model = read_model(model);
    if (s.model.layers == 0 || s.model.vocab == 0) model.fail("expected layers and vocab");
    s.dtype = read_dtype(map.required("dtype"));
    s.micro_batch = static_cast<int>(map.required("micro_batch").as_int(1, 1 << 20));
    s.seq = static_cast<int>(map.required("seq").as_int(1, 1 << 24));
    map.required("optimizer").as_choice({"adamw"});
    s.optimizer = Optimizer::adamw;
    s.seconds = seconds(map, "seconds");
    map.done();
    bundle.steps.push_back(s);
  }
  for (const Field& element : root.required("operators").elements()) {
    MapReader map(element);
    OperatorSample s;
    s.op = read_op_class(map.required("class"));
    s.status = static_cast<Support>(map.required("status").as_choice({"native", "fallback", "missing"}));
    s.detail = map.required("detail").as_string();
    map.done();
    bundle.operators.push_back(s);
  }
  for (const Field& element : root.required("collectives").elements()) {
    MapReader map(element);
    CollectiveSample s;
    const Field collective = map.required("collective");
    collective.as_choice({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"});
    s.collective = collective.as_string();
    s.ranks = static_cast<int>(map.required("ranks").as_int(2, 1 << 20));  // a collective needs two
    s.bytes = map.required("bytes").as_number(1.0, kMaxCount);
    s.seconds = seconds(map, "seconds");
    map.done();
    bundle.collectives.push_back(s);
  }
  if (auto skipped = root.optional("skipped")) {
    for (const Field& element : skipped->elements()) {
      MapReader map(element);
      bundle.skipped.push_back(map.required("what").as_string() + ": " +
                               map.required("why").as_string());
      map.done();
    }
  }
  root.done();
  return bundle;
}

CalibrationBundle load_calibration_bundle(const std::string& path) {
  return parse_calibration_bundle(read_text_file(path), path);
}

}  // namespace hetplan::formats
