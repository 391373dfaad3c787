// ParseTopicLabels over the topic shapes of released and snapshot-capable
// SGLang builds.
#include "bridge/topic_labels.h"

#include <string>

#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using namespace std::string_literals;

TEST(TopicLabels, PlainTopicHasNoLabels) {
  for (const std::string& topic : {""s, "kv-events"s, "sgl-kv-epoch=x"s}) {
    const TopicLabels labels = ParseTopicLabels(topic);
    EXPECT_TRUE(labels.epoch.empty()) << topic;
    EXPECT_TRUE(labels.barrier_id.empty()) << topic;
  }
}

TEST(TopicLabels, EpochOnly) {
  const std::string topic = "kv\0sgl-kv-epoch=0123abcd"s;
  const TopicLabels labels = ParseTopicLabels(topic);
  EXPECT_EQ(labels.epoch, "0123abcd");
  EXPECT_TRUE(labels.barrier_id.empty());
}

TEST(TopicLabels, EpochAndBarrier) {
  const std::string topic = "kv\0sgl-kv-epoch=e1\0sgl-kv-snapshot=b1"s;
  const TopicLabels labels = ParseTopicLabels(topic);
  EXPECT_EQ(labels.epoch, "e1");
  EXPECT_EQ(labels.barrier_id, "b1");
}

TEST(TopicLabels, EmptyConfiguredTopic) {
  const std::string topic = "\0sgl-kv-epoch=e2\0sgl-kv-snapshot=b-2"s;
  const TopicLabels labels = ParseTopicLabels(topic);
  EXPECT_EQ(labels.epoch, "e2");
  EXPECT_EQ(labels.barrier_id, "b-2");
}

TEST(TopicLabels, UnknownAndBrokenLabelsAreIgnored) {
  const std::string topic =
      "kv\0other=1\0noequals\0sgl-kv-epoch=e3\0\0sgl-kv-epochs=x"s;
  const TopicLabels labels = ParseTopicLabels(topic);
  EXPECT_EQ(labels.epoch, "e3");
  EXPECT_TRUE(labels.barrier_id.empty());
}

TEST(TopicLabels, EmptyEpochValueStaysEmpty) {
  const std::string topic = "kv\0sgl-kv-epoch="s;
  EXPECT_TRUE(ParseTopicLabels(topic).epoch.empty());
}

}  // namespace
}  // namespace kvindexer::bridge
