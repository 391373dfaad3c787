#include "replica/snapshot_writer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/record_framing.h"
#include "replica/commit_payload.h"
#include "replica/snapshot_image.h"
#include "replica/snapshot_reader.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {
namespace {

using ::kvindexer::fleet::v1::SnapshotManifest;

absl::Status Cancelled() {
  return absl::CancelledError("snapshot round abandoned: stopping");
}

// Unique per round: the position, the writer, and a counter of this process.
std::string SnapshotId(uint64_t position, std::string_view writer) {
  static std::atomic<uint64_t> counter{0};
  std::string id = absl::StrCat("p", position, "-");
  for (char c : writer) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    id.push_back(ok ? c : '_');
  }
  absl::StrAppend(&id, "-", counter.fetch_add(1) + 1, "-",
                  std::chrono::steady_clock::now().time_since_epoch().count());
  return id;
}

// Applies `record` to `image` as every replica does, fetching the
// placements of a staged commit in the payload form first and noting its
// payload in `payload_ids`. A payload that does not match its record
// (DATA_LOSS) is passed over, as replicas pass over such a record. True
// when a record was applied or passed; the store's errors when the payload
// cannot be fetched.
absl::StatusOr<bool> TakeIn(SnapshotImage& image, fleet::SnapshotStore& store,
                            const fleet::LoggedRecord& record,
                            std::set<std::string>* payload_ids) {
  if (record.position <= image.position()) return false;
  ::kvindexer::fleet::v1::LogRecord decoded;
  if (!decoded.ParseFromString(record.payload)) {
    return image.Apply(record).has_value();
  }
  if (IsPayloadCommit(decoded)) {
    payload_ids->insert(decoded.payload_id());
    absl::StatusOr<::kvindexer::fleet::v1::LogRecord> fetched =
        FetchCommitPayload(store, decoded);
    if (absl::IsDataLoss(fetched.status())) {
      spdlog::warn(
          "fleet event log record {} names a payload that does not match "
          "it; passed over, as every replica does: {}",
          record.position, fetched.status().ToString());
      image.Pass(record.position);
      return true;
    }
    if (!fetched.ok()) return fetched.status();
    decoded = *std::move(fetched);
  }
  return image.ApplyDecoded(record.position, record.worker_id, decoded)
      .has_value();
}

// Removes the payloads no record after `all[threshold]` names, among those
// stored before it was committed, once the log is trimmed past it: the
// records that named them are gone, and a replica still reading there
// reloads a snapshot instead. A payload named after it is listed by a newer
// snapshot (SnapshotManifest.payload_ids) or by a record after the newest.
// Answers how many were removed.
absl::StatusOr<size_t> RemoveUnneededPayloads(
    fleet::EventLog& log, fleet::SnapshotStore& store,
    const std::vector<SnapshotManifest>& all, size_t threshold,
    const SnapshotRoundOptions& options) {
  const SnapshotManifest& before = all[threshold];
  absl::StatusOr<fleet::LogBounds> bounds = log.Bounds();
  if (!bounds.ok()) return bounds.status();
  if (bounds->first <= before.position()) return 0;
  absl::StatusOr<std::vector<std::string>> candidates =
      store.PayloadsStoredBefore(before);
  if (!candidates.ok()) return candidates.status();
  if (candidates->empty()) return 0;
  std::set<std::string, std::less<>> named;
  for (size_t i = threshold + 1; i < all.size(); ++i) {
    if (all[i].position() <= before.position()) continue;
    named.insert(all[i].payload_ids().begin(), all[i].payload_ids().end());
  }
  // Read to the log's end as it is now, after the listing: a record
  // appended before it names its payload here.
  uint64_t next = std::max(all.back().position() + 1, bounds->first);
  while (true) {
    absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
        log.Read(next, std::max<size_t>(options.read_batch, 1),
                 std::chrono::milliseconds(0));
    if (!records.ok()) return records.status();
    if (records->empty()) break;
    for (const fleet::LoggedRecord& record : *records) {
      ::kvindexer::fleet::v1::LogRecord decoded;
      if (decoded.ParseFromString(record.payload) && IsPayloadCommit(decoded)) {
        named.insert(decoded.payload_id());
      }
      next = record.position + 1;
    }
  }
  size_t removed = 0;
  for (const std::string& id : *candidates) {
    if (named.count(id) != 0) continue;
    if (absl::Status s = store.DeletePayload(id); !s.ok()) return s;
    spdlog::info(
        "removed payload {}: stored before snapshot {} at position {} and "
        "named by no record after it",
        id, before.id(), before.position());
    ++removed;
  }
  return removed;
}

