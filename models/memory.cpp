#include "models/memory.hpp"

#include <algorithm>
#include <cassert>
#include <span>
#include <vector>

#include "models/transformer_ops.hpp"

namespace hetplan::models {

double layer_activation_bytes(const ModelShape& model, const TrainingSettings& training,
                              int micro_batch, int tp, Recompute recompute, bool dense_mlp,
                              int etp) {
  const double e = bytes_per_element(storage_dtype(training.dtype));
  const double t = tp;
  const double tokens = static_cast<double>(micro_batch) * training.seq_len;
  const double h = model.hidden;
  const double kv_chip = model.kv_width_per_chip(tp);  // K (and V) width on this chip
  const double f = model.ffn;
  // Tensors outside the tensor-parallel regions are split by t only with sequence parallelism.
  const double r = training.sequence_parallel ? t : 1.0;

  if (recompute == Recompute::full) {
    // Only each layer's input is kept; the layer is recomputed before its backward pass.
    return tokens * h * e / r;
  }

  // Selective recompute's modules (docs/models/memory.md#recompute-modules): what each keeps
  // out of the saved tensors.
  const unsigned modules = recompute == Recompute::selective ? training.recompute_modules : 0u;
  auto recomputes = [&](unsigned module) { return (modules & module) != 0; };

  const double mask = model.dropout ? 1.0 : 0.0;  // dropout masks are one byte per element
  // Under the fp8 recipe a linear layer keeps the FP8 copy of its input for the weight-gradient
  // GEMM instead of the BF16 one (Transformer Engine's Linear, LayerNormLinear, LayerNormMLP
  // and GroupedLinear save the FP8 cast or its transpose); everything else stays in BF16.
  const double lin = bytes_per_element(training.dtype);
  // Replicated region: both norms' inputs, the QKV and MLP inputs (norm outputs: linear
  // inputs), dropout masks.
  // The norms' outputs are discarded under the layernorm module.
  const double norm_outputs = recomputes(kRecomputeLayernorm) ? 0.0 : 2.0 * lin;
  // An unfused RMSNorm keeps the fp32 copy of its input and its normalised output before the
  // weight (for the weight's gradient) instead of its input: 4 bytes more per element
  // (docs/models/memory.md#unfused). An unfused SwiGLU also keeps silu(gate).
  const unsigned unfused = training.unfused & unfusable_operators(model);
  const double norm_extra = (unfused & kUnfusedRmsnorm) != 0 ? 4.0 : 0.0;
  const double silu_kept = (unfused & kUnfusedSwiglu) != 0 ? e : 0.0;
  double bytes = tokens * h * (2.0 * (e + norm_extra) + norm_outputs + 2.0 * mask) / r;
  // Tensor-parallel region: Q, K and V, the output projection's input (Q and the output are
  // heads x head size wide: h, but for Qwen3's heads), and the pre-norm Q and K that Qwen3's
  // per-head norms keep.
  const double w = model.attention_width();
  if (model.latent_attention()) {
    // Multi-head latent attention (docs/models/attention.md#memory): on the chip's own tokens
    // (the down-projections are replicated), each latent's norm input and its normalised copy
    // (the up-projection's input); on every token, Q and K (heads / t x (nope + rope)) and V
    // (heads / t x v_head_dim) for the core attention, and its output (heads / t x v_head_dim,
    // the output projection's input).
    const double local = tokens / r;
    const double latents = static_cast<double>(model.q_lora_rank) + model.kv_lora_rank;
    bytes += local * latents * (e + norm_extra + lin);
    const double heads = model.heads / t;
    const double qk = static_cast<double>(model.qk_nope_head_dim) + model.qk_rope_head_dim;
    // The mla_up_proj module discards Q, K and V (the up-projections' and rotary outputs).
    const double qkv = recomputes(kRecomputeMlaUpProj) ? 0.0 : 2.0 * qk + model.v_head_dim;
    bytes += tokens * heads * (qkv * e + model.v_head_dim * lin);
  } else {
    bytes += tokens * ((w / t + 2.0 * kv_chip) * e + w / t * lin);
    if (model.qk_norm) bytes += tokens * (w / t + kv_chip) * (e + norm_extra);
  }
  // GLM-4's extra norms keep their inputs.
  bytes += model.extra_norms * tokens * h * (e + norm_extra) / r;
  if (model.moe() && !dense_mlp) {
    // Mixture of experts (docs/models/moe.md#memory): the routing scores in fp32, the tokens'
    // copies the experts take (gathered over the etp ranks that split each expert, the busiest
    // chip's load; the experts' first linear input) with both halves of their gated projection
    // and its product (the second linear input), the experts' outputs the combine weighs, and
    // the shared experts' gated MLP. The moe module keeps only the layer's input (counted
    // above); moe_act discards the experts' activation output, shared_experts the shared
    // experts' tensors.
    const double local = tokens / r;
    const double k = model.experts_per_token;
    const double experts_tp = expert_tp(etp, tp);
    const double gathered = experts_tp == t ? tokens : tokens / t * experts_tp;
    const double assigned = gathered * k * expert_imbalance(training);
    if (!recomputes(kRecomputeMoe)) {
      const double product = recomputes(kRecomputeMoeAct) ? 0.0 : lin;
      bytes += local * model.experts * 4.0;
      bytes +=
          assigned * (h * lin + model.expert_ffn / experts_tp * (2.0 * e + silu_kept + product));
      if (training.moe_dispatcher == MoeDispatcher::gshard) {
        // GShard's combine einsum keeps the experts' padded output [experts, capacity, hidden]
        // and the combine weights, the dispatch einsum its mask, both [tokens, experts,
        // capacity] in the training dtype (docs/models/moe.md#gshard).
        const double slots = local * k * expert_imbalance(training);
        bytes += slots * h * e + 2.0 * local * slots * e;
      } else {
        bytes += local * k * h * e;
      }
      if (model.shared_experts > 0 && !recomputes(kRecomputeSharedExperts))
        bytes += tokens * model.shared_experts * model.shared_expert_ffn / t *
                 (2.0 * e + silu_kept + lin);
    }
  } else if (!recomputes(kRecomputeMlp)) {
    // MLP: gated activations keep both halves of the up projection and the product; the last
    // of them is the down projection's input. The mlp module keeps only its input.
    const double mlp_tensors = gated(model.activation) ? 3.0 : 2.0;
    bytes += tokens * f * ((mlp_tensors - 1.0) * e + silu_kept + lin) / t;
  }
  // Core attention: the s x s score matrices unless fused (flash) or recomputed (selective).
  const double heads = model.heads / t;
  if (training.flash_attention) {
    bytes += static_cast<double>(micro_batch) * heads * training.seq_len * 4.0;  // log-sum-exp
  } else if (!recomputes(kRecomputeCoreAttention)) {
    const double scores =
        static_cast<double>(micro_batch) * heads * training.seq_len * training.seq_len;
    // Softmax output, and with dropout its mask and output (5 a s^2 b bytes in fp16).
    bytes += scores * (model.dropout ? 2.0 * e + 1.0 : e);
  }
  return bytes;
}

LayerActivations layer_activations(const ModelShape& model, const TrainingSettings& training,
                                   int micro_batch, int tp, int etp) {
  LayerActivations out;
  out.micro_batch = micro_batch;
  out.tp = tp;
  out.etp = expert_tp(etp, tp);
  out.expert_imbalance = expert_imbalance(training);
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    const int i = static_cast<int>(mode);
    out.kept[i] = layer_activation_bytes(model, training, micro_batch, tp, mode, false, etp);
    out.dense_kept[i] = layer_activation_bytes(model, training, micro_batch, tp, mode, true, etp);
  }
  return out;
}

