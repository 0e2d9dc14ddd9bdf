// A step's timeline as Chrome trace JSON (the Trace Event Format that Perfetto and
// chrome://tracing open): one process per pipeline stage, one track per rank (the tp ranks of a
// stage replica share its events), and one track per stage for its gradient synchronisation.
#pragma once

#include <ostream>

#include "sim/twin/engine.hpp"

namespace hetplan::sim::twin {

// Writes the trace. Events must be sorted by stage, replica and start (simulate_step does).
void write_chrome_trace(std::ostream& out, const TwinInput& input, const Timeline& timeline);

}  // namespace hetplan::sim::twin
