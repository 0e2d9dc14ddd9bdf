// parse_hf_config: real config.json shapes for every supported model_type, and bad inputs.
#include <cctype>
#include <cmath>

#include "formats/document.hpp"
#include "formats/loaders.hpp"
#include "tests/formats/test_support.hpp"
// After the project headers: <signal.h> (pulled in by gtest) defines si_value, a parameter
// name in core/units.hpp.
#include <gtest/gtest.h>

namespace hetplan {
namespace {

using formats::parse_hf_config;
using testing::input_error_of;
using testing::kDataDir;
using testing::replaced;

ModelShape load_config(const std::string& name) {
  const std::string path = kDataDir + "/hf/" + name;
  return parse_hf_config(formats::read_text_file(path), path);
}

struct Expected {
  const char* file;
  const char* model_type;
  int layers, hidden, heads, kv_heads, ffn, vocab;
  Activation activation;
  Norm norm;
  double published_parameters;
};

// The fixtures in data/hf/ are copies of the real Hugging Face config.json files (same keys and
// values). Published parameter counts:
//  - Llama-2-7b: 6.74e9, "Model size 6.74B params" on huggingface.co/meta-llama/Llama-2-7b-hf
//    (6,738,415,616 in its safetensors index).
//  - Qwen2-7B: 7.62e9, "Model size 7.62B params" on huggingface.co/Qwen/Qwen2-7B (the Qwen2.5-7B
//    model card, same shape, states 7.61B parameters, 6.53B non-embedding).
//  - Mistral-7B-v0.1: 7.24e9, "Model size 7.24B params" on
//    huggingface.co/mistralai/Mistral-7B-v0.1.
//  - Mistral-Nemo-Base-2407: 12.2e9 (fitmygpu.com/models/mistral-nemo-12b, "Total params 12.2B";
//    "12B" in the release post). Its heads are 128 wide (head_dim) against hidden / heads = 160:
//    read as 160 wide, the count is 12.77e9.
//  - gpt2: 124e6, the "124M" GPT-2 small of the gpt2 model card and of OpenAI's release.
//  - pythia-160m: 162,322,944 total parameters, Pythia paper (Biderman et al. 2023) Table 1 /
//    EleutherAI/pythia README.
//  - opt-125m: 125e6, OPT paper (Zhang et al. 2022) Table 1.
//  - Qwen3-8B: 8.2e9, model card ("Number of Parameters: 8.2B").
//  - Mixtral-8x7B-v0.1: 46.7e9, Mistral AI's "Mixtral of experts" post.
//  - Qwen2-57B-A14B: 57e9, Qwen2 technical report (arXiv:2407.10671).
//  - Qwen3-30B-A3B: 30.5e9, model card.
//  - DeepSeek-V2-Lite: 15.7e9, model card; DeepSeek-V2: 236e9, model card and arXiv:2405.04434;
//    DeepSeek-V3: 671e9 (the main model; 685B with the multi-token prediction module), README.
//  - GLM-4.5-Air: 106e9, "106 billion total parameters" (Z.ai's GLM-4.5 release; model card).
//  - Gemma 2B: 524,550,144 embedding + 1,981,884,416 other parameters (Gemma Team 2024,
//    arXiv:2403.08295, Table 2); Gemma 2 9B: 917,962,752 + 8,324,201,984 (arXiv:2408.00118,
//    Table 2); Gemma 3 1B: 302M + 698M (arXiv:2503.19786, Table 1). The papers' embeddings
//    count Gemini's 256,128-entry table; the Hugging Face configs hold 256,000 rows (Gemma 1
//    and 2).
// The sources of the newer fixtures, and how each was taken, are in data/hf/SOURCES.md.
const Expected kModels[] = {
    {"llama-2-7b.json", "llama", 32, 4096, 32, 32, 11008, 32000, Activation::swiglu, Norm::rmsnorm,
     6.74e9},
    {"qwen2-7b.json", "qwen2", 28, 3584, 28, 4, 18944, 152064, Activation::swiglu, Norm::rmsnorm,
     7.62e9},
    {"mistral-7b-v0.1.json", "mistral", 32, 4096, 32, 8, 14336, 32000, Activation::swiglu,
     Norm::rmsnorm, 7.24e9},
    {"mistral-nemo-base-2407.json", "mistral", 40, 5120, 32, 8, 14336, 131072, Activation::swiglu,
     Norm::rmsnorm, 12.2e9},
    {"gpt2.json", "gpt2", 12, 768, 12, 12, 3072, 50257, Activation::gelu, Norm::layernorm, 124e6},
    {"pythia-160m.json", "gpt_neox", 12, 768, 12, 12, 3072, 50304, Activation::gelu,
     Norm::layernorm, 162322944.0},
    {"opt-125m.json", "opt", 12, 768, 12, 12, 3072, 50272, Activation::relu, Norm::layernorm,
     125e6},
    {"qwen3-8b.json", "qwen3", 36, 4096, 32, 8, 12288, 151936, Activation::swiglu, Norm::rmsnorm,
     8.2e9},
    {"mixtral-8x7b-v0.1.json", "mixtral", 32, 4096, 32, 8, 14336, 32000, Activation::swiglu,
     Norm::rmsnorm, 46.7e9},
    {"qwen2-57b-a14b.json", "qwen2_moe", 28, 3584, 28, 4, 18944, 151936, Activation::swiglu,
     Norm::rmsnorm, 57e9},
    {"qwen3-30b-a3b.json", "qwen3_moe", 48, 2048, 32, 4, 6144, 151936, Activation::swiglu,
     Norm::rmsnorm, 30.5e9},
    {"deepseek-v2-lite.json", "deepseek_v2", 27, 2048, 16, 16, 10944, 102400, Activation::swiglu,
     Norm::rmsnorm, 15.7e9},
    {"deepseek-v2.json", "deepseek_v2", 60, 5120, 128, 128, 12288, 102400, Activation::swiglu,
     Norm::rmsnorm, 236e9},
    {"deepseek-v3.json", "deepseek_v3", 61, 7168, 128, 128, 18432, 129280, Activation::swiglu,
     Norm::rmsnorm, 671e9},
    {"glm-4.5-air.json", "glm4_moe", 46, 4096, 96, 8, 10944, 151552, Activation::swiglu,
     Norm::rmsnorm, 106e9},
    {"gemma-2b-it.json", "gemma", 18, 2048, 8, 1, 16384, 256000, Activation::geglu, Norm::rmsnorm,
     524550144.0 + 1981884416.0},
    {"gemma-2-9b-it.json", "gemma2", 42, 3584, 16, 8, 14336, 256000, Activation::geglu,
     Norm::rmsnorm, 917962752.0 + 8324201984.0},
    {"gemma-3-1b.json", "gemma3_text", 26, 1152, 4, 1, 6912, 262144, Activation::geglu,
     Norm::rmsnorm, 302e6 + 698e6},
};

class HfModels : public ::testing::TestWithParam<Expected> {};

TEST_P(HfModels, LoadsWithPublishedShape) {
  const Expected& e = GetParam();
  const ModelShape model = load_config(e.file);
  EXPECT_EQ(model.model_type, e.model_type);
  EXPECT_EQ(model.layers, e.layers);
  EXPECT_EQ(model.hidden, e.hidden);
  EXPECT_EQ(model.heads, e.heads);
  EXPECT_EQ(model.kv_heads, e.kv_heads);
  EXPECT_EQ(model.ffn, e.ffn);
  EXPECT_EQ(model.vocab, e.vocab);
  EXPECT_EQ(model.activation, e.activation);
  EXPECT_EQ(model.norm, e.norm);
  const double relative = std::fabs(model.total_parameters() - e.published_parameters) / e.published_parameters;
  EXPECT_LT(relative, 0.01) << e.file << ": " << model.total_parameters() << " parameters, published "
                            << e.published_parameters;
}

INSTANTIATE_TEST_SUITE_P(Configs, HfModels, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<Expected>& param_info) {
                           std::string name = param_info.param.file;
                           name = name.substr(0, name.find(".json"));
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = 'x';
                           return name;
                         });

// Activated parameters, as each family publishes them: Mixtral and Qwen count every parameter a
// token passes through (12.9B; 14B; 3.3B), DeepSeek leaves out the input embedding (2.4B for
// V2-Lite, 21B for V2; V3's README_WEIGHTS gives 36.7B).
TEST(HfMoe, ActivatedParametersAsPublished) {
  struct Case {
    const char* file;
    double published;
    bool without_embedding;
  };
  for (const Case& c : {Case{"mixtral-8x7b-v0.1.json", 12.9e9, false},
                        Case{"qwen2-57b-a14b.json", 14e9, false},
                        Case{"qwen3-30b-a3b.json", 3.3e9, false},
                        Case{"deepseek-v2-lite.json", 2.4e9, true},
                        Case{"deepseek-v2.json", 21e9, true},
                        Case{"deepseek-v3.json", 36.7e9, true}}) {
    const ModelShape m = load_config(c.file);
    const double active =
        m.active_parameters() - (c.without_embedding ? m.embedding_parameters() : 0.0);
    // Published figures are rounded to two or three digits.
    EXPECT_NEAR(active / c.published, 1.0, 0.025) << c.file << ": " << active;
  }
}

// The mixture and attention settings of each family, read from its own keys.
TEST(HfMoe, ExpertsSharedExpertsAndDenseLayers) {
  const ModelShape mixtral = load_config("mixtral-8x7b-v0.1.json");
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.experts_per_token, 2);
  EXPECT_EQ(mixtral.expert_ffn, 14336);
  EXPECT_EQ(mixtral.shared_experts, 0);
  EXPECT_EQ(mixtral.moe_layer_count(), 32);

