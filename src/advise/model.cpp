#include "advise/model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autogemm/errors.hpp"

namespace autogemm::advise {

namespace {

// The shipped models. Each figure is the one in the model's published config.json on its
// Hugging Face model card (the `source` line); parameter_count() reproduces the published
// totals (8.03B, 70.6B, 46.7B, 671B), which tests/test_advise.cpp checks.
std::vector<ModelDescription> catalog() {
  std::vector<ModelDescription> models;
  ModelDescription m;
  m.name = "llama-3-8b";
  m.source = "meta-llama/Meta-Llama-3-8B config.json: num_hidden_layers 32, hidden_size 4096, "
             "intermediate_size 14336, num_attention_heads 32, num_key_value_heads 8, "
             "vocab_size 128256, tie_word_embeddings false";
  m.layers = 32, m.hidden = 4096, m.intermediate = 14336, m.heads = 32, m.kv_heads = 8;
  m.head_dim = 128, m.vocab = 128256;
  models.push_back(m);

  m = {};
  m.name = "llama-3-70b";
  m.source = "meta-llama/Meta-Llama-3-70B config.json: num_hidden_layers 80, hidden_size 8192, "
             "intermediate_size 28672, num_attention_heads 64, num_key_value_heads 8, "
             "vocab_size 128256, tie_word_embeddings false";
  m.layers = 80, m.hidden = 8192, m.intermediate = 28672, m.heads = 64, m.kv_heads = 8;
  m.head_dim = 128, m.vocab = 128256;
  models.push_back(m);

  m = {};
  m.name = "mixtral-8x7b";
  m.source = "mistralai/Mixtral-8x7B-v0.1 config.json: num_hidden_layers 32, hidden_size 4096, "
             "intermediate_size 14336, num_attention_heads 32, num_key_value_heads 8, "
             "vocab_size 32000, num_local_experts 8, num_experts_per_tok 2";
  m.layers = 32, m.hidden = 4096, m.intermediate = 14336, m.heads = 32, m.kv_heads = 8;
  m.head_dim = 128, m.vocab = 32000;
  m.experts = 8, m.active_experts = 2, m.moe_intermediate = 14336;
  models.push_back(m);

  m = {};
  m.name = "deepseek-v3";
  m.source = "deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61, hidden_size 7168, "
             "intermediate_size 18432, moe_intermediate_size 2048, n_routed_experts 256, "
             "num_experts_per_tok 8, n_shared_experts 1, first_k_dense_replace 3, "
             "num_attention_heads 128, q_lora_rank 1536, kv_lora_rank 512, "
             "qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, vocab_size 129280";
  m.layers = 61, m.hidden = 7168, m.intermediate = 18432, m.heads = 128, m.kv_heads = 128;
  m.head_dim = 128, m.vocab = 129280;
  m.experts = 256, m.active_experts = 8, m.shared_experts = 1, m.moe_intermediate = 2048;
  m.dense_layers = 3;
  m.attention = Attention::mla;
  m.q_lora_rank = 1536, m.kv_lora_rank = 512, m.qk_rope_dim = 64, m.qk_nope_dim = 128;
  m.v_head_dim = 128;
  models.push_back(m);
  return models;
}

int64_t get_size(const nlohmann::json& j, const char* field, const std::string& origin,
                 bool required, int64_t minimum = 1) {
  if (!j.contains(field)) {
    if (required)
      throw InvalidArgument(fmt::format("{}: {}", origin, field), "(missing)",
                            "the model description needs it");
    return 0;
  }
  const auto& v = j.at(field);
  if (!v.is_number_integer())
    throw InvalidArgument(fmt::format("{}: {}", origin, field), v.dump(), "must be an integer");
  const int64_t value = v.get<int64_t>();
  if (value < minimum || value > (int64_t(1) << 31))
    throw InvalidArgument(fmt::format("{}: {}", origin, field), std::to_string(value),
                          fmt::format("must be in {}..2^31", minimum));
  return value;
}

void check_consistency(const ModelDescription& m, const std::string& origin) {
  auto bad = [&](const char* field, int64_t value, const std::string& rule) {
    throw InvalidArgument(fmt::format("{}: {}", origin, field), std::to_string(value), rule);
  };
  if (m.heads % m.kv_heads != 0)
    bad("kv_heads", m.kv_heads, fmt::format("must divide heads = {}", m.heads));
  if (m.experts > 0) {
    if (m.active_experts < 1 || m.active_experts > m.experts)
      bad("active_experts", m.active_experts, fmt::format("must be 1..experts = {}", m.experts));
    if (m.moe_intermediate < 1) bad("moe_intermediate", m.moe_intermediate, "must be >= 1 with experts");
    if (m.dense_layers > m.layers)
      bad("dense_layers", m.dense_layers, fmt::format("must be <= layers = {}", m.layers));
  } else if (m.active_experts != 0 || m.shared_experts != 0) {
    bad("experts", m.experts, "active_experts and shared_experts need routed experts");
  }
  if (m.attention == Attention::mla && (m.kv_lora_rank < 1 || m.qk_nope_dim < 1 ||
                                        m.qk_rope_dim < 1 || m.v_head_dim < 1))
    bad("kv_lora_rank", m.kv_lora_rank,
        "latent attention needs kv_lora_rank, qk_nope_dim, qk_rope_dim and v_head_dim");
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : catalog()) names.push_back(m.name);
  return names;
}

ModelDescription parse_model_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidArgument(origin, "(not JSON)", e.what());
  }
  if (!j.is_object()) throw InvalidArgument(origin, j.dump().substr(0, 40), "must be a JSON object");
  static const char* const kKnown[] = {
      "name", "source", "layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim",
      "vocab", "tied_embeddings", "experts", "active_experts", "shared_experts",
      "moe_intermediate", "dense_layers", "attention", "q_lora_rank", "kv_lora_rank",
      "qk_rope_dim", "qk_nope_dim", "v_head_dim"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown) known |= key == k;
    if (!known)
      throw InvalidArgument(fmt::format("{}: {}", origin, key), value.dump(),
                            "not a field of a model description (a misspelling?)");
  }
  ModelDescription m;
  m.name = j.value("name", origin);
  m.source = j.value("source", std::string("user file ") + origin);
  m.layers = get_size(j, "layers", origin, true);
  m.hidden = get_size(j, "hidden", origin, true);
  m.intermediate = get_size(j, "intermediate", origin, true);
  m.heads = get_size(j, "heads", origin, true);
  m.kv_heads = get_size(j, "kv_heads", origin, true);
  m.head_dim = get_size(j, "head_dim", origin, true);
  m.vocab = get_size(j, "vocab", origin, true);
  m.tied_embeddings = j.value("tied_embeddings", false);
  m.experts = get_size(j, "experts", origin, false);
  m.active_experts = get_size(j, "active_experts", origin, false);
  m.shared_experts = get_size(j, "shared_experts", origin, false, 0);
  m.moe_intermediate = get_size(j, "moe_intermediate", origin, false);
  m.dense_layers = get_size(j, "dense_layers", origin, false, 0);
  const std::string attention = j.value("attention", std::string("mha"));
  if (attention != "mha" && attention != "mla")
    throw InvalidArgument(fmt::format("{}: attention", origin), attention, "mha or mla");
  m.attention = attention == "mla" ? Attention::mla : Attention::mha;
  m.q_lora_rank = get_size(j, "q_lora_rank", origin, false, 0);
  m.kv_lora_rank = get_size(j, "kv_lora_rank", origin, false);
  m.qk_rope_dim = get_size(j, "qk_rope_dim", origin, false);
  m.qk_nope_dim = get_size(j, "qk_nope_dim", origin, false);
  m.v_head_dim = get_size(j, "v_head_dim", origin, false);
  check_consistency(m, origin);
  return m;
}

