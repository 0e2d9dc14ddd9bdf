// Reads workloads (docs/formats/workload.md) and Hugging Face config.json files.
#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"

namespace hetplan::formats {
namespace {

constexpr std::int64_t kMaxDim = 1 << 20;

// Reads the keys of a Hugging Face config this model type uses; other keys are Hugging Face's
// business and are left alone.
class HfReader {
 public:
  explicit HfReader(const Field& root) : root_(root), map_(root) {}

  int integer(std::string_view key, std::int64_t min = 1, std::int64_t max = kMaxDim) {
    return static_cast<int>(map_.required(key).as_int(min, max));
  }
  std::optional<int> optional_integer(std::string_view key, std::int64_t min = 1) {
    auto field = map_.optional(key);
    if (!field || field->is_null()) return std::nullopt;
    return static_cast<int>(field->as_int(min, kMaxDim));
  }
  std::optional<bool> flag(std::string_view key) {
    auto field = map_.optional(key);
    if (!field || field->is_null()) return std::nullopt;
    return field->as_bool();
  }
  std::optional<double> number(std::string_view key, double min = 0.0, double max = 1.0) {
    auto field = map_.optional(key);
    if (!field || field->is_null()) return std::nullopt;
    return field->as_number(min, max);
  }
  std::optional<Field> field(std::string_view key) { return map_.optional(key); }

