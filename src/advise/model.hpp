#pragma once
// A model as the advisor sees it: the sizes that decide its GEMMs, its weights and its KV cache.
// A few well-known models ship with the figures of their published configurations (model.cpp
// cites each); a user's JSON file with the same fields works the same way.
#include <cstdint>
#include <string>
#include <vector>

namespace autogemm::advise {

enum class Attention { mha, mla };   // grouped-query attention, or DeepSeek's latent attention

struct ModelDescription {
  std::string name;
  std::string source;                  // where the figures come from
  int64_t layers = 0, hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t vocab = 0;
  bool tied_embeddings = false;        // the LM head reuses the embedding table
  // Mixture of experts: `experts` routed experts of `moe_intermediate` columns, `active_experts`
  // per token, `shared_experts` always on; the first `dense_layers` layers are dense MLPs of
  // `intermediate` columns. experts = 0: every layer is dense.
  int64_t experts = 0, active_experts = 0, shared_experts = 0, moe_intermediate = 0;
  int64_t dense_layers = 0;
  Attention attention = Attention::mha;
  // Latent attention (attention = mla): query and key/value compressions and head parts.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, qk_nope_dim = 0, v_head_dim = 0;
};

// The shipped models' names ("llama-3-8b", ...).
std::vector<std::string> model_names();

// A shipped model by name, or the model in the JSON file at `name_or_file`. Throws
// InvalidArgument naming the field, its value and the rule for a bad file or an unknown name.
ModelDescription load_model(const std::string& name_or_file);

// Parses a model description; `origin` names it in errors ("my-model.json").
ModelDescription parse_model_json(const std::string& text, const std::string& origin);

// Every parameter: the GEMMs' weights, embeddings, norms.
int64_t parameter_count(const ModelDescription& model);
// The parameters kept in BF16 whatever the GEMMs' format: embeddings, the LM head, norms.
int64_t bf16_parameter_count(const ModelDescription& model);

}  // namespace autogemm::advise
