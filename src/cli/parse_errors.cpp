// CLI11's parse errors rewritten into autogemm's form (parse_errors.hpp).
#include "cli/parse_errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <regex>
#include <vector>

namespace autogemm::cli {

namespace {

// The option `name` of the command being parsed (the one CLI11 saw), else of the top level.
const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
  for (const CLI::App* command : app.get_subcommands())
    if (const CLI::Option* option = command->get_option_no_throw(name)) return option;
  return app.get_option_no_throw(name);
}

// What the user gave for the option: its values joined by commas, "" for an empty one.
std::string value_text(const CLI::Option* option) {
  if (option == nullptr || option->results().empty()) return "(not given)";
  const std::string joined = fmt::format("{}", fmt::join(option->results(), ","));
  return joined.empty() ? "\"\"" : joined;
}

std::string command_name(const CLI::App& app) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  return parsed.empty() ? app.get_name() : app.get_name() + " " + parsed.back()->get_name();
}

// The arguments a command did not take, in the order given (CLI11's message lists them
// backwards); `listed` when the command kept none.
std::string extras_text(const CLI::App& app, const std::string& listed) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  const std::vector<std::string> extras = parsed.empty() ? app.remaining() : parsed.back()->remaining();
  return extras.empty() ? listed : fmt::format("{}", fmt::join(extras, " "));
}

// CLI11's own validators' messages as rules; ours are rules already.
std::string rule_of(const std::string& message) {
  std::smatch m;
  if (std::regex_match(message, m, std::regex(R"(Value (.*) not in range (.*) to (.*))")))
    return fmt::format("must be in {}..{}", m[2].str(), m[3].str());
  if (std::regex_match(message, m, std::regex(R"((.*) not in \{(.*)\})")))
    return fmt::format("expected one of {}", m[2].str());
  return message;
}

// What a value of the option's type is, for a value CLI11 could not convert.
std::string type_rule(const CLI::Option* option) {
  const std::string type = option == nullptr ? "" : option->get_type_name();
  if (type == "UINT") return "must be a non-negative integer";
  if (type == "INT") return "must be an integer in the option's range";
  if (type == "FLOAT") return "must be a number";
  return "not a value this option takes";
}

// By type: get_name() is not always the type's name (an ExtrasError of a subcommand carries
// the subcommand's).
template <typename Kind>
bool is(const CLI::ParseError& error) {
  return dynamic_cast<const Kind*>(&error) != nullptr;
}

}  // namespace

std::string parse_error_text(const CLI::App& app, const CLI::ParseError& error) {
  const std::string what = error.what();
  std::smatch m;
  if (is<CLI::ValidationError>(error) &&
      std::regex_match(what, m, std::regex(R"(([^:]+): (.*))")))
    return fmt::format("{} = {}: {}", m[1].str(), value_text(find_option(app, m[1].str())),
                       rule_of(m[2].str()));
  if (is<CLI::ConversionError>(error) &&
      std::regex_match(what, m, std::regex(R"(Could not convert: (\S+) = (.*))")))
    return fmt::format("{} = {}: {}", m[1].str(), m[2].str(),
                       type_rule(find_option(app, m[1].str())));
  if (is<CLI::RequiredError>(error) &&
      std::regex_match(what, m, std::regex(R"((-\S+) is required)")))
    return fmt::format("{} = (not given): is required", m[1].str());
  if (is<CLI::ArgumentMismatch>(error) &&
      std::regex_match(what, m, std::regex(R"((\S+): \d+ required \S+ missing)")))
    return fmt::format("{} = (no value): needs a value", m[1].str());
  if (is<CLI::RequiresError>(error) &&
      std::regex_match(what, m, std::regex(R"((\S+) requires (\S+))")))
    return fmt::format("{} = {}: goes with {}", m[1].str(),
                       value_text(find_option(app, m[1].str())), m[2].str());
  if (is<CLI::ExcludesError>(error) &&
      std::regex_match(what, m, std::regex(R"((\S+) excludes (\S+))")))
    return fmt::format("{} = {}: is not taken with {}", m[1].str(),
                       value_text(find_option(app, m[1].str())), m[2].str());
  if (is<CLI::ExtrasError>(error) &&
      std::regex_match(what, m,
                       std::regex(R"(The following arguments? (?:was|were) not expected: (.*))")))
    return fmt::format("argument = {}: not taken by `{}` (`{} --help` lists what it takes)",
                       extras_text(app, m[1].str()), command_name(app), command_name(app));
  return what;
}

std::string unknown_command_text(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands({})) names.push_back(command->get_name());
  const std::string rule = fmt::format("the commands are {} (`{} --help` says what each does)",
                                       fmt::join(names, ", "), app.get_name());
  if (argc < 2) return fmt::format("command = (none): give one; {}", rule);
  const std::string word = argv[1];
  if (word.rfind('-', 0) == 0) return "";
  for (const std::string& name : names)
    if (name == word) return "";
  return fmt::format("command = {}: not an autogemm command; {}", word, rule);
}

}  // namespace autogemm::cli
