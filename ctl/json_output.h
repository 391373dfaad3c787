// --json output (docs/cli.md, "JSON output"): protobuf's canonical JSON
// mapping with the .proto field names, every field printed even when it
// holds its default, one document per line.
#ifndef KVINDEXER_CTL_JSON_OUTPUT_H_
#define KVINDEXER_CTL_JSON_OUTPUT_H_

#include <google/protobuf/message.h>

#include <string>

namespace kvindexer::ctl {

// One line of JSON without the newline. 64-bit integers are strings, as the
// mapping prescribes.
std::string MessageJson(const google::protobuf::Message& message);

// A JSON string literal.
std::string JsonString(const std::string& text);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_JSON_OUTPUT_H_
