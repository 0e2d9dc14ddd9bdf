// Reads workloads (docs/formats/workload.md) and Hugging Face config.json files.
#include <algorithm>
#include <bit>
#include <optional>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "formats/paths.hpp"

namespace hetplan::formats {
namespace {

constexpr std::int64_t kMaxDim = 1 << 20;

// Reads the keys of a Hugging Face config this model type uses; other keys are Hugging Face's
// business and are left alone, except those that speak of experts or routing: a config that
// declares something of mixture-of-experts that hetplan does not read is refused, never
// planned as something else (refuse_unread_moe_keys).
class HfReader {
 public:
  explicit HfReader(const Field& root) : root_(root), map_(root) {}

  int integer(std::string_view key, std::int64_t min = 1, std::int64_t max = kMaxDim) {
    read_.emplace_back(key);
    return static_cast<int>(map_.required(key).as_int(min, max));
  }
  std::optional<int> optional_integer(std::string_view key, std::int64_t min = 1) {
    auto field = this->field(key);
    if (!field || field->is_null()) return std::nullopt;
    return static_cast<int>(field->as_int(min, kMaxDim));
  }
  std::optional<bool> flag(std::string_view key) {
    auto field = this->field(key);
    if (!field || field->is_null()) return std::nullopt;
    return field->as_bool();
  }
  std::optional<double> number(std::string_view key, double min = 0.0, double max = 1.0) {
    auto field = this->field(key);
    if (!field || field->is_null()) return std::nullopt;
    return field->as_number(min, max);
  }
  std::optional<Field> field(std::string_view key) {
    read_.emplace_back(key);
    return map_.optional(key);
  }
  // A key hetplan reads and requires to have one value (`expected`, e.g. "1").
  template <typename Check>
  void require(std::string_view key, Check&& ok, std::string_view expected) {
    auto f = field(key);
    if (f && !f->is_null() && !ok(*f)) f->fail_expected(expected);
  }
  // Keys that do not change the step's cost or memory, read so that they are not refused:
  // Hugging Face's switches and training hyperparameters (docs/formats/workload.md#hf-config).
  void ignore(std::initializer_list<std::string_view> keys) {
    for (auto key : keys) read_.emplace_back(key);
  }
  // Refuses the first key that speaks of experts, routing or multi-token prediction and that
  // was not read: a mixture-of-experts setting hetplan does not model.
  void refuse_unread_moe_keys() const {
    static constexpr std::string_view kWords[] = {"expert", "moe", "router", "routed", "topk",
                                                  "top_k", "n_group", "nextn", "mtp", "sparse"};
    for (const auto& entry : root_.node()) {
      const std::string& key = entry.first.Scalar();  // MapReader checked they are plain
      if (std::find(read_.begin(), read_.end(), key) != read_.end()) continue;
      for (auto word : kWords) {
        if (key.find(word) == std::string::npos) continue;
        const Field field(entry.second, key, root_.file_ptr());
        field.fail("a mixture-of-experts setting hetplan does not model; refused rather than "
                   "planned as something else");
      }
    }
  }

