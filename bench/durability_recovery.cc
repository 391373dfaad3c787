#include "durability_recovery.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {

absl::StatusOr<RestartFigures> MeasureRestart(
    std::unique_ptr<DurabilityRig>* rig, const RigOptions& rig_options,
    const std::string& data_dir, bool kill, const HeadlineCheck& headline) {
  RestartFigures figures;
  figures.how = kill ? "sigkill" : "sigterm";
  if (kill) {
    (*rig)->process().Kill();
  } else if (absl::Status s = (*rig)->Stop(); !s.ok()) {
    return s;
  }
  rig->reset();
  figures.dir = MeasureDir(data_dir);

  absl::StatusOr<std::unique_ptr<DurabilityRig>> restarted =
      DurabilityRig::Start(rig_options, DurabilityMode::kAlways, data_dir);
  if (!restarted.ok()) return restarted.status();
  *rig = *std::move(restarted);
  figures.seconds_to_listen = (*rig)->seconds_to_listen();
  if (!(*rig)->recovered().has_value()) {
    return absl::InternalError(
        absl::StrCat("the restarted server printed no recovery line:\n",
                     (*rig)->process().Output()));
  }
  figures.recovered = *(*rig)->recovered();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::MatchExternalKvPrefixResponse resp;
  const grpc::Status status = (*rig)->pool()->Next()->MatchExternalKvPrefix(
      &ctx, headline.query, &resp);
  if (status.ok()) {
    uint32_t full = 0;
    for (const auto& match : resp.matches()) {
      if (match.matched_prefix_blocks() == headline.prefix_blocks) ++full;
    }
    figures.headline_ok = full == headline.workers &&
                          resp.best_prefix_blocks() == headline.prefix_blocks;
  }
  return figures;
}

}  // namespace kvindexer::bench