// Keeps the newest `keep` snapshots, trims the log up to the oldest of
// them, removes the payloads no kept record needs (RemoveUnneededPayloads),
// and removes parts abandoned before the oldest kept snapshot.
absl::Status Retain(fleet::EventLog& log, fleet::SnapshotStore& store,
                    const SnapshotRoundOptions& options, SnapshotRound& round) {
  absl::StatusOr<std::vector<SnapshotManifest>> all = store.List();
  if (!all.ok()) return all.status();
  const size_t keep = std::max<uint32_t>(options.keep, 1);
  const size_t drop = all->size() > keep ? all->size() - keep : 0;
  // Trimming waits until `keep` snapshots exist: the log then always
  // reaches back one interval behind the newest snapshot.
  if (options.trim_log && all->size() - drop >= keep) {
    // A replica that starts now loads the newest snapshot; one that is
    // still reading behind it finds the log intact back to the oldest.
    const uint64_t oldest_kept = (*all)[drop].position();
    if (absl::Status s = log.TrimBefore(oldest_kept + 1); !s.ok()) return s;
  }
  // Measured against the oldest kept snapshot, or with one kept against the
  // one before it, which is still listed here: a payload stored before it
  // and named by no record after it is then at least one round old.
  if (all->size() >= 2) {
    absl::StatusOr<size_t> removed = RemoveUnneededPayloads(
        log, store, *all, std::min(drop, all->size() - 2), options);
    if (removed.ok()) {
      round.payloads_removed = *removed;
    } else {
      spdlog::warn("cannot remove unneeded payloads: {}",
                   removed.status().ToString());
    }
  }
  for (size_t i = 0; i < drop; ++i) {
    if (absl::Status s = store.Delete((*all)[i]); !s.ok()) return s;
    ++round.snapshots_deleted;
  }
  // Parts that writers which died half way left behind, once a snapshot
  // kept was committed after them. Not worth failing the round over.
  if (all->size() > drop) {
    absl::StatusOr<size_t> removed = store.RemoveAbandoned((*all)[drop]);
    if (removed.ok()) {
      round.abandoned_removed = *removed;
    } else {
      spdlog::warn("cannot remove abandoned snapshot parts: {}",
                   removed.status().ToString());
    }
  }
  absl::StatusOr<fleet::LogBounds> bounds = log.Bounds();
  if (!bounds.ok()) return bounds.status();
  round.trimmed_before = bounds->first;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SnapshotRound> WriteSnapshotRound(
    fleet::EventLog& log, fleet::SnapshotStore& store,
    const SnapshotRoundOptions& options, const std::atomic<bool>& stop) {
  SnapshotRound round;
  absl::StatusOr<std::vector<SnapshotManifest>> all = store.List();
  if (!all.ok()) return all.status();
  if (!all->empty()) round.manifest = all->back();

  absl::StatusOr<fleet::LogBounds> bounds = log.Bounds();
  if (!bounds.ok()) return bounds.status();
  const uint64_t end = bounds->last;
  if (end <= (all->empty() ? 0 : all->back().position())) {
    if (absl::Status s = Retain(log, store, options, round); !s.ok()) return s;
    return round;
  }

  // The base: the newest snapshot that loads whole. One that does not add
  // up (DATA_LOSS) is damaged for good, for every replica too: it is
  // deleted, so that nobody tries it again, and the one before it is tried.
  auto image = std::make_unique<SnapshotImage>(options.limits);
  uint64_t base = 0;
  for (auto it = all->rbegin(); it != all->rend(); ++it) {
    absl::Status loaded = ReadSnapshotChunks(
        store, *it, [&](const state::v1::CheckpointChunk& chunk) {
          if (stop.load(std::memory_order_relaxed)) return Cancelled();
          return image->LoadChunk(chunk);
        });
    if (loaded.ok()) {
      base = it->position();
      image->SetPosition(base);
      break;
    }
    if (!absl::IsDataLoss(loaded)) return loaded;
    spdlog::warn(
        "fleet snapshot \"{}\" at position {} is damaged and is deleted; "
        "building on the one before it: {}",
        it->id(), it->position(), loaded.ToString());
    if (absl::Status s = store.Delete(*it); !s.ok()) return s;
    ++round.snapshots_deleted;
    image = std::make_unique<SnapshotImage>(options.limits);
  }
  if (bounds->first > base + 1) {
    return absl::DataLossError(absl::StrCat(
        "the log starts at position ", bounds->first,
        " but the newest snapshot that loads ends at ", base,
        ": records in between were trimmed and no snapshot holds them"));
  }

  uint64_t next = base + 1;
  std::set<std::string> payload_ids;
  while (next <= end) {
    if (stop.load(std::memory_order_relaxed)) return Cancelled();
    absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
        log.Read(next, std::max<size_t>(options.read_batch, 1),
                 std::chrono::milliseconds(0));
    if (!records.ok()) return records.status();
    if (records->empty()) {
      return absl::UnavailableError(
          absl::StrCat("the log answered no records at position ", next,
                       " below its end ", end));
    }
    if (records->front().position > next) {
      return absl::DataLossError(
          absl::StrCat("the log was trimmed past position ", next,
                       " while a snapshot was being built on it"));
    }
    for (const fleet::LoggedRecord& record : *records) {
      if (record.position > end) break;
      absl::StatusOr<bool> taken = TakeIn(*image, store, record, &payload_ids);
      if (!taken.ok()) return taken.status();
      if (*taken) ++round.records_applied;
      next = record.position + 1;
    }
  }

  SnapshotManifest manifest;
  manifest.set_id(SnapshotId(end, options.writer));
  manifest.set_position(end);
  manifest.set_writer(options.writer);
  manifest.set_created_unix_ms(options.now_unix_ms);
  manifest.set_format_version(durable::kFormatVersion);
  for (const std::string& id : payload_ids) manifest.add_payload_ids(id);
  absl::StatusOr<std::unique_ptr<fleet::SnapshotStore::Writer>> writer =
      store.Begin(manifest.id());
  if (!writer.ok()) return writer.status();
  uint64_t parts = 0, chunks = 0, bytes = 0;
  absl::Status exported = image->Export(
      store.max_part_bytes(),
      [&](std::string_view part, uint64_t part_chunks) -> absl::Status {
        if (stop.load(std::memory_order_relaxed)) return Cancelled();
        ++parts;
        chunks += part_chunks;
        bytes += part.size();
        return (*writer)->AddPart(part);
      });
  if (!exported.ok()) return exported;
  manifest.set_parts(parts);
  manifest.set_chunks(chunks);
  manifest.set_bytes(bytes);
  if (absl::Status s = (*writer)->Commit(manifest); !s.ok()) return s;
  round.written = true;
  round.manifest = manifest;
  if (absl::Status s = Retain(log, store, options, round); !s.ok()) return s;
  return round;
}

}  // namespace kvindexer::replica
