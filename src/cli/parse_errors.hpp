#pragma once
// The command-line parser's (CLI11's) errors in autogemm's form, "<argument> = <value>: <rule>"
// ("--k = (not given): is required", "--candidates = 1: must be in 2..64"), so a bad command line
// reads like every other user error. main.cpp prints them.
#include <CLI/CLI.hpp>
#include <string>

namespace autogemm::cli {

// `error`, thrown by app.parse(), as that sentence (without "autogemm: error: ").
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& error);

// Empty when `word` (the first argument) names a command of `app` or is an option; else the
// error for it: "command = <word>: not an autogemm command; the commands are ...". No argument
// at all: "command = (none): ...". CLI11 said "A subcommand is required" for both.
std::string unknown_command_text(const CLI::App& app, int argc, const char* const* argv);

}  // namespace autogemm::cli
