// Aligned plain-text tables for the CLI's human output: columns separated by
// two spaces, padded to the widest cell, the last column never padded (so
// long details do not drag trailing blanks).
#ifndef KVINDEXER_CTL_TEXT_TABLE_H_
#define KVINDEXER_CTL_TEXT_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace kvindexer::ctl {

class TextTable {
 public:
  // An empty header prints no header line (key/value listings).
  explicit TextTable(std::vector<std::string> header);

  // Numbers read better right-aligned.
  void AlignRight(size_t column);
  // Rows shorter than the header are padded with empty cells.
  void AddRow(std::vector<std::string> row);

  size_t rows() const { return rows_.size(); }
  // Every line ends in '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_TEXT_TABLE_H_
