// `settee time-seq simulate --start <YYYY-MM-DDTHH:MM:SSZ> --step <seconds> --count <N>`: shows how
// time-seq bins roll up under a regular write schedule (update k at start + k*step with seq k), as
// the histogram GET /db/_time_seq would show, one line per bin: "   <time> -> <count>".
#pragma once

namespace settee {

// argv[0] is the word after "time-seq". Returns the process exit code (2: bad usage).
int run_time_seq_tool(int argc, char** argv);

}  // namespace settee
