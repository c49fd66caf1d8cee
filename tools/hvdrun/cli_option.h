// An option that fills a std::optional when given, shared by the parts of hvdrun's
// command line (cli.cpp, cli_scaling.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace hvdrun {

template <typename T>
void add_optional(CLI::App& app, const std::string& name, std::optional<T>& field,
                  const std::string& desc, const std::string& type_name) {
  app.add_option_function<T>(
         name, [&field](const T& v) { field = v; }, desc)
      ->type_name(type_name);
}

}  // namespace hvdrun