 private:
  Field root_;
  MapReader map_;
  std::vector<std::string> read_;
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

// The keys Llama-style configs share (llama, mistral, qwen2, qwen3, internlm2, mixtral, the
// Qwen and DeepSeek mixtures, glm4).
void read_llama_style(HfReader& hf, ModelShape& model) {
  model.layers = hf.integer("num_hidden_layers");
  model.hidden = hf.integer("hidden_size");
  model.heads = hf.integer("num_attention_heads");
  model.kv_heads = hf.optional_integer("num_key_value_heads").value_or(model.heads);
  model.ffn = hf.integer("intermediate_size");
  model.vocab = hf.integer("vocab_size");
  model.max_positions = hf.optional_integer("max_position_embeddings").value_or(0);
  // A head's width when it is not hidden / heads (Qwen3, GLM-4, Mistral NeMo's 128 against 160);
  // latent attention sets its own below.
  if (auto size = hf.optional_integer("head_dim")) model.head_size = *size;
  // Qwen's configs carry a window with use_sliding_window false; Mistral's apply theirs.
  if (hf.flag("use_sliding_window").value_or(true))
    model.sliding_window = hf.optional_integer("sliding_window", 0).value_or(0);
  if (auto act = hf.field("hidden_act"))
    model.activation = activation_from(*act);
  else
    model.activation = Activation::swiglu;
  model.norm = Norm::rmsnorm;
  model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(false);
  model.linear_bias = false;
  if (auto theta = hf.number("rope_theta", 1.0, 1e12)) model.rope_theta = *theta;
  if (auto eps = hf.number("rms_norm_eps", 1e-12, 0.1)) model.norm_eps = *eps;
  model.dropout = hf.number("attention_dropout").value_or(0.0) > 0.0;
}

// Every layer after the dense ones is a mixture: Qwen's decoder_sparse_step and mlp_only_layers
// and DeepSeek's moe_layer_freq may say otherwise, which hetplan does not model.
void require_every_layer_moe(HfReader& hf, std::string_view step_key) {
  hf.require(step_key, [](const Field& f) { return f.as_int(0, kMaxDim) == 1; },
             "1 (every layer after the dense ones has experts; hetplan models no other pattern)");
  hf.require("mlp_only_layers", [](const Field& f) { return f.is_sequence() && f.elements().empty(); },
             "[] (hetplan models experts in every layer after the dense ones)");
}

// DeepSeek's mixture keys (DeepSeek-V2/V3, GLM-4.5): experts after the first dense layers,
// shared experts of the experts' size, group-limited routing.
void read_deepseek_experts(HfReader& hf, ModelShape& model) {
  model.experts = hf.optional_integer("n_routed_experts", 0).value_or(0);
  if (model.experts <= 0) return;
  model.experts_per_token = hf.integer("num_experts_per_tok");
  model.expert_ffn = hf.integer("moe_intermediate_size");
  model.shared_experts = hf.optional_integer("n_shared_experts", 0).value_or(0);
  model.shared_expert_ffn = model.expert_ffn;
  model.dense_layers = hf.optional_integer("first_k_dense_replace", 0).value_or(0);
  require_every_layer_moe(hf, "moe_layer_freq");
  // Group-limited routing: a token's experts come from topk_group of n_group groups
  // (DeepSeek-V3: 4 of 8 nodes' worth); a limit on the all-to-all, not on the FLOPs.
  model.expert_groups = hf.optional_integer("n_group").value_or(1);
  model.expert_groups_per_token = hf.optional_integer("topk_group").value_or(1);
  hf.ignore({"routed_scaling_factor", "scoring_func", "norm_topk_prob", "aux_loss_alpha", "seq_aux",
             "ep_size"});
}

ModelShape read_hf(const Field& root) {
  HfReader hf(root);
  ModelShape model;
  const auto type_entry = hf.field("model_type");
  if (!type_entry) throw InputError(root.location(), "model_type", "missing required key");
  const Field& type_field = *type_entry;
  enum Kind {
    llama,
    mistral,
    qwen2,
    gpt2,
    gpt_neox,
    opt,
    qwen3,
    internlm2,
    baichuan,
    chatglm,
    glm4,
    mixtral,
    qwen2_moe,
    qwen3_moe,
    deepseek_v2,
    deepseek_v3,
    glm4_moe,
    kimi_k2,
    gemma,
    gemma2,
    gemma3_text
  };
  const auto kind = static_cast<Kind>(type_field.as_choice(
      {"llama",     "mistral",   "qwen2",       "gpt2",        "gpt_neox", "opt",
       "qwen3",     "internlm2", "baichuan",    "chatglm",     "glm4",     "mixtral",
       "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "glm4_moe", "kimi_k2",
       "gemma",     "gemma2",    "gemma3_text"}));
  model.model_type = type_field.as_string();
  switch (kind) {
    case llama:
    case mistral:
    case qwen2:
    case mixtral: {
      read_llama_style(hf, model);
      // qwen2 has biases on Q, K and V only (its attention always does); llama and mistral
      // have none by default, attention_bias puts them on Q, K, V (and the output).
      model.linear_bias =
          hf.flag("attention_bias").value_or(false) && hf.flag("mlp_bias").value_or(false);
      model.qkv_bias =
          !model.linear_bias && (kind == qwen2 || hf.flag("attention_bias").value_or(false));
      if (kind == mixtral) {
        // Every layer: num_local_experts experts of intermediate_size, top num_experts_per_tok.
        model.experts = hf.integer("num_local_experts");
        model.experts_per_token = hf.integer("num_experts_per_tok");
        model.expert_ffn = model.ffn;
        hf.ignore({"router_aux_loss_coef", "output_router_logits", "router_jitter_noise"});
      }
      break;
    }
    case qwen3:
    case qwen3_moe:
    case qwen2_moe: {
      read_llama_style(hf, model);
      model.qkv_bias = kind == qwen2_moe || hf.flag("attention_bias").value_or(false);
      model.qk_norm = kind != qwen2_moe;  // Qwen3 normalises each head's Q and K
      if (kind != qwen3) {
        model.experts = hf.integer("num_experts");
        model.experts_per_token = hf.integer("num_experts_per_tok");
        model.expert_ffn = hf.integer("moe_intermediate_size");
        require_every_layer_moe(hf, "decoder_sparse_step");
        if (kind == qwen2_moe) {
          // One shared expert of its own size behind a sigmoid gate.
          model.shared_experts = 1;
          model.shared_expert_ffn = hf.integer("shared_expert_intermediate_size");
          model.shared_expert_gate = true;
        }
        hf.ignore({"norm_topk_prob", "router_aux_loss_coef", "output_router_logits"});
      }
      break;
    }
    case internlm2: {
      read_llama_style(hf, model);
      model.linear_bias = hf.flag("bias").value_or(false);
      break;
    }
    case glm4_moe: {
      // GLM-4.5 / GLM-4.5-Air: grouped-query attention with heads of head_dim, biases on Q, K
      // and V, the rotary embedding on partial_rotary_factor of each head, optional per-head Q/K
      // norms, pre-norm layers (no post-norms, unlike glm4), and DeepSeek-V3's mixture: dense
      // first layers, routed and shared experts, sigmoid routing with a bias per expert, and
      // multi-token prediction modules.
      read_llama_style(hf, model);
      model.qkv_bias = hf.flag("attention_bias").value_or(false);
      if (auto share = hf.number("partial_rotary_factor", 0.01, 1.0)) model.rotary_percent = *share;
      model.qk_norm = hf.flag("use_qk_norm").value_or(false);
      read_deepseek_experts(hf, model);
      model.expert_bias = model.experts > 0;  // e_score_correction_bias in every MoE layer
      model.mtp_layers = hf.optional_integer("num_nextn_predict_layers", 0).value_or(0);
      break;
    }
    case gemma:
    case gemma2:
    case gemma3_text: {
      // Gemma 1, 2 and 3 (text): Llama's keys with heads of head_dim, a gated GELU MLP
      // (gate_proj and up_proj of intermediate_size each, down_proj), the input embedding
      // shared with the output layer unless the config says otherwise; Gemma 2 and 3 add a norm
      // after the attention and after the MLP, Gemma 3 a per-head norm of Q and K.
      read_llama_style(hf, model);
      std::optional<Field> act = hf.field("hidden_activation");  // what the layers use
      if (!act || act->is_null()) act = hf.field("hidden_act");
      if (act && !act->is_null()) {
        const Activation read = activation_from(*act);
        if (read == Activation::relu)
          act->fail_expected("a GELU (Gemma's gated MLP) or SiLU activation");
        model.activation = read == Activation::gelu ? Activation::geglu : read;
      } else {
        model.activation = Activation::geglu;  // gelu_pytorch_tanh, transformers' default
      }
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(true);
      model.qkv_bias = hf.flag("attention_bias").value_or(false);
      if (kind != gemma) model.extra_norms = 2;  // post_attention and post_feedforward norms
      model.qk_norm = kind == gemma3_text;
      break;
    }
    case glm4: {
      read_llama_style(hf, model);
      model.qkv_bias = hf.flag("attention_bias").value_or(false);
      if (auto share = hf.number("partial_rotary_factor", 0.01, 1.0)) model.rotary_percent = *share;
      model.extra_norms = 2;  // after the attention and after the MLP
      break;
    }
    case baichuan: {
      model.layers = hf.integer("num_hidden_layers");
      model.hidden = hf.integer("hidden_size");
      model.heads = hf.integer("num_attention_heads");
      model.kv_heads = model.heads;
      model.ffn = hf.integer("intermediate_size");
      model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.optional_integer("max_position_embeddings")
                                .value_or(hf.optional_integer("model_max_length").value_or(0));
      model.activation = Activation::swiglu;
      if (auto act = hf.field("hidden_act")) model.activation = activation_from(*act);
      model.norm = Norm::rmsnorm;
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(false);
      model.linear_bias = false;
      if (auto eps = hf.number("rms_norm_eps", 1e-12, 0.1)) model.norm_eps = *eps;
      break;
    }
    case chatglm: {
      // THUDM's own keys (GLM-4-9B, ChatGLM3): multi-query groups, kv_channels per head, the
      // rotary embedding on half of each head, 10000 x rope_ratio as its base.
      model.layers = hf.integer("num_layers");
      model.hidden = hf.integer("hidden_size");
      model.heads = hf.integer("num_attention_heads");
      const bool grouped = hf.flag("multi_query_attention").value_or(false);
      model.kv_heads = grouped ? hf.integer("multi_query_group_num") : model.heads;
      if (auto channels = hf.optional_integer("kv_channels")) model.head_size = *channels;
      model.ffn = hf.integer("ffn_hidden_size");
      model.vocab = hf.optional_integer("padded_vocab_size").value_or(0);
      if (model.vocab == 0) model.vocab = hf.integer("vocab_size");
      model.max_positions = hf.optional_integer("seq_length").value_or(0);
      model.activation = Activation::swiglu;
      model.norm = hf.flag("rmsnorm").value_or(true) ? Norm::rmsnorm : Norm::layernorm;
      model.linear_bias = hf.flag("add_bias_linear").value_or(false);
      model.qkv_bias = !model.linear_bias && hf.flag("add_qkv_bias").value_or(false);
      model.tied_embeddings = hf.flag("tie_word_embeddings").value_or(false);
      model.rotary_percent = 0.5;
      model.rope_theta = 10000.0 * hf.number("rope_ratio", 1e-6, 1e9).value_or(1.0);
      if (auto eps = hf.number("layernorm_epsilon", 1e-12, 0.1)) model.norm_eps = *eps;
      model.dropout = hf.number("hidden_dropout").value_or(0.0) > 0.0;
      break;
    }
    case deepseek_v2:
    case deepseek_v3:
    case kimi_k2: {
      // Kimi K2 is DeepSeek-V3's architecture (DeepseekV3ForCausalLM) under a model_type of its
      // own, set so that inference engines can tell the two apart (Moonshot AI's deployment
      // guide); its keys are DeepSeek-V3's.
      read_llama_style(hf, model);
      model.kv_heads = model.heads;  // every head has its own K and V, from the latent
      // Multi-head latent attention.
      model.q_lora_rank = hf.optional_integer("q_lora_rank").value_or(0);
      model.kv_lora_rank = hf.integer("kv_lora_rank");
      model.qk_nope_head_dim = hf.integer("qk_nope_head_dim");
      model.qk_rope_head_dim = hf.integer("qk_rope_head_dim");
      model.v_head_dim = hf.integer("v_head_dim");
      model.head_size = model.qk_nope_head_dim + model.qk_rope_head_dim;
      model.qkv_bias = hf.flag("attention_bias").value_or(false);
      read_deepseek_experts(hf, model);
      // noaux_tc routing keeps a bias per expert (e_score_correction_bias).
      if (model.experts > 0) {
        if (auto method = hf.field("topk_method"); method && !method->is_null())
          model.expert_bias =
              method->as_choice({"greedy", "group_limited_greedy", "noaux_tc"}) == 2;
      }
      model.mtp_layers = hf.optional_integer("num_nextn_predict_layers", 0).value_or(0);
      break;
    }
    case gpt2: {
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
    case gpt_neox: {
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
    case opt: {
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
  hf.refuse_unread_moe_keys();
  return model;
}

void check_shape(const ModelShape& model, const Field& where) {
  if (model.head_size == 0 && model.hidden % model.heads != 0) {
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

// A mixture of experts written inline (docs/formats/workload.md, model.shape): `experts` of
// `expert_ffn` each, `experts_per_token` of them per token, shared experts beside them, the
// first `dense_layers` layers dense (of `ffn`). The other keys only with `experts`.
void read_inline_mixture(MapReader& map, ModelShape& model) {
  const auto experts = map.optional("experts");
  const char* const kMixtureKeys[] = {"experts_per_token", "expert_ffn", "shared_experts",
                                      "shared_expert_ffn", "dense_layers"};
  if (!experts) {
    for (const char* key : kMixtureKeys)
      if (auto stray = map.optional(key)) stray->fail("expected experts beside it");
    return;
  }
  model.experts = static_cast<int>(experts->as_int(2, 1 << 16));
  model.experts_per_token =
      static_cast<int>(map.required("experts_per_token").as_int(1, model.experts));
  model.expert_ffn = static_cast<int>(map.required("expert_ffn").as_int(1, kMaxDim));
  if (auto shared = map.optional("shared_experts"))
    model.shared_experts = static_cast<int>(shared->as_int(0, 64));
  model.shared_expert_ffn = model.shared_experts > 0 ? model.expert_ffn : 0;
  if (auto width = map.optional("shared_expert_ffn")) {
    if (model.shared_experts == 0) width->fail("expected shared_experts (1 or more) beside it");
    model.shared_expert_ffn = static_cast<int>(width->as_int(1, kMaxDim));
  }
  if (auto dense = map.optional("dense_layers"))
    model.dense_layers = static_cast<int>(dense->as_int(0, model.layers - 1));
}

// Multi-head latent attention written inline (DeepSeek-V2/V3): the key/value latent's rank,
// each head's non-rotary and rotary query/key widths and its value width are needed together;
// the query latent's rank is optional (0: queries projected directly, as in V2-Lite). Every
// head has its own keys and values.
void read_inline_latent_attention(MapReader& map, ModelShape& model) {
  const char* const kLatentKeys[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                     "qk_rope_head_dim", "v_head_dim"};
  bool latent = false;
  for (const char* key : kLatentKeys) latent |= map.optional(key).has_value();
  if (!latent) return;
  if (auto q = map.optional("q_lora_rank"))
    model.q_lora_rank = static_cast<int>(q->as_int(0, kMaxDim));
  model.kv_lora_rank = static_cast<int>(map.required("kv_lora_rank").as_int(1, kMaxDim));
  model.qk_nope_head_dim = static_cast<int>(map.required("qk_nope_head_dim").as_int(1, kMaxDim));
  model.qk_rope_head_dim = static_cast<int>(map.required("qk_rope_head_dim").as_int(1, kMaxDim));
  model.v_head_dim = static_cast<int>(map.required("v_head_dim").as_int(1, kMaxDim));
  if (auto kv = map.optional("kv_heads"); kv && model.kv_heads != model.heads)
    kv->fail("expected heads (" + std::to_string(model.heads) +
             "): latent attention gives every head its own keys and values");
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
  model.activation = static_cast<Activation>(
      map.required("activation").as_choice({"gelu", "swiglu", "relu", "geglu"}));
  model.ffn = gated(model.activation) ? 0 : 4 * model.hidden;
  if (auto ffn = map.optional("ffn"))
    model.ffn = static_cast<int>(ffn->as_int(1, kMaxDim));
  else if (gated(model.activation))
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
  read_inline_mixture(map, model);
  read_inline_latent_attention(map, model);
  if (auto mtp = map.optional("mtp_layers"))
    model.mtp_layers = static_cast<int>(mtp->as_int(0, 64));
  map.done();
  check_shape(model, field);
  return model;
}

TrainingSettings read_training(const Field& field, const ModelShape& model) {
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
  if (auto modules = map.optional("recompute_modules")) {
    t.recompute_modules = read_recompute_modules(*modules);
    if (t.recompute != Recompute::selective)
      modules->fail("expected recompute: selective beside it");
  }
  if (auto unfused = map.optional("unfused")) t.unfused = read_unfused(*unfused, model);
  if (auto fusion = map.optional("cross_entropy_fusion"))
    t.cross_entropy_fusion = read_cross_entropy_fusion(*fusion);
  if (auto sp = map.optional("sequence_parallel")) t.sequence_parallel = sp->as_bool();
  if (auto flash = map.optional("flash_attention")) t.flash_attention = flash->as_bool();
  auto legacy_overlap = map.optional("overlap_grad_reduce");
  if (auto overlap = map.optional("overlap")) {
    if (legacy_overlap) legacy_overlap->fail("expected either overlap or overlap_grad_reduce, not both");
    MapReader o(*overlap);
    if (auto v = o.optional("grad_reduce")) t.overlap_grad_reduce = v->as_bool();
    auto param_gather = o.optional("param_gather");
    if (param_gather) t.overlap_param_gather = param_gather->as_bool();
    if (auto v = o.optional("tp_comm")) t.overlap_tp_comm = v->as_bool();
    if (auto v = o.optional("ep_comm")) {
      t.overlap_ep_comm = v->as_bool();
      switch (t.overlap_ep_comm ? ep_overlap_conflict(t) : EpOverlapConflict::none) {
        case EpOverlapConflict::none:
          break;
        case EpOverlapConflict::full_recompute:
          v->fail(
              "expected no full recompute beside it (Megatron-Core's combined 1F1B schedule "
              "refuses full recomputation)");
        case EpOverlapConflict::moe_recompute:
          v->fail(
              "expected recompute_modules without moe beside it (a recomputed mixture would "
              "dispatch again, which the combined 1F1B schedule does not allow)");
        case EpOverlapConflict::fp32:
          v->fail(
              "expected dtype bf16, fp16 or fp8 (Megatron-Core overlaps the all-to-alls only "
              "in a bf16 or fp16 model)");
      }
    }
    o.done();
    if (t.overlap_param_gather && t.zero_stage == 0) {
      o.field().fail(
          "param_gather: expected zero_stage 1 or more (the weight all-gather it overlaps "
          "belongs to the distributed optimizer)");
    }
    if (t.overlap_param_gather && !t.overlap_grad_reduce) {
      // Megatron-Core (and MindSpeed-LLM on it) refuses --overlap-param-gather without
      // --overlap-grad-reduce.
      param_gather->fail("expected grad_reduce: true beside it (Megatron-Core overlaps the "
                         "parameter all-gather only with the gradient reduction overlapped)");
    }
  } else if (legacy_overlap) {
    t.overlap_grad_reduce = legacy_overlap->as_bool();
  }
  if (auto moe = map.optional("moe")) {
    MapReader m(*moe);
    if (auto v = m.optional("imbalance")) t.expert_imbalance = v->as_number(1.0, 1000.0);
    if (auto v = m.optional("grouped_gemm")) t.grouped_gemm = v->as_bool();
    std::optional<Field> dispatcher = m.optional("dispatcher");
    if (dispatcher) {
      static constexpr MoeDispatcher kDispatchers[] = {MoeDispatcher::all_to_all,
                                                       MoeDispatcher::flex, MoeDispatcher::gshard};
      t.moe_dispatcher = kDispatchers[dispatcher->as_choice({"alltoall", "flex", "gshard"})];
    }
    if (auto v = m.optional("capacity_factor")) t.moe_capacity_factor = v->as_number(0.01, 64.0);
    std::optional<Field> pad = m.optional("pad_to_capacity");
    if (pad) t.moe_pad_to_capacity = pad->as_bool();
    m.done();
    if (pad && t.moe_capacity_factor <= 0)
      pad->fail("expected capacity_factor beside it (it pads the experts to their capacity)");
    if (t.moe_dispatcher == MoeDispatcher::gshard && !t.moe_pad_to_capacity) {
      pad->fail(
          "expected true with dispatcher gshard (GShard's masks give every expert its whole "
          "capacity)");
    }
    if (t.moe_dispatcher == MoeDispatcher::gshard && t.moe_capacity_factor <= 0) {
      dispatcher->fail(
          "expected capacity_factor beside gshard (its dispatch masks give every expert a "
          "capacity)");
    }
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

unsigned read_recompute_modules(const Field& list) {
  unsigned out = 0;
  for (const Field& name : list.elements()) {
    const unsigned bit = 1u << name.as_choice({kRecomputeModuleNames[0], kRecomputeModuleNames[1],
                                               kRecomputeModuleNames[2], kRecomputeModuleNames[3],
                                               kRecomputeModuleNames[4], kRecomputeModuleNames[5],
                                               kRecomputeModuleNames[6]});
    if ((out & bit) != 0) name.fail("expected each module once");
    out |= bit;
  }
  return out;
}

CrossEntropyFusion read_cross_entropy_fusion(const Field& field) {
  return static_cast<CrossEntropyFusion>(field.as_choice(
      {kCrossEntropyFusionNames[0], kCrossEntropyFusionNames[1], kCrossEntropyFusionNames[2]}));
}

unsigned read_unfused(const Field& list, const ModelShape& model) {
  unsigned out = 0;
  for (const Field& name : list.elements()) {
    const unsigned bit =
        1u << name.as_choice({kUnfusedNames[0], kUnfusedNames[1], kUnfusedNames[2]});
    if ((out & bit) != 0) name.fail("expected each operator once");
    if ((unfusable_operators(model) & bit) == 0) {
      static constexpr const char* kWithout[] = {
          "expected rmsnorm only for a model whose norm is RMSNorm (its LayerNorm is one native "
          "kernel either way)",
          "expected swiglu only for a model whose MLP is SwiGLU",
          "expected rope only for a model with rotary positions (this one learns them)"};
      name.fail(kWithout[std::countr_zero(bit)]);
    }
    out |= bit;
  }
  return out;
}

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
  workload.training = read_training(root.required("training"), workload.model);
  root.done();
  return workload;
}

}  // namespace hetplan::formats
