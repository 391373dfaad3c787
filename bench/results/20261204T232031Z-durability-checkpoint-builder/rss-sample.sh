cd /work/main
B=build/bench-release/bin
for mode in thread process; do
  $B/kv-indexer-durability-bench --server=$B/kv-indexer-server --data_root=build/bench-release --phases=checkpoint --checkpoint_builder=$mode --query_qps=500 --idle_s=2 --checkpoint_rounds=2 --label=rss-$mode --json_out=bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode.json --server_log=bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode-server.log > bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode-table.txt 2> bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode-progress.txt &
  BP=$!
  : > bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode.txt
  while kill -0 $BP 2>/dev/null; do
    for p in $(pgrep -f "kv-indexer-server$|kvindexer-build-checkpoint"); do
      echo "$(date +%s) $p $(tr -d '\0' < /proc/$p/cmdline 2>/dev/null | cut -c1-60) $(grep VmRSS /proc/$p/status 2>/dev/null)" >> bench/results/20261204T232031Z-durability-checkpoint-builder/rss-$mode.txt
    done
    sleep 1
  done
done