  const ModelShape qwen2 = load_config("qwen2-57b-a14b.json");
  EXPECT_EQ(qwen2.experts, 64);
  EXPECT_EQ(qwen2.expert_ffn, 2560);
  EXPECT_EQ(qwen2.shared_experts, 1);
  EXPECT_EQ(qwen2.shared_expert_ffn, 20480);
  EXPECT_TRUE(qwen2.shared_expert_gate);
  EXPECT_TRUE(qwen2.qkv_bias);

  const ModelShape qwen3 = load_config("qwen3-30b-a3b.json");
  EXPECT_EQ(qwen3.head_dim(), 128);  // not 2048 / 32
  EXPECT_DOUBLE_EQ(qwen3.attention_width(), 32 * 128);
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_FALSE(qwen3.qkv_bias);

  const ModelShape v3 = load_config("deepseek-v3.json");
  EXPECT_TRUE(v3.latent_attention());
  EXPECT_EQ(v3.q_lora_rank, 1536);
  EXPECT_EQ(v3.kv_lora_rank, 512);
  EXPECT_EQ(v3.dense_layers, 3);
  EXPECT_FALSE(v3.moe_layer(2));
  EXPECT_TRUE(v3.moe_layer(3));
  EXPECT_EQ(v3.moe_layer_count(), 58);
  EXPECT_EQ(v3.shared_experts, 1);
  EXPECT_EQ(v3.shared_expert_ffn, 2048);
  EXPECT_TRUE(v3.expert_bias);
  EXPECT_EQ(v3.expert_groups, 8);
  EXPECT_EQ(v3.expert_groups_per_token, 4);
  EXPECT_EQ(v3.mtp_layers, 1);
  // The README: 11.5B unique parameters in the multi-token prediction module.
  EXPECT_NEAR(v3.mtp_parameters() / 11.5e9, 1.0, 0.01);

