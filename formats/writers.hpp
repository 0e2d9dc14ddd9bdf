// Writing files hetplan produces: plan files and chip profiles in the formats their loaders
// read, and an atomic write (temporary file in the same folder, then rename) so that an
// interrupted write leaves the old file whole.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/chip.hpp"
#include "core/cluster.hpp"
#include "core/plan.hpp"

namespace hetplan::formats {

// The plan as a hetplan/plan/v1 document that load_plan reads back unchanged.
std::string plan_yaml(const Plan& plan, const std::string& comment = {});

// The chip profile as a hetplan/chip/v1 document (docs/formats/chip.md) that parse_chip reads
// back to an equal profile (every field, `sources` and `cited_by`; not `location`). Each line of
// `comment` becomes a `# ` line at the top. Keys follow the order of the bundled profiles.
//
// Numbers: each quantity is written in the unit (of those the loader accepts) that gives the
// fewest significant digits among the spellings that parse back to the same double bit for bit
// (e.g. "80 GiB", "312 TFLOPS", "200 Gbps"); the base unit (B, B/s, FLOPS, W, s) is the exact
// fallback. Plain numbers use the shortest round-trip decimal. Unknown values are `unknown`.
//
// Sources: the loader names a number's cited_by path after the form it was written in, so the
// form follows the path: `cited_by["<p>.value"] = s` writes `{value: ..., source: s}`;
// `cited_by["<p>"] = s` writes the plain value and puts `source: s` on the nearest mapping that
// can carry it (only where it differs from the source inherited from outside). Numbers written
// plain in one mapping must therefore cite the same source, and an operator class entry shares
// its source (cited_by["operators.classes.<c>"]) with a plain `slowdown`.
//
// Throws std::invalid_argument when no such document exists: a known number with no cited_by
// entry (or with both forms), plain numbers of one mapping citing different sources, a cited_by
// entry for nothing the profile states, a source id missing from `sources`, or a value the
// loader would reject (negative, not finite, out of range, a group_size or slowdown other than 1
// with no source).
std::string chip_yaml(const ChipProfile& chip, const std::string& comment = {});

// Writes `text` to `path` atomically. Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& text);

// One file of a set written together: a plain name (no '/') and its text.
struct NamedText {
  std::string name;
  std::string text;
};

// Writes `files` into `folder` so that a reader sees the folder either as it was or with every
// file of the set, never with part of it: the set is written into a new folder beside it, which
// then takes the folder's place in one rename (an exchange with renameat2 when the folder
// exists; its other files are kept, linked into the new one, and the old folder is removed).
// Where that cannot be done (the folder is a symbolic link or a mount point, holds subfolders,
// or its file system has no exchange), each file is written atomically on its own. Creates the
// folder's parents. `superseded`, when given, names earlier files of the folder that the set
// replaces although it has no file of their name (an earlier run's outputs); they are not kept.
// Returns the paths written, in order. Throws std::runtime_error naming the path on failure;
// std::invalid_argument for a name that is not plain.
std::vector<std::string> write_folder_atomically(
    const std::string& folder, const std::vector<NamedText>& files,
    const std::function<bool(const std::string& name)>& superseded = {});

// The text of a cluster file with each island's `nodes` and `free_nodes` changed to those of
// `edited` (islands matched by name), and nothing else: comments, order and spelling stay
// (set_yaml_value, formats/yaml_edit.hpp). `loaded` is the cluster as load_cluster read `text`. A
// `free_nodes` the file does not state is added to the island's mapping when it differs from
// `nodes`. Throws std::invalid_argument when an island of `edited` is not in `loaded` or the text
// has no such island (it is not the file `loaded` was read from).
std::string edit_island_counts(const std::string& text, const Cluster& loaded, const Cluster& edited);

}  // namespace hetplan::formats
