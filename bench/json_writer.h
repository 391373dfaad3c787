// JsonWriter: a minimal streaming JSON writer for benchmark reports.
//
// Thread safety: none.
#ifndef KVINDEXER_BENCH_JSON_WRITER_H_
#define KVINDEXER_BENCH_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvindexer::bench {

class JsonWriter {
 public:
  // An empty key is for array elements and the root.
  void BeginObject(std::string_view key = {});
  void EndObject();
  void BeginArray(std::string_view key = {});
  void EndArray();
  void Field(std::string_view key, std::string_view value);
  void Field(std::string_view key, const char* value) {
    Field(key, std::string_view(value));
  }
  void Field(std::string_view key, double value);
  void Field(std::string_view key, uint64_t value);
  void Field(std::string_view key, int64_t value);
  void Field(std::string_view key, bool value);

  const std::string& str() const { return out_; }

 private:
  void Key(std::string_view key);
  void Quoted(std::string_view s);

  std::string out_;
  std::vector<bool> first_{true};
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_JSON_WRITER_H_