  const ModelShape lite = load_config("deepseek-v2-lite.json");
  EXPECT_EQ(lite.q_lora_rank, 0);  // null: Q projected directly
  EXPECT_FALSE(lite.expert_bias);
  EXPECT_EQ(lite.mtp_layers, 0);
}

// By hand for one MoE layer of DeepSeek-V3 (hidden 7,168, 128 heads): Q down 7168 x 1536, its
// norm, up 1536 x 128 x 192; KV down 7168 x (512 + 64), its norm, up 512 x 128 x (128 + 128);
// output 128 x 128 x 7168; router 7168 x 256 and its bias; 256 routed and 1 shared expert of 3 x
// 7168 x 2048; two norms.
TEST(HfMoe, OneDeepSeekV3LayerByHand) {
  const ModelShape v3 = load_config("deepseek-v3.json");
  const double h = 7168;
  const double attention = h * 1536 + 1536 + 1536 * 128 * 192.0 + h * 576 + 512 +
                           512 * 128 * 256.0 + 128 * 128 * h;
  const double moe = h * 256 + 256 + 257 * 3 * h * 2048;
  EXPECT_DOUBLE_EQ(v3.layer_parameters(3), attention + moe + 2 * h);
  EXPECT_DOUBLE_EQ(v3.layer_parameters(0), attention + 3 * h * 18432 + 2 * h);
}