int pipeline_warmup(int stage, int stages, int micro_batches, int chunks, int extra_warmup) {
  assert(extra_warmup >= 0);
  const int ops = micro_batches * chunks;
  const int later_stages = stages - stage - 1;
  // Interleaved: each stage first fills every chunk but the last for one group of `stages`
  // micro-batches, plus two ops per later stage. Plain 1F1B: one op per later stage.
  return chunks == 1 ? std::min(later_stages + extra_warmup, ops)
                     : std::min(2 * later_stages + (chunks - 1) * stages + extra_warmup, ops);
}

double chunks_in_flight(int stages, int stage_index, int virtual_stages, int micro_batches,
                        int extra_warmup) {
  const int v = std::max(1, virtual_stages);
  return std::min(pipeline_warmup(stage_index, stages, micro_batches, v, extra_warmup) + 1,
                  micro_batches * v);
}

double peak_in_flight(int stages, int stage_index, int micro_batches,
                      std::span<const double> chunk_bytes, int extra_warmup) {
  const long long p = stages, v = static_cast<long long>(chunk_bytes.size());
  if (v == 0 || micro_batches <= 0) return 0;
  const long long g = p * v;  // one round of forward operations over every chunk
  const long long ops = static_cast<long long>(micro_batches) * v;
  const long long warmup =
      pipeline_warmup(stage_index, stages, micro_batches, static_cast<int>(v), extra_warmup);
  auto forward_chunk = [&](long long k) { return (k % g) / p; };
  auto backward_chunk = [&](long long k) { return v - 1 - (k % g) / p; };
  double held = 0;
  for (long long k = 0; k < warmup; ++k) held += chunk_bytes[forward_chunk(k)];
  double peak = held;
  for (long long k = 0; k + warmup < ops; ++k) {
    held += chunk_bytes[forward_chunk(k + warmup)];
    peak = std::max(peak, held);
    held -= chunk_bytes[backward_chunk(k)];
  }
  return peak;
}

