#pragma once

#include <string>

namespace hetplan::formats {

// Resolves a path written inside a file relative to that file's folder (absolute stays as is).
std::string resolve_relative(const std::string& written, const std::string& referring_file);

// The folder that holds hetplan's bundled data (profiles/, scenarios/, topologies/, workloads/,
// plans/, validation/published-runs/, validation/microbench/), whatever the working directory:
// $HETPLAN_DATA_DIR when set; else share/hetplan beside the running executable's bin/ folder
// (an installed tree, `cmake --install`); else the source tree the executable was built from.
// Empty when none of them exists.
std::string bundled_data_dir();

// A path inside bundled_data_dir() ("profiles", "scenarios/default.yaml"); the relative path
// itself when there is no bundled data, so that an error names what was looked for.
std::string bundled_path(const std::string& relative);

}  // namespace hetplan::formats