// GLM-4-9B (THUDM's chatglm keys) and InternLM2.5-7B publish no exact total ("9B", "7B" by
// name); their counts are checked by hand from the config instead. GLM-4: 40 layers of Q
// 4096 x 4096, K and V 4096 x 256 each (2 groups of 128) with their biases, output 4096 x 4096,
// a SwiGLU MLP of 13,696 and two RMSNorms; embedding and output layer of 151,552 x 4096; the
// final norm.
// GLM-4's attention in either key set: two K/V groups with the Q/K/V biases, rotary on half of
// each head.
void expect_glm4_attention(const ModelShape& glm, const std::string& model_type, int head_dim) {
  EXPECT_EQ(glm.model_type, model_type);
  EXPECT_EQ(glm.kv_heads, 2);
  EXPECT_EQ(glm.head_dim(), head_dim);
  EXPECT_TRUE(glm.qkv_bias);
  EXPECT_DOUBLE_EQ(glm.rotary_percent, 0.5);
}

TEST(HfConfig, DenseFamiliesWithoutAnExactPublishedTotal) {
  const ModelShape glm = load_config("glm-4-9b-chat.json");
  expect_glm4_attention(glm, "chatglm", 128);
  EXPECT_DOUBLE_EQ(glm.rope_theta, 5e6);
  const double h = 4096;
  const double glm_layer = h * (h + 512) + (h + 512) + h * h + 3 * h * 13696 + 2 * h;
  EXPECT_DOUBLE_EQ(glm.total_parameters(), 40 * glm_layer + 2 * 151552 * h + h);
  EXPECT_NEAR(glm.total_parameters() / 9e9, 1.0, 0.05);

  const ModelShape internlm = load_config("internlm2_5-7b-chat.json");
  EXPECT_EQ(internlm.model_type, "internlm2");
  EXPECT_EQ(internlm.kv_heads, 8);
  EXPECT_FALSE(internlm.linear_bias);
  const double internlm_layer = h * (h + 2048) + h * h + 3 * h * 14336 + 2 * h;
  EXPECT_DOUBLE_EQ(internlm.total_parameters(), 32 * internlm_layer + 2 * 92544 * h + h);
}

// Baichuan 2 and GLM-4-0414 (model_type glm4) have no verbatim published config.json in the
// project (data/hf/SOURCES.md); their keys are read here from inline configs, counted by hand.
// Baichuan: the keys of a Baichuan2-7B fine-tune re-saved by transformers 4.52 (its
// architecture keys as Baichuan2-7B's; z_loss_weight, the auto_map and the token ids are not
// shape keys). GLM-4-0414: a small config with the family's keys (grouped K/V with their
// biases, head_dim apart from hidden / heads, rotary on half of each head, a norm after the
// attention and after the MLP besides the two before them).
TEST(HfConfig, BaichuanAndGlm4KeysByHand) {
  const ModelShape baichuan = parse_hf_config(R"({
  "_from_model_config": true,
  "architectures": ["BaichuanForCausalLM"],
  "auto_map": {"AutoConfig": "configuration_baichuan.BaichuanConfig",
               "AutoModelForCausalLM": "modeling_baichuan.BaichuanForCausalLM"},
  "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
  "intermediate_size": 11008, "max_position_embeddings": 4096, "model_max_length": 4096,
  "model_type": "baichuan", "num_attention_heads": 32, "num_hidden_layers": 32,
  "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "torch_dtype": "float16",
  "transformers_version": "4.52.3", "use_cache": false, "vocab_size": 125696, "z_loss_weight": 0
})",
                                              "baichuan2-7b.json");
  EXPECT_EQ(baichuan.model_type, "baichuan");
  EXPECT_EQ(baichuan.kv_heads, 32);
  EXPECT_EQ(baichuan.activation, Activation::swiglu);
  EXPECT_EQ(baichuan.norm, Norm::rmsnorm);
  EXPECT_FALSE(baichuan.tied_embeddings);
  EXPECT_FALSE(baichuan.qkv_bias);
  EXPECT_EQ(baichuan.max_positions, 4096);
  const double h = 4096;
  const double baichuan_layer = 4 * h * h + 3 * h * 11008 + 2 * h;
  EXPECT_DOUBLE_EQ(baichuan.total_parameters(), 32 * baichuan_layer + 2 * 125696 * h + h);

  const ModelShape glm = parse_hf_config(R"({
  "architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "attention_bias": true,
  "head_dim": 16, "hidden_act": "silu", "hidden_size": 48, "intermediate_size": 96,
  "max_position_embeddings": 1024, "num_attention_heads": 4, "num_hidden_layers": 3,
  "num_key_value_heads": 2, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "tie_word_embeddings": false, "vocab_size": 1000
})",
                                         "glm4.json");
  expect_glm4_attention(glm, "glm4", 16);
  EXPECT_EQ(glm.extra_norms, 2);
  // Q 48 x 64 and K, V 48 x 32 each with their 128 biases, the output 64 x 48, the MLP's three
  // 48 x 96 matrices, four norms of 48.
  const double glm_layer = 48.0 * 128 + 128 + 64.0 * 48 + 3.0 * 48 * 96 + 4.0 * 48;
  EXPECT_DOUBLE_EQ(glm.total_parameters(), 3 * glm_layer + 2.0 * 1000 * 48 + 48);
}

