#include <gtest/gtest.h>

#include "core/workload.hpp"
#include "tests/support/llama.hpp"

namespace hetplan {
namespace {

using test::llama2_7b;

TEST(Parameters, GptLayerByHand) {
  ModelShape m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn = 16384;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.linear_bias = true;
  // 4h^2 attention + 8h^2 MLP + (3h + h + 4h + h) biases + 2 LayerNorms of 2h.
  const double h = 4096;
  EXPECT_DOUBLE_EQ(m.layer_parameters(), 12 * h * h + 9 * h + 4 * h);
}

TEST(Parameters, Llama2SevenBillionMatchesTheReleasedCount) {
  // meta-llama/Llama-2-7b-hf has 6,738,415,616 parameters (sum of its safetensors shapes).
  EXPECT_DOUBLE_EQ(llama2_7b().total_parameters(), 6738415616.0);
}

TEST(Parameters, GroupedQueryAttentionShrinksKeyAndValue) {
  ModelShape m = llama2_7b();
  m.kv_heads = 8;  // K and V of width 8 x 128 = 1024 instead of 4096
  const double h = 4096;
  EXPECT_DOUBLE_EQ(llama2_7b().layer_parameters() - m.layer_parameters(), 2 * h * (4096 - 1024));
}

TEST(Parameters, TiedEmbeddingsHaveNoSeparateHead) {
  ModelShape m = llama2_7b();
  m.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(m.head_parameters(), 4096);  // the final norm only
}

}  // namespace
}  // namespace hetplan

namespace hetplan {
namespace {

// Megatron replicates each key/value head over tp / kv_heads ranks when tp exceeds the heads.
// Llama-3-8B's 8 key/value heads of 128 at tp 16: each chip holds one whole head (128 wide),
// not half of one; its K and V weights grow by 2 x 64 x 4096 parameters.
TEST(Parameters, KeyValueHeadsAreReplicatedWhenTpExceedsThem) {
  ModelShape m;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.linear_bias = false;
  EXPECT_DOUBLE_EQ(m.kv_width_per_chip(4), 256.0);
  EXPECT_DOUBLE_EQ(m.kv_width_per_chip(8), 128.0);
  EXPECT_DOUBLE_EQ(m.kv_width_per_chip(16), 128.0);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(8), 0.0);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(16), 2.0 * 64 * 4096);
  EXPECT_DOUBLE_EQ(m.replicated_kv_parameters(32), 2.0 * 96 * 4096);
}

}  // namespace
}  // namespace hetplan
