// The report of kv-indexer-bench: one JSON object per run of a phase, and
// the same figures as rows of the readable table (also echoed to stderr as
// the run goes).
#ifndef KVINDEXER_BENCH_BENCH_REPORT_H_
#define KVINDEXER_BENCH_BENCH_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "json_writer.h"
#include "load_client.h"

namespace kvindexer::bench {

struct Report {
  JsonWriter json;
  std::vector<std::string> table;
  uint64_t failed_rpcs = 0;

  void Row(const std::string& row) {
    table.push_back(row);
    std::fprintf(stderr, "  => %s\n", row.c_str());
  }
};

// Appends an ingest run (JSON and a table row) and counts its failed RPCs.
void WriteIngest(Report& r, const std::string& target, const std::string& key,
                 const IngestResult& x);

// Appends a query run. `process_cpu_s`: CPU seconds the answering process
// used during the run, or a negative value when unknown (a target that was
// not spawned); when known, CPU microseconds per OK answer are reported.
void WriteQuery(Report& r, const std::string& target, const std::string& key,
                const QueryResult& x, double process_cpu_s = -1);

// The median of `v`; 0 when empty.
[[nodiscard]] double Median(std::vector<double> v);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BENCH_REPORT_H_