// Gemma: a gated GELU MLP (three matrices of intermediate_size), heads of 256, tied
// embeddings; Gemma 2 and 3 a norm after the attention and after the MLP, Gemma 3 per-head Q/K
// norms. The papers give the parameters beside the embedding to the unit (Gemma 3 to the
// million); the layers here are counted by hand from each config.
TEST(HfConfig, GemmaByHand) {
  const ModelShape g1 = load_config("gemma-2b-it.json");
  EXPECT_EQ(g1.activation, Activation::geglu);
  EXPECT_TRUE(g1.tied_embeddings);
  EXPECT_EQ(g1.head_dim(), 256);
  EXPECT_EQ(g1.extra_norms, 0);
  const double h1 = 2048;
  const double layer1 = h1 * 8 * 256 + 2 * h1 * 1 * 256 + 8 * 256 * h1 + 3 * h1 * 16384 + 2 * h1;
  EXPECT_DOUBLE_EQ(g1.total_parameters(), 18 * layer1 + h1 + 256000 * h1);
  EXPECT_DOUBLE_EQ(g1.total_parameters() - 256000 * h1, 1981884416.0);

  const ModelShape g2 = load_config("gemma-2-9b-it.json");
  EXPECT_EQ(g2.extra_norms, 2);
  EXPECT_FALSE(g2.qk_norm);
  EXPECT_TRUE(g2.tied_embeddings);
  EXPECT_EQ(g2.sliding_window, 4096);
  const double h2 = 3584;
  const double layer2 = h2 * 16 * 256 + 2 * h2 * 8 * 256 + 16 * 256 * h2 + 3 * h2 * 14336 + 4 * h2;
  EXPECT_DOUBLE_EQ(g2.total_parameters(), 42 * layer2 + h2 + 256000 * h2);
  EXPECT_DOUBLE_EQ(g2.total_parameters() - 256000 * h2, 8324201984.0);

  const ModelShape g3 = load_config("gemma-3-1b.json");
  EXPECT_EQ(g3.model_type, "gemma3_text");
  EXPECT_TRUE(g3.qk_norm);
  EXPECT_EQ(g3.extra_norms, 2);
  const double h3 = 1152;
  const double layer3 =
      h3 * 4 * 256 + 2 * h3 * 1 * 256 + 4 * 256 * h3 + 2 * 256 + 3 * h3 * 6912 + 4 * h3;
  EXPECT_DOUBLE_EQ(g3.total_parameters(), 26 * layer3 + h3 + 262144 * h3);
  EXPECT_NEAR((g3.total_parameters() - 262144 * h3) / 698e6, 1.0, 0.001);
}