 private:
  Field root_;
  MapReader map_;
};

Activation activation_from(const Field& field) {
  const std::string name = field.as_string();
  if (name == "silu" || name == "swish") return Activation::swiglu;  // gated in these families
  if (name == "gelu" || name == "gelu_new" || name == "gelu_fast" || name == "gelu_pytorch_tanh")
    return Activation::gelu;
  if (name == "relu") return Activation::relu;
  field.fail_expected(
      "an activation hetplan models (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

ModelShape read_hf(const Field& root) {
  HfReader hf(root);
  ModelShape model;
  const auto type_entry = hf.field("model_type");
  if (!type_entry) throw InputError(root.location(), "model_type", "missing required key");
  const Field& type_field = *type_entry;
  const auto kind = type_field.as_choice({"llama", "mistral", "qwen2", "gpt2", "gpt_neox", "opt"});
  model.model_type = type_field.as_string();
  switch (kind) {
    case 0:    // llama
    case 1:    // mistral
    case 2: {  // qwen2
      model.layers = hf.integer("num_hidden_layers");
      model.hidden = hf.integer("hidden_size");
      model.heads = hf.integer("num_attention_heads");
      model.kv_heads = hf.optional_integer("num_key_value_heads").value_or(model.heads);
      model.ffn = hf.integer("intermediate_size");
      model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.optional_integer("max_position_embeddings").value_or(0);
      if (auto act = hf.field("hidden_act"))
        model.activation = activation_from(*act);
      else
        model.activation = Activation::swiglu;
      model.norm = Norm::rmsnorm;
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(false);
      // qwen2 has biases on Q, K and V only (its attention always does); llama and mistral
      // have none by default, attention_bias puts them on Q, K, V (and the output).
      model.linear_bias =
          hf.flag("attention_bias").value_or(false) && hf.flag("mlp_bias").value_or(false);
      model.qkv_bias = !model.linear_bias && (kind == 2 || hf.flag("attention_bias").value_or(false));
      if (auto theta = hf.number("rope_theta", 1.0, 1e12)) model.rope_theta = *theta;
      if (auto eps = hf.number("rms_norm_eps", 1e-12, 0.1)) model.norm_eps = *eps;
      model.dropout = hf.number("attention_dropout").value_or(0.0) > 0.0;
      break;
    }
    case 3: {  // gpt2
      model.layers = hf.integer("n_layer");
      model.hidden = hf.integer("n_embd");
      model.heads = hf.integer("n_head");
      model.kv_heads = model.heads;
      model.ffn = hf.optional_integer("n_inner").value_or(4 * model.hidden);
      model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.integer("n_positions");
      if (auto act = hf.field("activation_function")) model.activation = activation_from(*act);
      model.norm = Norm::layernorm;
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(true);
      model.linear_bias = true;
      model.learned_positions = true;
      model.dropout = hf.number("resid_pdrop").value_or(0.1) > 0.0;
      if (auto eps = hf.number("layer_norm_epsilon", 1e-12, 0.1)) model.norm_eps = *eps;
      break;
    }
    case 4: {  // gpt_neox
      model.layers = hf.integer("num_hidden_layers");
      model.hidden = hf.integer("hidden_size");
      model.heads = hf.integer("num_attention_heads");
      model.kv_heads = model.heads;
      model.ffn = hf.integer("intermediate_size");
      model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.optional_integer("max_position_embeddings").value_or(0);
      if (auto act = hf.field("hidden_act")) model.activation = activation_from(*act);
      if (model.activation == Activation::swiglu) model.activation = Activation::gelu;  // not gated
      model.norm = Norm::layernorm;
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(false);
      model.linear_bias = true;
      model.dropout = hf.number("hidden_dropout").value_or(0.0) > 0.0;
      if (auto base = hf.number("rotary_emb_base", 1.0, 1e12)) model.rope_theta = *base;
      if (auto eps = hf.number("layer_norm_eps", 1e-12, 0.1)) model.norm_eps = *eps;
      // Pythia turns a quarter of each head's dimensions (rotary_pct 0.25).
      if (auto share = hf.number("rotary_pct", 0.01, 1.0)) model.rotary_percent = *share;
      break;
    }
    default: {  // opt
      model.layers = hf.integer("num_hidden_layers");
      model.hidden = hf.integer("hidden_size");
      model.heads = hf.integer("num_attention_heads");
      model.kv_heads = model.heads;
      model.ffn = hf.integer("ffn_dim");
      model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.integer("max_position_embeddings");
      if (auto act = hf.field("activation_function")) model.activation = activation_from(*act);
      if (model.activation == Activation::swiglu) model.activation = Activation::relu;
      model.norm = Norm::layernorm;
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(true);
      model.linear_bias = hf.flag("enable_bias").value_or(true);
      model.learned_positions = true;
      model.dropout = hf.number("dropout").value_or(0.1) > 0.0;
      break;
    }
  }
  return model;
}

void check_shape(const ModelShape& model, const Field& where) {
  if (model.hidden % model.heads != 0) {
    where.fail("expected hidden size (" + std::to_string(model.hidden) +
               ") divisible by the number of attention heads (" + std::to_string(model.heads) +
               ")");
  }
  if (model.kv_heads <= 0 || model.heads % model.kv_heads != 0) {
    where.fail("expected the number of attention heads (" + std::to_string(model.heads) +
               ") divisible by the number of key/value heads (" + std::to_string(model.kv_heads) +
               ")");
  }
}

ModelShape read_inline(const Field& field) {
  MapReader map(field);
  ModelShape model;
  model.model_type = "custom";
  if (auto type = map.optional("model_type")) model.model_type = type->as_identifier();
  model.layers = static_cast<int>(map.required("layers").as_int(1, 100000));
  model.hidden = static_cast<int>(map.required("hidden").as_int(1, kMaxDim));
  model.heads = static_cast<int>(map.required("heads").as_int(1, 65536));
  model.kv_heads = model.heads;
  if (auto kv = map.optional("kv_heads")) model.kv_heads = static_cast<int>(kv->as_int(1, 65536));
  model.vocab = static_cast<int>(map.required("vocab").as_int(1, 1 << 24));
  model.activation =
      static_cast<Activation>(map.required("activation").as_choice({"gelu", "swiglu", "relu"}));
  model.ffn = model.activation == Activation::swiglu ? 0 : 4 * model.hidden;
  if (auto ffn = map.optional("ffn"))
    model.ffn = static_cast<int>(ffn->as_int(1, kMaxDim));
  else if (model.activation == Activation::swiglu)
    map.required("ffn");
  model.norm = static_cast<Norm>(map.required("norm").as_choice({"layernorm", "rmsnorm"}));
  if (auto tied = map.optional("tied_embeddings")) model.tied_embeddings = tied->as_bool();
  if (auto bias = map.optional("linear_bias"))
    model.linear_bias = bias->as_bool();
  else
    model.linear_bias = false;
  if (auto bias = map.optional("qkv_bias")) model.qkv_bias = bias->as_bool() && !model.linear_bias;
  if (auto theta = map.optional("rope_theta")) model.rope_theta = theta->as_number(1.0, 1e12);
  if (auto eps = map.optional("norm_eps")) model.norm_eps = eps->as_number(1e-12, 0.1);
  if (auto share = map.optional("rotary_percent")) model.rotary_percent = share->as_number(0.01, 1.0);
  if (auto dropout = map.optional("dropout")) model.dropout = dropout->as_bool();
  if (auto learned = map.optional("learned_positions"))
    model.learned_positions = learned->as_bool();
  if (auto max_pos = map.optional("max_positions"))
    model.max_positions = static_cast<int>(max_pos->as_int(1, 1 << 24));
  if (model.learned_positions && model.max_positions == 0) {
    map.field().fail("max_positions: expected a value when learned_positions is true");
  }
  map.done();
  check_shape(model, field);
  return model;
}

TrainingSettings read_training(const Field& field) {
  MapReader map(field);
  TrainingSettings t;
  t.seq_len = static_cast<int>(map.required("seq_len").as_int(1, 1 << 22));
  t.global_batch = static_cast<int>(map.required("global_batch").as_int(1, 1 << 24));
  if (auto mb = map.optional("micro_batch"))
    t.micro_batch = static_cast<int>(mb->as_int(1, 1 << 16));
  static constexpr DType kTrainingDTypes[] = {DType::fp32, DType::fp16, DType::bf16, DType::fp8};
  t.dtype = kTrainingDTypes[map.required("dtype").as_choice({"fp32", "fp16", "bf16", "fp8"})];
  if (auto accumulation = map.optional("grad_accumulation")) {
    t.fp32_grad_accumulation = accumulation->as_choice({"fp32", "same"}) == 0;
  } else {
    t.fp32_grad_accumulation = default_fp32_grad_accumulation(t.dtype);
  }
  if (auto optimizer = map.optional("optimizer")) {
    t.optimizer = static_cast<Optimizer>(optimizer->as_choice({"adam", "adamw", "sgd"}));
  }
  if (auto zero = map.optional("zero_stage")) t.zero_stage = static_cast<int>(zero->as_int(0, 3));
  if (auto recompute = map.optional("recompute")) {
    t.recompute = static_cast<Recompute>(recompute->as_choice({"none", "selective", "full"}));
  }
  if (auto layers = map.optional("recompute_layers")) {
    t.recompute_layers = static_cast<int>(layers->as_int(1, 100000));
    if (t.recompute != Recompute::full) layers->fail("expected recompute: full beside it");
  }
  if (auto sp = map.optional("sequence_parallel")) t.sequence_parallel = sp->as_bool();
  if (auto flash = map.optional("flash_attention")) t.flash_attention = flash->as_bool();
  auto legacy_overlap = map.optional("overlap_grad_reduce");
  if (auto overlap = map.optional("overlap")) {
    if (legacy_overlap) legacy_overlap->fail("expected either overlap or overlap_grad_reduce, not both");
    MapReader o(*overlap);
    if (auto v = o.optional("grad_reduce")) t.overlap_grad_reduce = v->as_bool();
    if (auto v = o.optional("param_gather")) t.overlap_param_gather = v->as_bool();
    if (auto v = o.optional("tp_comm")) t.overlap_tp_comm = v->as_bool();
    o.done();
    if (t.overlap_param_gather && t.zero_stage == 0) {
      o.field().fail(
          "param_gather: expected zero_stage 1 or more (the weight all-gather it overlaps "
          "belongs to the distributed optimizer)");
    }
  } else if (legacy_overlap) {
    t.overlap_grad_reduce = legacy_overlap->as_bool();
  }
  map.done();
  if (t.global_batch % t.micro_batch != 0) {
    throw InputError(field.location(), field.path() + ".global_batch",
                     "expected a multiple of micro_batch (" + std::to_string(t.micro_batch) +
                         "), got " + std::to_string(t.global_batch));
  }
  return t;
}

}  // namespace

ModelShape parse_hf_config(const std::string& text, const std::string& file_name) {
  const YAML::Node root = parse_document(text, file_name);
  const Field field(root, "", std::make_shared<const std::string>(file_name));
  if (!field.is_map()) field.fail_expected("a JSON object");
  ModelShape model = read_hf(field);
  check_shape(model, field);
  return model;
}

Workload load_workload(const std::string& path) {
  const std::string text = read_text_file(path);
  const YAML::Node root_node = parse_document(text, path);
  const Field root_field = document_root(root_node, path, kWorkloadSchema);
  MapReader root(root_field);
  root.required("schema");
  Workload workload;
  workload.location = {path, 0, 0};
  workload.name = root.required("name").as_identifier();

  MapReader model(root.required("model"));
  auto hf = model.optional("hf_config");
  auto shape = model.optional("shape");
  if (hf && shape) shape->fail("expected either hf_config or shape, not both");
  if (hf) {
    const std::string config_path = resolve_relative(hf->as_string(), path);
    std::string config_text;
    try {
      config_text = read_text_file(config_path);
    } catch (const InputError& error) {
      hf->fail("expected a readable Hugging Face config.json, got \"" + hf->as_string() + "\" (" +
               error.message() + ")");
    }
    workload.model = load_referenced(*hf, [&] { return parse_hf_config(config_text, config_path); });
    workload.model_file = config_path;
  } else if (shape) {
    workload.model = read_inline(*shape);
  } else {
    model.field().fail(
        "expected hf_config (a config.json path) or shape (the model written inline)");
  }
  model.done();
  workload.training = read_training(root.required("training"));
  root.done();
  return workload;
}

}  // namespace hetplan::formats