ModelDescription load_model(const std::string& name_or_file) {
  for (const auto& m : catalog())
    if (m.name == name_or_file) return m;
  std::string names;
  for (const auto& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  // A folder opens as a stream and reads as empty text, which said "not JSON".
  std::error_code error;
  if (std::filesystem::is_directory(name_or_file, error))
    throw InvalidArgument("--model", name_or_file,
                          fmt::format("is a directory: give a model file (docs/advise-models.md) "
                                      "or a shipped model ({})",
                                      names));
  std::ifstream in(name_or_file);
  if (!in)
    throw InvalidArgument("--model", name_or_file,
                          fmt::format("neither a shipped model ({}) nor a readable file: {}",
                                      names, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  return parse_model_json(text.str(), name_or_file);
}

int64_t bf16_parameter_count(const ModelDescription& m) {
  // Embeddings (and an untied LM head), and the RMSNorm weights: two per layer, the latent
  // attention's two on its compressed ranks, and the final one.
  const int64_t norms = m.layers * (2 * m.hidden + (m.attention == Attention::mla
                                                        ? m.q_lora_rank + m.kv_lora_rank
                                                        : 0)) +
                        m.hidden;
  return m.vocab * m.hidden * (m.tied_embeddings ? 1 : 2) + norms;
}

int64_t parameter_count(const ModelDescription& m) {
  const int64_t embeddings = bf16_parameter_count(m);
  int64_t attention;
  if (m.attention == Attention::mla) {
    const int64_t q_in = m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden;
    attention = (m.q_lora_rank > 0 ? m.hidden * m.q_lora_rank : 0) +
                q_in * m.heads * (m.qk_nope_dim + m.qk_rope_dim) +
                m.hidden * (m.kv_lora_rank + m.qk_rope_dim) +
                m.kv_lora_rank * m.heads * (m.qk_nope_dim + m.v_head_dim) +
                m.heads * m.v_head_dim * m.hidden;
  } else {
    attention = m.hidden * (m.heads + 2 * m.kv_heads) * m.head_dim + m.heads * m.head_dim * m.hidden;
  }
  const int64_t dense_mlp = 3 * m.hidden * m.intermediate;
  const int64_t moe_mlp = m.experts > 0 ? (m.experts + m.shared_experts) * 3 * m.hidden *
                                              m.moe_intermediate + m.hidden * m.experts
                                        : 0;
  const int64_t dense_layers = m.experts > 0 ? m.dense_layers : m.layers;
  return embeddings + m.layers * attention + dense_layers * dense_mlp +
         (m.layers - dense_layers) * moe_mlp;
}

}  // namespace autogemm::advise