// Kimi K2 (model_type kimi_k2) is read as DeepSeek-V3's architecture: latent attention of 64
// heads (Q through rank 1536, K and V through 512, heads of 128 + 64 and V of 128), one dense
// first layer, then 384 routed experts of 2048 and one shared, a router with a bias per expert,
// no multi-token prediction, untied embeddings of 163840. Moonshot's rounded "1 trillion total,
// 32 billion activated" within 5%.
TEST(HfMoe, KimiK2ByHand) {
  const ModelShape m = load_config("kimi-k2-instruct-0905.json");
  EXPECT_EQ(m.model_type, "kimi_k2");
  EXPECT_TRUE(m.latent_attention());
  EXPECT_EQ(m.dense_layers, 1);
  EXPECT_TRUE(m.expert_bias);
  EXPECT_EQ(m.mtp_layers, 0);
  const double h = 7168;
  const double attention =
      h * 1536 + 1536 + 1536 * 64 * 192.0 + h * 576 + 512 + 512 * 64 * 256.0 + 64 * 128 * h;
  const double moe = h * 384 + 384 + 385 * 3 * h * 2048;
  const double dense = attention + 3 * h * 18432;
  EXPECT_DOUBLE_EQ(m.total_parameters(),
                   dense + 2 * h + 60 * (attention + moe + 2 * h) + 2 * 163840 * h + h);
  EXPECT_NEAR(m.total_parameters() / 1e12, 1.0, 0.05);
  EXPECT_NEAR((m.active_parameters() - m.embedding_parameters()) / 32e9, 1.0, 0.05);
}

// GLM-4.5-Air (glm4_moe), by hand: 96 heads of 128 (Q and the output 4096 x 12288) and 8 K/V
// heads of 128 with biases on Q, K and V, the rotary embedding on half of each head, no Q/K
// norms; one dense layer (SwiGLU of 10944), then 45 of 128 routed experts of 1408 (top 8) and one
// shared, a router with a bias per expert; one multi-token prediction module; untied embeddings
// of 151552.
TEST(HfMoe, Glm45AirByHand) {
  const ModelShape m = load_config("glm-4.5-air.json");
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_FALSE(m.qk_norm);
  EXPECT_FALSE(m.linear_bias);
  EXPECT_DOUBLE_EQ(m.rotary_percent, 0.5);
  EXPECT_EQ(m.experts, 128);
  EXPECT_EQ(m.experts_per_token, 8);
  EXPECT_EQ(m.expert_ffn, 1408);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.dense_layers, 1);
  EXPECT_TRUE(m.expert_bias);
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_EQ(m.extra_norms, 0);
  const double h = 4096;
  const double attention = h * 12288 + 2 * h * 1024 + (12288 + 2 * 1024) + 12288 * h;
  const double dense = attention + 3 * h * 10944 + 2 * h;
  const double moe = attention + 129 * 3 * h * 1408 + (h * 128 + 128) + 2 * h;
  EXPECT_DOUBLE_EQ(m.total_parameters(), dense + 45 * moe + 2 * 151552 * h + h);
}

// Mistral-7B-v0.1 slides a 4096-token window; Qwen2 carries one with use_sliding_window false,
// Mixtral and Mistral NeMo a null one.
TEST(HfConfig, SlidingWindowOnlyWhereTheConfigUsesIt) {
  EXPECT_EQ(load_config("mistral-7b-v0.1.json").sliding_window, 4096);
  EXPECT_EQ(load_config("qwen2-7b.json").sliding_window, 0);
  EXPECT_EQ(load_config("mixtral-8x7b-v0.1.json").sliding_window, 0);
  EXPECT_EQ(load_config("mistral-nemo-base-2407.json").sliding_window, 0);
  EXPECT_EQ(load_config("mistral-nemo-base-2407.json").head_dim(), 128);
}

TEST(HfConfig, TiedEmbeddingsFollowTheModelFamily) {
  EXPECT_TRUE(load_config("gpt2.json").tied_embeddings);
  EXPECT_TRUE(load_config("opt-125m.json").tied_embeddings);
  EXPECT_FALSE(load_config("llama-2-7b.json").tied_embeddings);
  EXPECT_FALSE(load_config("pythia-160m.json").tied_embeddings);
}

