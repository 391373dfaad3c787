#include "ctl/tests/sample_responses.h"

namespace kvindexer::ctl::testing {

namespace admin_v1 = ::kvindexer::admin::v1;

admin_v1::GetStatsResponse SampleStats() {
  admin_v1::GetStatsResponse s;
  s.set_server_version("0.1.0");
  s.set_uptime_ms(3'723'000);
  s.set_health("SERVING");
  auto* b = s.mutable_backend();
  b->set_name("robin");
  b->set_version("1.2.0");
  b->set_path("/usr/lib/kvindexer/backends/libkvindexer_robin.so");
  b->set_abi_major(1);
  b->set_abi_minor(2);
  b->set_blocks(120);
  b->set_placements(300);
  b->set_workers(2);
  b->set_hit_counters(7);
  b->set_memory_bytes(3 * 1024 * 1024);
  b->set_healthy(true);
  s.set_workers_total(2);
  s.set_workers_ready(1);
  s.set_workers_sequenced(1);
  s.set_workers_heartbeating(1);
  s.set_prefix_query_max_inflight(32);
  s.set_prefix_queries_inflight(3);
  auto* d = s.mutable_durability();
  d->set_enabled(true);
  d->set_data_dir("/var/lib/kvi");
  d->set_wal_sync("batch");
  d->set_checkpoint_generation(4);
  d->set_log_bytes(2048);
  d->set_checkpoints_written(3);
  d->set_replay_max_bytes(4096);
  d->set_replay_tail_bytes(1024);
  d->set_write_stalls(5);
  d->set_write_stalled(true);
  return s;
}

admin_v1::ListWorkersResponse SampleWorkers() {
  admin_v1::ListWorkersResponse r;
  admin_v1::WorkerInfo* a = r.add_workers();
  a->set_worker_id("w-a");
  a->set_worker_address("10.0.0.1:30001");
  a->set_placement_counts_known(true);
  auto* hbm = a->add_placements();
  hbm->set_tier(kv_indexer::v1::TIER_HBM);
  hbm->set_placements(100);
  auto* dram = a->add_placements();
  dram->set_tier(kv_indexer::v1::TIER_DRAM);
  dram->set_placements(20);
  a->set_sequence_state(admin_v1::SEQUENCE_STATE_SEQUENCED);
  a->set_ready(true);
  a->set_worker_epoch("e1");
  a->set_applied_seq(42);
  a->set_last_apply_age_ms(1500);
  a->set_heartbeat_marked(true);
  a->set_heartbeat_ttl_ms(10'000);
  a->set_last_heartbeat_age_ms(2000);
  a->set_heartbeat_deadline_in_ms(8000);
  a->set_fidelity(admin_v1::FIDELITY_EXACT);

  admin_v1::WorkerInfo* b = r.add_workers();
  b->set_worker_id("w-b");
  b->set_placement_counts_known(false);
  b->set_sequence_state(admin_v1::SEQUENCE_STATE_INVALID);
  b->set_ready(false);
  b->set_configured(true);
  b->set_fidelity(admin_v1::FIDELITY_DEGRADED);
  b->set_fidelity_reason("replay gap");
  return r;
}

admin_v1::ExplainPrefixResponse SampleExplain() {
  admin_v1::ExplainPrefixResponse r;
  auto* answer = r.mutable_answer();
  auto* m = answer->add_matches();
  m->set_worker_id("w-a");
  m->set_worker_address("10.0.0.1:30001");
  m->set_matched_prefix_blocks(2);
  answer->set_best_prefix_blocks(2);
  answer->set_blocks_read(3);

  auto* a = r.add_workers();
  a->set_worker_id("w-a");
  a->set_worker_address("10.0.0.1:30001");
  a->set_matched_prefix_blocks(2);
  a->set_rule("legacy");
  a->set_stop_reason(admin_v1::STOP_REASON_BLOCK_MISSING);
  a->set_stop_block(2);
  a->set_detail("block 2 has no placement of this worker");
  a->set_last_apply_age_ms(1500);
  a->set_fidelity(admin_v1::FIDELITY_EXACT);
  a->set_sequence_state(admin_v1::SEQUENCE_STATE_SEQUENCED);

  auto* b = r.add_workers();
  b->set_worker_id("w-b");
  b->set_matched_prefix_blocks(3);
  b->set_excluded(true);
  b->set_excluded_reason("empty address");
  b->set_rule("component_aware");
  b->set_stop_reason(admin_v1::STOP_REASON_WINDOW_END);
  b->set_fidelity(admin_v1::FIDELITY_DEGRADED);
  b->set_sequence_state(admin_v1::SEQUENCE_STATE_UNSEQUENCED);
  return r;
}

}  // namespace kvindexer::ctl::testing