StageMemory stage_memory(const ModelShape& model, const TrainingSettings& training,
                         const StageShape& stage) {
  StageMemory out;
  const double t = stage.tp;
  const double dp = stage.zero_shards > 0 ? stage.zero_shards : stage.dp;
  const double e = bytes_per_element(storage_dtype(training.dtype));

  // A mixture-of-experts layer: its routed experts split over etp and ep, the rest over tp.
  double layer = model.layer_parameters() / t;
  double expert_layer = 0;
  const double experts_tp = stage.expert_tp();
  if (model.moe()) {
    const double routed = model.routed_expert_parameters();
    expert_layer = routed / (experts_tp * stage.ep);
    layer = (model.layer_parameters(model.layers - 1) - routed) / t + expert_layer;
  }
  // A mixture's dense layers: all of the layer split over tp.
  const int dense_count = model.moe() ? std::clamp(stage.dense_layers, 0, stage.num_layers) : 0;
  const int moe_count = stage.num_layers - dense_count;
  double parameters =
      stage.num_layers * (layer + model.replicated_kv_parameters(stage.tp));
  if (dense_count > 0) parameters += dense_count * (model.layer_parameters() / t - layer);
  if (stage.has_embedding) parameters += model.embedding_parameters() / t;
  // Multi-token prediction modules live with the output head: each a layer of the last kind,
  // its projection (2h to h) and three norms; they look up the embedding, so a last stage
  // without the first keeps a copy of the table unless the output layer is that table.
  const int mtp = stage.has_head ? std::max(0, model.mtp_layers) : 0;
  const bool mtp_moe = model.mtp_moe_layer();
  if (stage.has_head) {
    parameters += model.head_parameters() / t;
    // A tied output layer, or a prediction module's lookup, on another stage than the
    // embedding keeps its own copy of the table.
    if ((model.tied_embeddings || mtp > 0) && !stage.has_embedding) {
      parameters += static_cast<double>(model.vocab) * model.hidden / t;
    }
    if (mtp > 0) {
      const double h = model.hidden;
      const double own = mtp_moe ? layer : model.layer_parameters() / t;
      parameters +=
          mtp * (own + model.replicated_kv_parameters(stage.tp) + (2.0 * h * h + 3.0 * h) / t);
    }
  }
  out.parameters = parameters;
  out.expert_parameters = (moe_count + (mtp_moe ? mtp : 0)) * expert_layer;
  const double dense = parameters - out.expert_parameters;
  // The ranks holding the same experts (the expert data-parallel group, Megatron-Core's edp):
  // tp x dp / (ep x etp), dp / ep with etp = tp. ZeRO shards the experts over them.
  const double expert_dp = std::max(1.0, dp * t / (stage.ep * experts_tp));

  const double grad_bytes = training.fp32_grad_accumulation ? 4.0 : e;
  double optimizer_bytes = 0;  // per parameter
  const bool mixed = training.dtype != DType::fp32;
  switch (training.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      optimizer_bytes = 8.0 + (mixed ? 4.0 : 0.0);
      break;
    case Optimizer::sgd:
      optimizer_bytes = 4.0 + (mixed ? 4.0 : 0.0);
      break;
  }
  auto sharded = [&](double bytes, int from_stage) {
    if (stage.zero_stage < from_stage) return (dense + out.expert_parameters) * bytes;
    return dense * bytes / dp + out.expert_parameters * bytes / expert_dp;
  };
  out.weights = sharded(e, 3);
  out.gradients = sharded(grad_bytes, 2);
  out.optimizer = sharded(optimizer_bytes, 1);
  if (mixed && grad_bytes < 4.0) {
    // Megatron's mixed-precision optimizer gives each fp32 master weight the float() of its
    // low-precision gradient before the step (the distributed optimizer: of its shard).
    out.optimizer_step = sharded(4.0, 1);
  }
  if (stage.zero_stage >= 3 && stage.num_layers > 0) {
    // Gathered weights of the layer being computed and the one being prefetched.
    out.weights += 2.0 * layer * e;
  }

  // The busiest chip's load (the mean without expert parallelism).
  const TrainingSettings chip_training = for_expert_parallel(training, model.experts, stage.ep);
  const LayerActivations* table = stage.layer_activations;
  if (table && (table->micro_batch != stage.micro_batch || table->tp != stage.tp ||
                table->etp != stage.expert_tp() ||
                table->expert_imbalance != expert_imbalance(chip_training)))
    table = nullptr;
  auto layer_bytes = [&](Recompute mode, bool dense_mlp = false) {
    return table ? table->bytes(mode, dense_mlp)
                 : layer_activation_bytes(model, chip_training, stage.micro_batch, stage.tp, mode,
                                          dense_mlp, stage.etp);
  };
  out.activation_per_layer = layer_bytes(stage.recompute);
  const int p = stage.pipeline_stages;
  const int v = stage.virtual_stages;
  const int rank = stage.stage_index;
  const Recompute kept_mode =
      stage.recompute == Recompute::full ? Recompute::none : stage.recompute;
  const double in_flight = chunks_in_flight(p, rank, v, stage.micro_batches, stage.extra_warmup);
  const double tokens = static_cast<double>(stage.micro_batch) * training.seq_len;
  // The embedding's output (the first stage's first chunk) and each multi-token prediction
  // module's layer, which keeps its activations as the stage's layers do (full recompute does
  // not reach it: Megatron recomputes the decoder's layers), and the inputs of its two norms,
  // of its projection (2h) and of its final norm (the last stage's last chunk): per
  // micro-batch.
  const double embedding_bytes =
      stage.has_embedding ? tokens * model.hidden * e / (training.sequence_parallel ? t : 1.0)
                          : 0.0;
  const double mtp_module =
      mtp > 0 ? layer_bytes(kept_mode, !mtp_moe) +
                    5.0 * tokens * model.hidden * e / (training.sequence_parallel ? t : 1.0)
              : 0.0;
  if (stage.chunk_layers.empty()) {
    const double layers_per_chunk =
        static_cast<double>(stage.num_layers) / static_cast<double>(std::max(1, v));
    // Partial recompute (Megatron's block method): the first layers of each chunk keep only
    // their inputs, the others all their activations.
    const double recomputed_per_chunk =
        fully_recomputed_layers(stage.recompute, stage.recompute_layers, stage.num_layers,
                                std::max(1, v)) /
        static_cast<double>(std::max(1, v));
    double chunk_bytes = layers_per_chunk * out.activation_per_layer;
    if (stage.recompute == Recompute::full && recomputed_per_chunk < layers_per_chunk) {
      chunk_bytes = recomputed_per_chunk * out.activation_per_layer +
                    (layers_per_chunk - recomputed_per_chunk) * layer_bytes(Recompute::none);
    }
    if (dense_count > 0) {
      // The dense layers are the first of the first chunk, recomputed first under partial
      // recompute (a recomputed layer keeps its input, dense or not). Under 1F1B every
      // micro-batch in flight holds all of them: exact. Interleaved, which chunks are in flight
      // varies, so every chunk in flight counts as though it held them, at the larger of the
      // two layers' activations: an upper bound.
      const int kept = std::max(0, dense_count - static_cast<int>(recomputed_per_chunk));
      const double dense_bytes = layer_bytes(kept_mode, true);
      const double moe_bytes = layer_bytes(kept_mode);
      const double change =
          v <= 1 ? dense_bytes - moe_bytes : std::max(0.0, dense_bytes - moe_bytes);
      chunk_bytes += kept * change;
    }
    out.activations = in_flight * chunk_bytes;
    if (stage.recompute == Recompute::full && recomputed_per_chunk > 0) {
      // The layer being recomputed holds its full activations for a moment.
      out.activations += layer_bytes(Recompute::none);
    }
  } else {
    // Model chunks of their own sizes (a plan's chunk_layers): each chunk's bytes, its dense
    // layers where they are (the stage's first layers, in its first chunks), and the peak of
    // the chunks in flight over the schedule (docs/models/memory.md#micro-batches-in-flight).
    std::vector<double> chunk_bytes;
    chunk_bytes.reserve(stage.chunk_layers.size());
    int dense_left = dense_count;
    bool recomputes = false;
    for (const int layers : stage.chunk_layers) {
      const int recomputed = fully_recomputed_layers(stage.recompute, stage.recompute_layers,
                                                     std::span<const int>(&layers, 1));
      recomputes |= recomputed > 0;
      double bytes =
          recomputed * out.activation_per_layer +
          (layers - recomputed) * (stage.recompute == Recompute::full ? layer_bytes(Recompute::none)
                                                                      : out.activation_per_layer);
      const int dense_here = std::min(dense_left, layers);
      dense_left -= dense_here;
      const int kept = std::max(0, dense_here - recomputed);
      if (kept > 0) bytes += kept * (layer_bytes(kept_mode, true) - layer_bytes(kept_mode));
      chunk_bytes.push_back(bytes);
    }
    chunk_bytes.front() += embedding_bytes;
    chunk_bytes.back() += mtp * mtp_module;
    out.activations = peak_in_flight(p, rank, stage.micro_batches, chunk_bytes, stage.extra_warmup);
    if (stage.recompute == Recompute::full && recomputes)
      out.activations += layer_bytes(Recompute::none);
  }
  // With chunks of their own sizes the embedding and the modules are in their chunks' bytes;
  // with equal chunks every chunk in flight counts them (an upper bound when interleaved).
  const bool even = stage.chunk_layers.empty();
  if (even && stage.has_embedding) {
    out.activations +=
        in_flight * tokens * model.hidden * e / (training.sequence_parallel ? t : 1.0);
  }
  if (stage.has_head) {
    // Logits in the training dtype, their fp32 copy for the loss and its gradient; with
    // Transformer Engine's fused loss only the logits, the gradient written over them. Each
    // multi-token prediction module's loss keeps its own.
    const double per_logit =
        training.cross_entropy_fusion == CrossEntropyFusion::te ? e : e + 4.0 + 4.0;
    out.head = (1.0 + mtp) * tokens * model.vocab / t * per_logit;
    if (even && mtp > 0) out.activations += in_flight * mtp * mtp_module;
  }
  // Transient buffers of the step.
  const double boundary = tokens * model.hidden * e / (training.sequence_parallel ? t : 1.0);
  int communicators = 0;
  if (stage.tp > 1) ++communicators;
  if (stage.dp > 1) ++communicators;
  if (p > 1) communicators += (rank > 0 ? 1 : 0) + (rank < p - 1 ? 1 : 0);
  out.transient = communicators * kCollectiveBufferBytes + kWorkspaceBytes;
  // Pipeline receive buffers: the activation from the previous stage and the gradient from the
  // next one.
  if (p > 1) out.transient += 2.0 * boundary;
  if (stage.num_layers > 0) {
    // Sequence parallelism gathers each tensor-parallel block's input to the full sequence.
    if (training.sequence_parallel && stage.tp > 1) out.transient += tokens * model.hidden * e;
    // The backward pass of a layer holds the gradients of its MLP's widest tensor and of its
    // input beside the saved activations.
    const double up = gated(model.activation) ? 2.0 : 1.0;
    out.transient += tokens * (up * model.ffn / t + model.hidden) * e;
  }
  // Transformer Engine keeps the FP8 copy of the weights for the step's micro-batches.
  if (training.dtype == DType::fp8) out.transient += parameters * 1.0 / (stage.zero_stage >= 3 ? dp : 1.0);
  return out;
}

}  // namespace hetplan::models