const std::string kConfig =
    "{\n"                                           // 1
    "  \"model_type\": \"llama\",\n"               // 2
    "  \"num_hidden_layers\": 32,\n"               // 3
    "  \"hidden_size\": 4096,\n"                   // 4
    "  \"num_attention_heads\": 32,\n"             // 5
    "  \"num_key_value_heads\": 8,\n"              // 6
    "  \"intermediate_size\": 11008,\n"            // 7
    "  \"vocab_size\": 32000,\n"                   // 8
    "  \"hidden_act\": \"silu\"\n"                 // 9
    "}\n";                                          // 10

std::string config_error(const std::string& text) {
  return input_error_of([&] { (void)parse_hf_config(text, "config.json"); });
}

TEST(HfConfigErrors, BaseFixtureIsValid) {
  const ModelShape model = parse_hf_config(kConfig, "config.json");
  EXPECT_EQ(model.kv_heads, 8);
  EXPECT_EQ(model.ffn, 11008);
}

TEST(HfConfigErrors, MalformedJsonUnclosedBracket) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"hidden_act\": \"silu\"", "\"hidden_act\": [\"silu\"")),
            "config.json:10:1: malformed YAML: illegal flow end");
}

TEST(HfConfigErrors, TruncatedDocument) {
  EXPECT_EQ(config_error(kConfig.substr(0, kConfig.find("\"vocab_size\""))),
            "config.json:8:1: malformed YAML: end of map flow not found");
}

TEST(HfConfigErrors, WordWhereIntegerExpected) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_hidden_layers\": 32", "\"num_hidden_layers\": \"many\"")),
            "config.json:3:24: num_hidden_layers: expected an integer from 1 to 1048576, got \"many\"");
}

// JSON distinguishes "32" (a string) from 32: a quoted number is refused where a number is
// expected.
TEST(HfConfigErrors, QuotedIntegerIsAString) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_hidden_layers\": 32", "\"num_hidden_layers\": \"32\"")),
            "config.json:3:24: num_hidden_layers: expected an integer from 1 to 1048576, got \"32\"");
}

TEST(HfConfigErrors, FloatWhereIntegerExpected) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"hidden_size\": 4096", "\"hidden_size\": 4096.0")),
            "config.json:4:18: hidden_size: expected an integer from 1 to 1048576, got \"4096.0\"");
}

TEST(HfConfigErrors, ListWhereObjectExpected) {
  EXPECT_EQ(config_error("[1, 2, 3]"), "config.json:1:1: expected a JSON object, got a list");
}

TEST(HfConfigErrors, ObjectWhereIntegerExpected) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"vocab_size\": 32000", "\"vocab_size\": {\"size\": 32000}")),
            "config.json:8:17: vocab_size: expected an integer from 1 to 1048576, got a mapping");
}

TEST(HfConfigErrors, ZeroHeads) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_attention_heads\": 32", "\"num_attention_heads\": 0")),
            "config.json:5:26: num_attention_heads: expected an integer from 1 to 1048576, got \"0\"");
}

TEST(HfConfigErrors, NegativeLayers) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_hidden_layers\": 32", "\"num_hidden_layers\": -32")),
            "config.json:3:24: num_hidden_layers: expected an integer from 1 to 1048576, got \"-32\"");
}

TEST(HfConfigErrors, HiddenNotDivisibleByHeads) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_attention_heads\": 32", "\"num_attention_heads\": 30")),
            "config.json:1:1: expected hidden size (4096) divisible by the number of attention heads (30)");
}

TEST(HfConfigErrors, HeadsNotDivisibleByKvHeads) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5")),
            "config.json:1:1: expected the number of attention heads (32) divisible by the number of "
            "key/value heads (5)");
}

// Gemma's MLP is gated: a GELU makes it GeGLU, a SiLU SwiGLU; a gated ReLU is not modelled.
TEST(HfConfigErrors, GemmaWithAReluIsRefusedAtItsKey) {
  const std::string gemma =
      replaced(replaced(kConfig, "\"llama\"", "\"gemma\""), "\"silu\"", "\"relu\"");
  EXPECT_EQ(config_error(gemma),
            "config.json:9:17: hidden_act: expected a GELU (Gemma's gated MLP) or SiLU activation, "
            "got \"relu\"");
  const ModelShape silu =
      parse_hf_config(replaced(kConfig, "\"llama\"", "\"gemma\""), "config.json");
  EXPECT_EQ(silu.activation, Activation::swiglu);
  EXPECT_TRUE(silu.tied_embeddings);
}

