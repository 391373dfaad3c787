// kv-indexer-server: the single-process, in-memory SGLang KV indexer.
#include <span>

#include "server/server_runner.h"

int main(int argc, char** argv) {
  return kvindexer::RunServer(std::span<const char* const>(
      const_cast<const char* const*>(argv), static_cast<size_t>(argc)));
}