TEST(HfConfigErrors, UnsupportedModelType) {
  EXPECT_EQ(
      config_error(replaced(kConfig, "\"llama\"", "\"bert\"")),
      "config.json:2:17: model_type: expected one of llama, mistral, qwen2, gpt2, gpt_neox, "
      "opt, qwen3, internlm2, baichuan, chatglm, glm4, mixtral, qwen2_moe, qwen3_moe, "
      "deepseek_v2, deepseek_v3, glm4_moe, kimi_k2, gemma, gemma2 or gemma3_text, got \"bert\"");
}

TEST(HfConfigErrors, MissingModelType) {
  EXPECT_EQ(config_error(replaced(kConfig, "  \"model_type\": \"llama\",\n", "")),
            "config.json:1:1: model_type: missing required key");
}

TEST(HfConfigErrors, MissingRequiredKey) {
  EXPECT_EQ(config_error(replaced(kConfig, "  \"intermediate_size\": 11008,\n", "")),
            "config.json:1:1: intermediate_size: missing required key");
}

TEST(HfConfigErrors, DuplicateKey) {
  EXPECT_EQ(config_error(replaced(kConfig, "  \"vocab_size\": 32000,\n",
                                  "  \"vocab_size\": 32000,\n  \"hidden_size\": 2048,\n")),
            "config.json:9:3: hidden_size: duplicate key");
}

TEST(HfConfigErrors, UnsupportedActivation) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"silu\"", "\"tanh\"")),
            "config.json:9:17: hidden_act: expected an activation hetplan models (silu, gelu, "
            "gelu_new, gelu_pytorch_tanh, relu), got \"tanh\"");
}

TEST(HfConfigErrors, DropoutOutOfRange) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"hidden_act\": \"silu\"",
                                  "\"hidden_act\": \"silu\",\n  \"attention_dropout\": 1.5")),
            "config.json:10:24: attention_dropout: expected a number from 0 to 1, got \"1.5\"");
}

TEST(HfConfigErrors, EmptyDocument) {
  EXPECT_EQ(config_error(""), "config.json:1:1: expected a mapping, got an empty document");
}

TEST(HfConfigErrors, NulByte) {
  std::string text = kConfig;
  text[text.find("llama")] = '\0';
  EXPECT_EQ(config_error(text), "config.json:2:18: expected a text document, got a NUL byte");
}

TEST(HfConfigErrors, DeepNesting) {
  std::string text = "{\"model_type\": \"llama\", \"extra\": ";
  text += std::string(1000, '[') + std::string(1000, ']') + "}";
  EXPECT_EQ(config_error(text), "config.json:1:97: expected at most 64 levels of nesting, got deeper");
}

// A config that declares something of experts hetplan does not read is refused with the key,
// never planned as a dense model; so is a pattern of MoE layers it does not model.
TEST(HfMoe, UnmodelledExpertSettingsAreRefused) {
  const std::string mixtral = formats::read_text_file(kDataDir + "/hf/mixtral-8x7b-v0.1.json");
  EXPECT_EQ(config_error(replaced(mixtral, "\"num_local_experts\": 8,",
                                  "\"num_local_experts\": 8,\n  \"expert_capacity\": 64,")),
            "config.json:19:22: expert_capacity: a mixture-of-experts setting hetplan does not "
            "model; refused rather than planned as something else");
  const std::string llama = kConfig;
  EXPECT_EQ(config_error(replaced(llama, "\"hidden_act\": \"silu\"",
                                  "\"hidden_act\": \"silu\",\n  \"num_experts\": 8")),
            "config.json:10:18: num_experts: a mixture-of-experts setting hetplan does not model; "
            "refused rather than planned as something else");
  const std::string qwen = formats::read_text_file(kDataDir + "/hf/qwen3-30b-a3b.json");
  EXPECT_EQ(config_error(replaced(qwen, "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2")),
            "config.json:8:26: decoder_sparse_step: expected 1 (every layer after the dense ones "
            "has experts; hetplan models no other pattern), got \"2\"");
}

}  // namespace
}  // namespace hetplan
